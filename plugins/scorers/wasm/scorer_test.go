package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hayloft/hayloft/sdk"
)

// quiet is a context whose logger discards, for scorers whose logs no test reads.
var quiet = hclog.WithContext(context.Background(), hclog.NewNullLogger())

// harness is a scorer under test with the logs it wrote.
type harness struct {
	sdk.Scorer
	s    *scorer
	logs *syncBuffer
}

// syncBuffer collects log output from several goroutines; waitFor blocks
// until it holds a line, woken by each write.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed by the next write
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.b.Write(p)
}

// waitFor reports whether the buffer holds text within d.
func (b *syncBuffer) waitFor(text string, d time.Duration) bool {
	timeout := time.After(d)
	for {
		b.mu.Lock()
		if strings.Contains(b.b.String(), text) {
			b.mu.Unlock()
			return true
		}
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-timeout:
			return false
		}
	}
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// open builds a scorer for the named test module with extra options, pinned
// by its sha256 since test modules live outside the working directory.
func open(t testing.TB, name string, opts map[string]any) *harness {
	t.Helper()
	path, sum := module(t, name)
	o := map[string]any{"module": path, "sha256": sum}
	maps.Copy(o, opts)
	cfg, err := decodeConfig(sdk.MustOptions(o))
	if err != nil {
		t.Fatalf("decode %v: %v", o, err)
	}
	cfg.cacheDir = testCacheDir
	logs := &syncBuffer{}
	ctx := hclog.WithContext(context.Background(), hclog.New(&hclog.LoggerOptions{Name: "test", Output: logs, Level: hclog.Debug}))
	sc, err := build(ctx, cfg)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	h := &harness{Scorer: sc, logs: logs}
	switch v := sc.(type) {
	case *scorer:
		h.s = v
	case aggregator:
		h.s = v.scorer
	default:
		t.Fatalf("build returned %T", sc)
	}
	t.Cleanup(func() {
		if err := sc.(io.Closer).Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return h
}

func (h *harness) score(prediction string, targets ...string) (*sdk.ScoreResponse, error) {
	return h.Score(context.Background(), &sdk.ScoreRequest{
		Sample:     &sdk.Sample{ID: "s-" + prediction, Targets: targets},
		Prediction: prediction,
	})
}

// requireRecovers checks that a good input to h is scored, by a fresh
// instance when the bad call discarded one.
func requireRecovers(t *testing.T, h *harness) {
	t.Helper()
	got, err := h.score("ok", "ok")
	if err != nil {
		t.Fatalf("good input after the bad one: %v", err)
	}
	if got.Value != 1 {
		t.Fatalf("good input after the bad one scored %v, want 1", got.Value)
	}
}

// requireDiscardedThenRecovers checks that the bad call discarded its
// instance, or kept it, and that a good input is scored after it.
func requireDiscardedThenRecovers(t *testing.T, h *harness, discard bool) {
	t.Helper()
	want := int64(0)
	if discard {
		want = 1
	}
	if got := h.s.discarded.Load(); got != want {
		t.Errorf("%d instances discarded, want %d", got, want)
	}
	requireRecovers(t, h)
}

func TestHostileModules(t *testing.T) {
	repo, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	writeDir := t.TempDir()
	cases := []struct {
		name    string
		trigger string
		opts    map[string]any
		code    string
		discard bool
		// limit is the longest the bad call may take: twice the timeout
		// for a guest stopped by its deadline.
		limit time.Duration
		check func(t *testing.T, err error)
	}{
		{
			name: "infinite loop", trigger: "loop", opts: map[string]any{"timeout": "500ms"},
			code: CodeTimeout, discard: true, limit: time.Second,
		},
		{
			name: "unbounded allocation", trigger: "alloc", opts: map[string]any{"memory_mb": 32, "timeout": "20s"},
			code: CodeMemory, discard: true, limit: 20 * time.Second,
			check: func(t *testing.T, err error) {
				var at, limit int
				msg := err.Error()
				i := strings.Index(msg, "memory at ")
				if i < 0 {
					t.Fatalf("no memory figure in %q", msg)
				}
				if _, err := fmt.Sscanf(msg[i:], "memory at %d of %d MiB", &at, &limit); err != nil {
					t.Fatalf("parse %q: %v", msg[i:], err)
				}
				if at > limit || limit != 32 {
					t.Errorf("memory at %d MiB with a limit of %d MiB, want at most 32", at, limit)
				}
			},
		},
		{
			name: "read /etc/passwd", trigger: "passwd", code: CodeGuestError, limit: 2 * time.Second,
			check: func(t *testing.T, err error) {
				if !strings.Contains(err.Error(), "/etc/passwd") || strings.Contains(err.Error(), "root:") {
					t.Errorf("error %q: want a failed open of /etc/passwd", err)
				}
			},
		},
		{
			name: "read the project directory", trigger: "project", opts: map[string]any{"options": map[string]any{"dir": repo}},
			code: CodeGuestError, limit: 2 * time.Second,
			check: func(t *testing.T, err error) {
				if !strings.Contains(err.Error(), repo) {
					t.Errorf("error %q does not name the attempt on %s", err, repo)
				}
			},
		},
		{
			name: "write a file", trigger: "write", opts: map[string]any{"options": map[string]any{"dir": writeDir}},
			code: CodeGuestError, limit: 2 * time.Second,
			check: func(t *testing.T, err error) {
				for _, p := range []string{filepath.Join(writeDir, "escaped.txt"), "escaped.txt", "/tmp/hayloft-escaped.txt"} {
					if _, err := os.Stat(p); err == nil {
						t.Errorf("the guest wrote %s", p)
					}
				}
			},
		},
		{
			name: "100 MB output", trigger: "bigout", opts: map[string]any{"memory_mb": 1024, "timeout": "60s"},
			code: CodeOutputTooLarge, discard: true, limit: 60 * time.Second,
			check: func(t *testing.T, err error) {
				if !strings.Contains(err.Error(), "max_output_bytes 1048576") {
					t.Errorf("error %q does not name the limit", err)
				}
			},
		},
		{
			name: "panic", trigger: "panic", code: CodeTrap, discard: true, limit: 2 * time.Second,
			check: func(t *testing.T, err error) {
				if !strings.Contains(err.Error(), "hostile module panics on purpose") {
					t.Errorf("error %q lacks the guest's panic message", err)
				}
			},
		},
		{
			name: "exit", trigger: "exit", code: CodeTrap, discard: true, limit: 2 * time.Second,
			check: func(t *testing.T, err error) {
				if !strings.Contains(err.Error(), "exited with code 3") {
					t.Errorf("error %q does not report the exit code", err)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.trigger == "bigout" {
				t.Skip("a 100 MB output takes the guest seconds to encode")
			}
			h := open(t, "hostile", tc.opts)
			start := time.Now()
			_, err := h.score(tc.trigger, "ok")
			elapsed := time.Since(start)
			if err == nil {
				t.Fatalf("%s: no error", tc.trigger)
			}
			if got := requestCode(err); got != tc.code {
				t.Fatalf("%s: error %v (code %q), want code %q", tc.trigger, err, got, tc.code)
			}
			if elapsed > tc.limit {
				t.Errorf("%s: took %v, limit %v", tc.trigger, elapsed, tc.limit)
			}
			t.Logf("%s: %v", tc.trigger, err)
			if tc.check != nil {
				tc.check(t, err)
			}
			requireDiscardedThenRecovers(t, h, tc.discard)
		})
	}
}

func TestUnsupportedABIVersionIsRefused(t *testing.T) {
	path, sum := module(t, "badabi")
	cfg, err := decodeConfig(sdk.MustOptions(map[string]any{"module": path, "sha256": sum}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.cacheDir = testCacheDir
	_, err = build(quiet, cfg)
	var ce *sdk.ConfigError
	if !errors.As(err, &ce) || ce.Field != "module" {
		t.Fatalf("got %v, want a ConfigError on module", err)
	}
	if !strings.Contains(err.Error(), "ABI version 99") || !strings.Contains(err.Error(), "versions 1 and 2") {
		t.Errorf("error %q should name both versions", err)
	}
}

// A scorer that is slow on every call times out on every call, each within
// twice its timeout, without wearing the host down; given less work, the
// same module scores.
func TestSlowOnEveryCall(t *testing.T) {
	const timeout = 300 * time.Millisecond
	h := open(t, "sleeper", map[string]any{"timeout": timeout.String()})
	for i := range 4 {
		start := time.Now()
		_, err := h.score(fmt.Sprint("call", i))
		elapsed := time.Since(start)
		if requestCode(err) != CodeTimeout {
			t.Fatalf("call %d: %v, want %s", i, err, CodeTimeout)
		}
		if elapsed > 2*timeout {
			t.Errorf("call %d took %v, over twice the timeout %v", i, elapsed, timeout)
		}
	}
	// Concurrent calls share GOMAXPROCS instances; each still ends.
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range cap(errs) {
		wg.Go(func() {
			_, err := h.score(fmt.Sprint("parallel", i))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if requestCode(err) != CodeTimeout {
			t.Errorf("parallel call: %v, want %s", err, CodeTimeout)
		}
	}
	// Every sequential timeout discards its instance; a parallel call may
	// time out while still waiting for an instance on a loaded machine, and
	// then has none to discard.
	if got := h.s.discarded.Load(); got < 5 || got > 10 {
		t.Errorf("%d instances discarded, want 4 sequential plus 1 to 6 parallel", got)
	}

	quick := open(t, "sleeper", map[string]any{"timeout": timeout.String(), "options": map[string]any{"spins": 1000}})
	if got, err := quick.score("x"); err != nil || got.Value != 1 {
		t.Fatalf("with little work: %v, %v", got, err)
	}
}

// Cancelling the caller's context stops a running guest and is reported as
// cancellation, not as the guest's fault.
func TestCallerCancellation(t *testing.T) {
	h := open(t, "hostile", map[string]any{"timeout": "30s"})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := h.Score(ctx, &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "c"}, Prediction: "loop"})
	if !errors.Is(err, context.Canceled) || requestCode(err) != "" {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("cancellation took %v", elapsed)
	}
	requireRecovers(t, h)
}

// The sandbox: no environment, no arguments, wazero's fake clock (which
// starts at 2022-01-01) and a seeded random source, so two fresh instances
// see the same world.
func TestSandboxIsDeterministic(t *testing.T) {
	var seen []map[string]any
	for range 2 {
		h := open(t, "hostile", nil)
		got, err := h.score("probe")
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, got.Details)
	}
	d := seen[0]
	if y, _ := d["year"].(float64); y != 2022 {
		t.Errorf("guest clock says year %v, want wazero's fake 2022", d["year"])
	}
	if env, _ := d["environ"].([]any); len(env) != 0 {
		t.Errorf("guest sees environment %v", env)
	}
	if args, _ := d["args"].([]any); len(args) != 0 {
		t.Errorf("guest sees arguments %v", args)
	}
	if d["rand"] == "" || d["rand"] != seen[1]["rand"] {
		t.Errorf("random bytes %v and %v differ between fresh instances", d["rand"], seen[1]["rand"])
	}
	if d["unix"] != seen[1]["unix"] {
		t.Errorf("clock readings %v and %v differ between fresh instances", d["unix"], seen[1]["unix"])
	}
}

func TestGuestLogsAreRateLimited(t *testing.T) {
	h := open(t, "hostile", nil)
	if _, err := h.score("log"); err != nil {
		t.Fatal(err)
	}
	n := strings.Count(h.logs.String(), "line ")
	if n < logLinesPerSecond || n > 2*logLinesPerSecond {
		t.Errorf("%d of 1000 lines logged, want about %d", n, logLinesPerSecond)
	}
	if !strings.Contains(h.logs.String(), "test.hostile") {
		t.Errorf("logs not named after the module:\n%.300s", h.logs.String())
	}

	h = open(t, "hostile", nil)
	if _, err := h.score("biglog"); err != nil {
		t.Fatal(err)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "guest log call cut") {
		t.Errorf("a 1 MiB log call was not reported as cut")
	}
	if n := strings.Count(logs, "y"); n > logMaxCallBytes+100 {
		t.Errorf("%d bytes of a 1 MiB log call reached the log, limit %d", n, logMaxCallBytes)
	}
}

func TestInputAndOutputCaps(t *testing.T) {
	h := open(t, "hostile", map[string]any{"max_input_bytes": 1000, "include_context": true})
	_, err := h.Score(context.Background(), &sdk.ScoreRequest{
		Sample:     &sdk.Sample{ID: "big", Context: strings.Repeat("z", 2000)},
		Prediction: "ok",
	})
	if requestCode(err) != CodeInputTooLarge {
		t.Fatalf("2000-byte context: %v, want %s", err, CodeInputTooLarge)
	}
	if h.s.discarded.Load() != 0 {
		t.Error("an input refused before the call discarded an instance")
	}
	requireRecovers(t, h)

	h = open(t, "hostile", map[string]any{"max_output_bytes": 5})
	if _, err := h.score("ok", "ok"); requestCode(err) != CodeOutputTooLarge {
		t.Fatalf("output over 5 bytes: %v, want %s", err, CodeOutputTooLarge)
	}
}

func TestCloseEndsTheScorer(t *testing.T) {
	h := open(t, "hostile", map[string]any{"timeout": "60s"})
	if _, ok := h.Scorer.(sdk.Aggregator); ok {
		t.Error("a module without an aggregate export is an Aggregator")
	}
	c := h.Scorer.(io.Closer)
	done := make(chan error, 1)
	go func() {
		_, err := h.score("loop")
		done <- err
	}()
	// The guest logs before it loops.
	if !h.logs.waitFor("looping", 30*time.Second) {
		t.Fatalf("the guest never began to loop; log:\n%s", h.logs.String())
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("call in flight at close: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the call in flight ended %v after close", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("close did not stop a looping guest")
	}
	if _, err := h.score("ok", "ok"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("score after close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

func TestModuleChecks(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.wasm")
	// The smallest valid module: magic and version, nothing exported.
	if err := os.WriteFile(empty, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.wasm")
	if err := os.WriteFile(garbage, []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostile, hostileSum := module(t, "hostile")
	cases := []struct {
		name  string
		opts  map[string]any
		field string
		msg   string
	}{
		{"no exports", map[string]any{"module": empty, "sha256": fileSHA256(t, empty)}, "module", "exports no memory"},
		{"not wasm", map[string]any{"module": garbage, "sha256": fileSHA256(t, garbage)}, "module", "compile"},
		{"missing file", map[string]any{"module": filepath.Join(dir, "nope.wasm")}, "module", "no such file"},
		{"memory below the module's minimum", map[string]any{"module": hostile, "sha256": hostileSum, "memory_mb": 1}, "memory_mb", "over limit"},
		{"memory too small to start", map[string]any{"module": hostile, "sha256": hostileSum, "memory_mb": 3}, "memory_mb", "_initialize ran out of memory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := decodeConfig(sdk.MustOptions(tc.opts))
			if err != nil {
				t.Fatal(err)
			}
			cfg.cacheDir = testCacheDir
			_, err = build(quiet, cfg)
			var ce *sdk.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want a ConfigError on %s mentioning %q", err, tc.field, tc.msg)
			}
		})
	}
}

func TestNewDecodesOptions(t *testing.T) {
	_, err := New(context.Background(), sdk.MustOptions(map[string]any{"module": "x.wasm", "memory": 3}))
	var ce *sdk.ConfigError
	if !errors.As(err, &ce) || ce.Field != "memory" {
		t.Fatalf("got %v, want a ConfigError on memory", err)
	}
}

// Instances are reused from call to call by default, and not at all with
// fresh_instance: the guest's seeded random source shows it, since a reused
// instance has advanced it and a fresh one starts it over. Either way a
// hostile call costs only itself.
func TestInstanceReuse(t *testing.T) {
	for _, tc := range []struct {
		fresh    bool
		wantSame bool // two probes see the same random bytes
	}{
		{false, false},
		{true, true},
	} {
		t.Run(fmt.Sprintf("fresh_instance=%v", tc.fresh), func(t *testing.T) {
			h := open(t, "hostile", map[string]any{"fresh_instance": tc.fresh})
			var rands []any
			for range 2 {
				got, err := h.score("probe")
				if err != nil {
					t.Fatal(err)
				}
				rands = append(rands, got.Details["rand"])
			}
			if same := rands[0] == rands[1]; same != tc.wantSame {
				t.Errorf("random bytes %v then %v: same = %v, want %v", rands[0], rands[1], same, tc.wantSame)
			}
			before := h.s.discarded.Load()
			if _, err := h.score("panic"); requestCode(err) != CodeTrap {
				t.Fatalf("panic: err = %v, want %s", err, CodeTrap)
			}
			if h.s.discarded.Load() != before+1 {
				t.Error("the trapped instance was not discarded")
			}
			requireRecovers(t, h)
		})
	}
}
