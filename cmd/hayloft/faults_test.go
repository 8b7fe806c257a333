package main

// Fault-injection tests: the real binary against a fake OpenAI-compatible
// server that fails a fifth of its requests in every way a real server does.
// They check what the journal keeps afterwards, not only what the run prints.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
	"github.com/hayloft/hayloft/sdk"
)

// faultyData writes n door samples; the samples at the indexes in long carry
// a context of about longWords words, to go over the fake server's window.
// Keep long samples away from the start unless that is the point: the runner
// ends a row whose first samples all fail.
func faultyData(t *testing.T, dir string, n int, long map[int]bool, longWords int) string {
	t.Helper()
	filler := strings.Repeat("The hay is dry and the barn is quiet. ", longWords/8)
	var b strings.Builder
	for i := range n {
		ctx := fmt.Sprintf("The barn is red. The code for door %d is %d. The hay is dry.", i, 1000+i)
		if long[i] {
			ctx = filler + ctx
		}
		fmt.Fprintf(&b, `{"id":"s%d","context":%q,"question":"What is the code for door %d?","answers":["%d"]}`+"\n", i, ctx, i, 1000+i)
	}
	p := filepath.Join(dir, "data.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// doorRE finds the sample a prompt belongs to: each context names one door.
var doorRE = regexp.MustCompile(`The code for door (\d+) is`)

// promptsBySample folds the server's per-prompt counts into per-sample ones.
func promptsBySample(t *testing.T, prompts map[string]int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for p, n := range prompts {
		m := doorRE.FindStringSubmatch(p)
		if m == nil {
			t.Fatalf("a prompt the test did not write reached the server: %.120q", p)
		}
		out["s"+m[1]] += n
	}
	return out
}

const faultyModel = `
model "openai" "fake" {
  base_url          = %q
  model             = "fake-model"
  max_concurrency   = 32
  max_tokens        = 32
  temperature       = 0
  max_retries       = %d
  retry_backoff     = "5ms"
  retry_backoff_max = "50ms"
  timeout           = "2s"
}
task "jsonl" "doors" {
  path = %q
}
eval "doors" {
  task    = task.jsonl.doors
  models  = [model.openai.fake]
  scorers = ["contains"]
}
`

func TestThousandSamplesUnderFaults(t *testing.T) {
	const (
		n          = 1000
		maxRetries = 4
		journalRow = "doors/model.openai.fake/none"
	)
	long := map[int]bool{}
	for i := 150; i < n; i += 150 {
		long[i] = true
	}
	srv, err := openaitest.Start(openaitest.Options{
		// The first requests always succeed, so the row is known to work
		// before faults start (three failures in a row at the start end it).
		Faults:     make([]openaitest.Fault, 48),
		FailRate:   0.2,
		FaultKinds: []openaitest.Fault{openaitest.Fault429, openaitest.Fault500, openaitest.FaultReset, openaitest.FaultMalformed},
		RetryAfter: 10 * time.Millisecond,
		Seed:       7,
		MaxContext: 2000,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "journal.db")
	cfg := writeConfig(t, dir, fmt.Sprintf(faultyModel, srv.BaseURL(), maxRetries, faultyData(t, dir, n, long, 3000)))

	res := decodeResult(t, hayloft(t, dir, "run", cfg, "--json", "--store", dbPath))
	waitNoPlugins(t)
	if len(res.Evals) != 1 {
		t.Fatalf("evals = %d, want 1", len(res.Evals))
	}
	ev := res.Evals[0]
	if ev.Error != "" {
		t.Fatalf("row failed: %s", ev.Error)
	}
	if ev.Samples+ev.Errors != n {
		t.Fatalf("samples %d + errors %d != %d", ev.Samples, ev.Errors, n)
	}
	if ev.Errors < len(long) {
		t.Fatalf("errors = %d, but %d samples are over the window", ev.Errors, len(long))
	}
	faults := srv.Faults()
	if faults[openaitest.Fault429] == 0 || faults[openaitest.Fault500] == 0 || faults[openaitest.FaultReset] == 0 || faults[openaitest.FaultMalformed] == 0 {
		t.Fatalf("not every fault kind was injected: %v", faults)
	}
	if got := srv.MaxInFlight(); got > 32 {
		t.Errorf("the server held %d requests at once; max_concurrency is 32", got)
	}
	if m := ev.Metrics["contains"]; m == nil || m.N != ev.Samples || m.Value < 0.9 {
		t.Fatalf("contains = %+v over %d answered samples", m, ev.Samples)
	}

	// Retries are bounded per sample.
	asked := promptsBySample(t, srv.Prompts())
	if len(asked) != n {
		t.Fatalf("the server saw prompts of %d samples, want %d", len(asked), n)
	}
	for id, c := range asked {
		if c > maxRetries+1 {
			t.Errorf("sample %s asked %d times; max_retries = %d allows %d", id, c, maxRetries, maxRetries+1)
		}
	}

	st, err := store.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	failures, err := st.Failures(ctx, res.RunID, journalRow)
	if err != nil {
		t.Fatal(err)
	}
	if len(failures) != ev.Errors {
		t.Fatalf("journal holds %d failures, the result reports %d", len(failures), ev.Errors)
	}
	failed := map[string]bool{}
	codes := map[string]int{}
	for _, f := range failures {
		failed[f.SampleID] = true
		codes[f.Code]++
		if f.RequestKey == "" || f.Message == "" {
			t.Errorf("failure of %s lacks its request key or message: %+v", f.SampleID, f)
		}
		attempts, err := st.Attempts(ctx, f.RequestKey)
		if err != nil {
			t.Fatal(err)
		}
		// Every try is journaled, and the server saw exactly those tries.
		if len(attempts) != asked[f.SampleID] {
			t.Errorf("sample %s: %d attempts journaled, the server saw %d", f.SampleID, len(attempts), asked[f.SampleID])
		}
		idx := 0
		fmt.Sscanf(f.SampleID, "s%d", &idx)
		switch f.Code {
		case sdk.CodeContextLength:
			if !long[idx] {
				t.Errorf("sample %s is short but failed with %s: %s", f.SampleID, f.Code, f.Message)
			}
			// The window error is final: asked once, never retried. Tries
			// before it can only be injected faults.
			for i, a := range attempts {
				isWindow := strings.Contains(a.Error, "maximum context length")
				if isWindow != (i == len(attempts)-1) {
					t.Errorf("sample %s: attempt %d of %d (%s: %s): the window error must be the last try and come once", f.SampleID, i+1, len(attempts), a.Status, a.Error)
				}
			}
		case sdk.CodeBadResponse:
			// A malformed answer is final. The fake injects faults before it
			// checks the window, so a long sample can fail this way too.
			last := attempts[len(attempts)-1]
			if last.Status != "http 200" {
				t.Errorf("sample %s failed with %s but its last try was %s: %s", f.SampleID, f.Code, last.Status, last.Error)
			}
		case store.CodeRetriesExhausted:
			if len(attempts) != maxRetries+1 {
				t.Errorf("sample %s ran out of retries after %d attempts, want %d", f.SampleID, len(attempts), maxRetries+1)
			}
		default:
			t.Errorf("sample %s failed with unexpected code %q: %s", f.SampleID, f.Code, f.Message)
		}
	}
	for i := range long {
		if id := fmt.Sprintf("s%d", i); !failed[id] {
			t.Errorf("sample %s is over the window but did not fail", id)
		}
	}
	// A long sample escapes the window error only through a malformed
	// answer (5% of tries here): most must hit it.
	if c := codes[sdk.CodeContextLength]; c < len(long)/2 {
		t.Errorf("failure codes %v: want most of the %d long samples to fail with %s", codes, len(long), sdk.CodeContextLength)
	}
	// Answered samples are journaled with their scores; failed ones are not.
	records, err := st.Samples(ctx, res.RunID, journalRow)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != ev.Samples {
		t.Errorf("journal holds %d samples, the result reports %d answered", len(records), ev.Samples)
	}
	for _, rec := range records {
		if failed[rec.ID] {
			t.Errorf("sample %s is journaled both as answered and as failed", rec.ID)
		}
		if _, hit, err := st.LookupResponse(ctx, rec.RequestKey); err != nil || !hit {
			t.Errorf("sample %s: response %s not in the cache (err %v)", rec.ID, rec.RequestKey, err)
		}
	}
	scores, err := st.Scores(ctx, res.RunID, journalRow, "contains")
	if err != nil {
		t.Fatal(err)
	}
	if len(scores) != ev.Samples {
		t.Errorf("journal holds %d contains scores for %d answered samples", len(scores), ev.Samples)
	}
	st.Close()
	t.Logf("%d samples answered, %d failed %v; faults injected %v; %d chat requests", ev.Samples, ev.Errors, codes, faults, srv.Requests("/v1/chat/completions"))

	// Failures are not cached: the second run asks for exactly the failed
	// samples, and for none whose response is journaled.
	before := srv.Prompts()
	reqBefore := srv.Requests("/v1/chat/completions")
	again := decodeResult(t, hayloft(t, dir, "run", cfg, "--json", "--store", dbPath))
	waitNoPlugins(t)
	ev2 := again.Evals[0]
	if ev2.Cached != n-ev.Errors || ev2.Samples+ev2.Errors != n {
		t.Fatalf("second run: cached %d samples %d errors %d; want %d cached of %d", ev2.Cached, ev2.Samples, ev2.Errors, n-ev.Errors, n)
	}
	delta := map[string]int{}
	for p, c := range srv.Prompts() {
		if d := c - before[p]; d > 0 {
			delta[p] = d
		}
	}
	reasked := promptsBySample(t, delta)
	for id, c := range reasked {
		if !failed[id] {
			t.Errorf("second run asked again for %s, whose response is journaled", id)
		}
		if c > maxRetries+1 {
			t.Errorf("second run asked %s %d times", id, c)
		}
	}
	for id := range failed {
		if reasked[id] == 0 {
			t.Errorf("second run did not ask again for failed sample %s", id)
		}
	}
	if d := srv.Requests("/v1/chat/completions") - reqBefore; d < len(failed) || d > len(failed)*(maxRetries+1) {
		t.Errorf("second run sent %d requests for %d failed samples", d, len(failed))
	}
}

func TestAPIKeyNeverLeaks(t *testing.T) {
	const key = "sk-planted-7d3e91c04b5a2f68e1"
	srv, err := openaitest.Start(openaitest.Options{
		APIKey:     key,
		Faults:     []openaitest.Fault{openaitest.FaultNone, openaitest.FaultNone, openaitest.FaultNone, openaitest.Fault500, openaitest.FaultReset, openaitest.FaultMalformed, openaitest.Fault429},
		FailRate:   0.3,
		FaultKinds: []openaitest.Fault{openaitest.Fault429, openaitest.Fault500, openaitest.FaultReset, openaitest.FaultMalformed},
		RetryAfter: 10 * time.Millisecond,
		Seed:       3,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "journal.db")
	body := fmt.Sprintf(faultyModel, srv.BaseURL(), 2, writeJSONL(t, dir, 40))
	body = strings.Replace(body, `model             = "fake-model"`, `model             = "fake-model"
  api_key_env       = "HAYLOFT_TEST_KEY"`, 1)
	cfg := writeConfig(t, dir, body)

	r := hayloftIO(t, dir, []string{"HAYLOFT_TEST_KEY=" + key}, "", "run", cfg, "--json", "--store", dbPath, "--log-level", "debug")
	res := decodeResult(t, r)
	waitNoPlugins(t)
	if ev := res.Evals[0]; ev.Samples+ev.Errors != 40 || ev.Samples == 0 {
		t.Fatalf("run: %+v", ev)
	}
	if f := srv.Faults(); f[openaitest.Fault500] == 0 || f[openaitest.FaultMalformed] == 0 {
		t.Fatalf("faults injected: %v", f)
	}
	auths := srv.Authorizations()
	if len(auths) == 0 {
		t.Fatal("the server saw no requests")
	}
	for i, a := range auths {
		if a != "Bearer "+key {
			t.Fatalf("request %d: Authorization = %q, want the planted key", i, a)
		}
	}
	if !strings.Contains(r.stderr, "debug") && !strings.Contains(r.stderr, "DEBUG") {
		t.Errorf("--log-level debug wrote no debug lines; the check below would prove little:\n%.2000s", r.stderr)
	}

	places := map[string][]byte{"run stdout": []byte(r.stdout), "run stderr": []byte(r.stderr)}
	// The other commands that open the model block see the key too.
	for _, cmd := range []string{"validate", "gen"} {
		o := hayloftIO(t, dir, []string{"HAYLOFT_TEST_KEY=" + key}, "", cmd, cfg, "--store", dbPath, "--log-level", "debug")
		if o.code != 0 {
			t.Fatalf("%s: exit %d\n%s", cmd, o.code, o.stderr)
		}
		places[cmd+" stdout"], places[cmd+" stderr"] = []byte(o.stdout), []byte(o.stderr)
	}
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		b, err := os.ReadFile(dbPath + suffix)
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		places[filepath.Base(dbPath+suffix)] = b
	}
	// The key's tail too: a leak that truncates or prefixes it is a leak.
	for name, b := range places {
		for _, needle := range []string{key, key[len("sk-planted-"):]} {
			if i := bytes.Index(b, []byte(needle)); i >= 0 {
				lo, hi := max(0, i-80), min(len(b), i+len(needle)+80)
				t.Errorf("%s holds the API key at byte %d: …%q…", name, i, b[lo:hi])
			}
		}
	}
}

// TestEachFault injects one fault of each kind into the fourth request of a
// sequential run and checks the outcome the journal records for that sample:
// a transient fault is retried and answered, a malformed answer is final.
func TestEachFault(t *testing.T) {
	tests := []struct {
		fault    openaitest.Fault
		answered bool
		first    string // status of the faulted attempt in the journal
	}{
		{openaitest.Fault429, true, "http 429"},
		{openaitest.Fault503, true, "http 503"},
		{openaitest.Fault500, true, "http 500"},
		{openaitest.FaultReset, true, "error"},
		{openaitest.FaultHang, true, "error"},
		{openaitest.FaultMalformed, false, "http 200"},
	}
	for _, tt := range tests {
		t.Run(tt.fault.String(), func(t *testing.T) {
			srv, err := openaitest.Start(openaitest.Options{
				Faults:     []openaitest.Fault{openaitest.FaultNone, openaitest.FaultNone, openaitest.FaultNone, tt.fault},
				RetryAfter: 10 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			dir := t.TempDir()
			dbPath := filepath.Join(dir, "journal.db")
			body := fmt.Sprintf(faultyModel, srv.BaseURL(), 2, writeJSONL(t, dir, 6))
			body = strings.Replace(body, `max_concurrency   = 32`, `max_concurrency   = 1`, 1)
			body = strings.Replace(body, `timeout           = "2s"`, `timeout           = "300ms"`, 1)
			cfg := writeConfig(t, dir, body)
			res := decodeResult(t, hayloft(t, dir, "run", cfg, "--json", "--store", dbPath))
			ev := res.Evals[0]
			wantReq := 7
			if !tt.answered {
				wantReq = 6
			}
			if got := srv.Requests("/v1/chat/completions"); got != wantReq {
				t.Errorf("server saw %d requests, want %d", got, wantReq)
			}
			if f := srv.Faults(); f[tt.fault] != 1 {
				t.Fatalf("faults injected: %v", f)
			}

			st, err := store.Open(context.Background(), dbPath)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ctx := context.Background()
			failures, err := st.Failures(ctx, res.RunID, "doors/model.openai.fake/none")
			if err != nil {
				t.Fatal(err)
			}
			var key string
			if tt.answered {
				if ev.Samples != 6 || ev.Errors != 0 || len(failures) != 0 {
					t.Fatalf("samples %d errors %d failures %+v; want all 6 answered", ev.Samples, ev.Errors, failures)
				}
				records, err := st.Samples(ctx, res.RunID, "doors/model.openai.fake/none")
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range records {
					if r.ID == "s3" {
						key = r.RequestKey
					}
				}
			} else {
				if ev.Samples != 5 || ev.Errors != 1 || len(failures) != 1 || failures[0].SampleID != "s3" || failures[0].Code != sdk.CodeBadResponse {
					t.Fatalf("samples %d errors %d failures %+v; want s3 failed with %s", ev.Samples, ev.Errors, failures, sdk.CodeBadResponse)
				}
				key = failures[0].RequestKey
			}
			attempts, err := st.Attempts(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{tt.first, "ok"}
			if !tt.answered {
				want = want[:1]
			}
			var got []string
			for _, a := range attempts {
				got = append(got, a.Status)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("s3's journaled attempts %q (%+v), want %q", got, attempts, want)
			}
		})
	}
}

// TestLongSamplesFirst: a task whose first samples are over the server's
// window (a length grid sorted longest first) must still run the rest. The
// server answered every request, so these failures say nothing about it.
func TestLongSamplesFirst(t *testing.T) {
	srv, err := openaitest.Start(openaitest.Options{MaxContext: 500})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	long := map[int]bool{0: true, 1: true, 2: true, 3: true}
	// One at a time, so the long samples are certainly the first to finish.
	body := fmt.Sprintf(faultyModel, srv.BaseURL(), 2, faultyData(t, dir, 10, long, 1000))
	cfg := writeConfig(t, dir, strings.Replace(body, `max_concurrency   = 32`, `max_concurrency   = 1`, 1))
	r := hayloft(t, dir, "run", cfg, "--json")
	if r.code != 0 {
		t.Skip("bug: kernel/runner.sampleFailed ends the row after maxBlindFailures context-length failures, though the server answered each one:\n" + r.stderr)
	}
	ev := decodeResult(t, r).Evals[0]
	if ev.Error != "" || ev.Samples != 6 || ev.Errors != 4 {
		t.Fatalf("samples %d errors %d error %q; want 6 answered and 4 over the window", ev.Samples, ev.Errors, ev.Error)
	}
}

// TestFailureMessageOnce: the error of a failed sample crosses the plugin
// boundary once; its text must not grow on the way.
func TestFailureMessageOnce(t *testing.T) {
	srv, err := openaitest.Start(openaitest.Options{
		Faults: []openaitest.Fault{openaitest.FaultNone, openaitest.FaultNone, openaitest.FaultNone, openaitest.FaultMalformed},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	body := fmt.Sprintf(faultyModel, srv.BaseURL(), 2, writeJSONL(t, dir, 5))
	cfg := writeConfig(t, dir, strings.Replace(body, `max_concurrency   = 32`, `max_concurrency   = 1`, 1))
	r := hayloft(t, dir, "run", cfg, "--json")
	if ev := decodeResult(t, r).Evals[0]; ev.Errors != 1 {
		t.Fatalf("errors = %d, want the one malformed answer", ev.Errors)
	}
	if !strings.Contains(r.stderr, "sample=s3") {
		t.Fatalf("the failed sample is not logged:\n%s", r.stderr)
	}
	if dup := regexp.MustCompile(`\(\d+ attempts?\) \(\d+ attempts?\)`).FindString(r.stderr); dup != "" {
		t.Skipf("bug: sdk/plugin.errorFromProto wraps the remote text, which already ends in the attempt count, in a new sdk.AttemptsError, so the count is printed twice (%q):\n%s", dup, r.stderr)
	}
}
