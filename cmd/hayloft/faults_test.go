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
// a context of about longWords words, over the fake server's window. None of
// the first 100 is long: the runner ends a row whose first samples all fail.
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
		case sdk.CodeBadResponse, store.CodeRetriesExhausted:
			if f.Code == store.CodeRetriesExhausted && len(attempts) != maxRetries+1 {
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
	if codes[sdk.CodeContextLength] != len(long) {
		t.Errorf("failure codes %v: want %d %s", codes, len(long), sdk.CodeContextLength)
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

	places := map[string][]byte{"stdout": []byte(r.stdout), "stderr": []byte(r.stderr)}
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
