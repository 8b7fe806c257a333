package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// The wrk reports under testdata/ were captured from wrk 4.1.0 (Debian)
// against openaitest: a clean run, a body the server rejects, requests that
// time out, and a server that is gone.
func TestParseWrk(t *testing.T) {
	tests := []struct {
		file    string
		want    wrkResult
		wantErr string
	}{
		{file: "wrk-ok.txt", want: wrkResult{Requests: 10891, RPS: 10160.47}},
		{file: "wrk-non2xx.txt", want: wrkResult{Requests: 15788, RPS: 15672.35, Non2xx: 15788}},
		{file: "wrk-timeouts.txt", want: wrkResult{Requests: 8, RPS: 3.99, Timeout: 8}},
		{file: "wrk-refused.txt", wantErr: "Requests/sec"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseWrk(out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseWrk error = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("parseWrk = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseWrkBadNumber(t *testing.T) {
	_, err := parseWrk([]byte("Requests/sec: 12\nNon-2xx or 3xx responses: many\n"))
	if err == nil || !strings.Contains(err.Error(), "Non-2xx") {
		t.Fatalf("parseWrk error = %v, want one naming the Non-2xx line", err)
	}
}

func TestWrkScript(t *testing.T) {
	got, err := wrkScript([]byte(`{"a":"it's \"quoted\"\n"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, `wrk.body = [==[{"a":"it's \"quoted\"\n"}]==]`) || !strings.Contains(got, `wrk.method = "POST"`) {
		t.Errorf("script does not carry the body verbatim:\n%s", got)
	}
	if _, err := wrkScript([]byte(`{"a":"]==]"}`)); err == nil {
		t.Error("a body holding ]==] was accepted")
	}
}

func TestPrintTable(t *testing.T) {
	rows := []row{
		{name: "wrk ceiling", conc: 64, requests: 35000, wall: 5 * time.Second, maxInFlight: 8, clientCPU: 70 * time.Millisecond},
		{name: "hayloft, zero latency", conc: 64, requests: 5000, wall: 2500 * time.Millisecond, samples: 5000, overheadUS: 412.4, maxInFlight: 12, clientCPU: 3500 * time.Millisecond, note: "29% of wrk",
			checks: []check{{">= 5000 samples/s", false}, {"<= 200 µs/req", false}}},
		{name: "NIAH memory", conc: 64, requests: 68, wall: 10 * time.Second, samples: 68, overheadUS: 20000, maxInFlight: 64, clientCPU: 2 * time.Second,
			peakRSS: 250 << 20, processes: 4, checks: []check{{"<= 300 MB peak RSS", true}, {"64 in flight", true}}},
		{name: "wrk ceiling", conc: 64, note: "skipped: wrk not on PATH"},
	}
	var buf bytes.Buffer
	printTable(&buf, rows)
	golden := filepath.Join("testdata", "table.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(want) {
		t.Errorf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// busy is the cores' share the client and the server used together.
func TestBusy(t *testing.T) {
	cores := float64(runtime.NumCPU())
	tests := []struct {
		name string
		r    row
		want float64
	}{
		{"both measured", row{wall: 2 * time.Second, clientCPU: 1500 * time.Millisecond, serverCPU: 500 * time.Millisecond}, 1 / cores},
		{"no server cpu", row{wall: 2 * time.Second, clientCPU: 1500 * time.Millisecond}, 0},
		{"no wall", row{clientCPU: time.Second, serverCPU: time.Second}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.busy(); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("busy = %v, want %v", got, tt.want)
			}
		})
	}
}

func wrkPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("wrk not on PATH (apt-get install wrk)")
	}
	return p
}

func TestCeilingRow(t *testing.T) {
	wrk := wrkPath(t)
	s := settings{wrk: wrk, conc: 8, wrkDuration: time.Second}
	t.Run("ok", func(t *testing.T) {
		srv := openaitest.NewServer(openaitest.Options{})
		defer srv.Close()
		r, err := ceilingRow(context.Background(), s, t.TempDir(), srv)
		if err != nil {
			t.Fatal(err)
		}
		if r.requests == 0 || r.rps() <= 0 {
			t.Fatalf("no throughput measured: %+v", r)
		}
		// wrk counts completed requests; the server may have seen a few more
		// that were cut off at the end.
		if seen := srv.Requests(chatPath); seen < r.requests {
			t.Errorf("wrk reports %d requests, the server saw %d", r.requests, seen)
		}
		if got := srv.Prompts(); len(got) != 1 {
			t.Errorf("wrk sent %d distinct prompts, want the one sample's", len(got))
		}
	})
	t.Run("rejected", func(t *testing.T) {
		// A server that wants a key answers every wrk request with 401: the
		// ceiling would then be the speed of error answers, which must not
		// pass as a figure.
		srv := openaitest.NewServer(openaitest.Options{APIKey: "secret"})
		defer srv.Close()
		_, err := ceilingRow(context.Background(), s, t.TempDir(), srv)
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("ceilingRow error = %v, want one naming status 401", err)
		}
	})
}

func TestKernelRowMissingBinary(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{})
	defer srv.Close()
	dir := t.TempDir()
	cfg, err := doorsEval(dir, srv.BaseURL(), 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	_, err = kernelRow(context.Background(), job{hayloft: filepath.Join(dir, "no-such-hayloft"), dir: dir, config: cfg, samples: 3, conc: 2, timeout: time.Minute}, srv)
	if err == nil || !strings.Contains(err.Error(), "no-such-hayloft") {
		t.Fatalf("kernelRow error = %v, want one naming the binary", err)
	}
}

// TestMeasure runs the whole program's measurements on a small scale with a
// freshly built hayloft: the kernel must send exactly one request per sample
// and never hold more than max_concurrency at once.
func TestMeasure(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hayloft and runs it: not in -short")
	}
	dir := t.TempDir()
	ctx := context.Background()
	bin, err := buildHayloft(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	s := settings{
		hayloft: bin, n: 60, conc: 8, wrkDuration: time.Second,
		slowN: 120, slowConc: 16, latency: 50 * time.Millisecond, timeout: 2 * time.Minute,
		rows: map[string]bool{"ceiling": true, "fast": true, "slow": true}, // the NIAH row's 32 MB of prompts are for the program
	}
	if p, err := exec.LookPath("wrk"); err == nil {
		s.wrk = p
	}
	rows, err := measure(ctx, s, dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("got %d rows, want 3: %+v", len(rows), rows)
	}
	if s.wrk == "" && !strings.Contains(rows[0].note, "skipped") {
		t.Errorf("without wrk the ceiling row says %q, want it marked skipped", rows[0].note)
	}
	for _, tc := range []struct {
		r       row
		n, conc int
	}{{rows[1], s.n, s.conc}, {rows[2], s.slowN, s.slowConc}} {
		if tc.r.samples != tc.n || tc.r.requests != tc.n {
			t.Errorf("%s: %d samples, %d requests; want %d of each", tc.r.name, tc.r.samples, tc.r.requests, tc.n)
		}
		if tc.r.maxInFlight > tc.conc {
			t.Errorf("%s: %d requests in flight, above max_concurrency %d", tc.r.name, tc.r.maxInFlight, tc.conc)
		}
		if tc.r.wall <= 0 || tc.r.overheadUS <= 0 {
			t.Errorf("%s: wall %s, overhead %.1f µs: want both measured", tc.r.name, tc.r.wall, tc.r.overheadUS)
		}
	}
	// 120 requests of 50 ms each, 16 allowed at once: one at a time would
	// take 6 s, so a kernel that does not overlap them shows here.
	if slow := rows[2]; slow.maxInFlight < 2 {
		t.Errorf("slow server: at most %d request in flight, want requests overlapped", slow.maxInFlight)
	}
}
