package main

// End-to-end tests: they build the real hayloft binary, run it as a separate
// process (so built-in components run as real plugin processes), and talk to
// a real OpenAI-compatible HTTP server on 127.0.0.1.

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hayloft/hayloft/kernel/report"
	"github.com/hayloft/hayloft/kernel/store/pgtest"
	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
)

var hayloftBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hayloft-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hayloftBin = filepath.Join(dir, "hayloft")
	// The environment's own CGO_ENABLED, as `go test` compiled the test
	// with, so the build reuses its compiled dependencies.
	build := exec.Command("go", "build", "-o", hayloftBin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build hayloft: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	pgtest.Stop() // the Slurm test's journal, if it started one
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

func hayloft(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return hayloftIO(t, dir, nil, "", args...)
}

func decodeResult(t *testing.T, r result) *report.Run {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	var res report.Run
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, r.stdout)
	}
	return &res
}

func repoRoot(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func TestQuickstart(t *testing.T) {
	store := filepath.Join(t.TempDir(), "q.db")
	// The first run finds Go's root through a `go` that counts its calls:
	// a run loads its config once, so goroot() asks once.
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go on PATH: %v", err)
	}
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	wrapper := "#!/bin/sh\necho call >> " + calls + "\nexec " + realGo + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "GOROOT="}
	res := decodeResult(t, hayloftIO(t, repoRoot(t), env, "", "run", "examples/quickstart.hcl", "--json", "--store", store))
	if b, _ := os.ReadFile(calls); strings.Count(string(b), "call") != 1 {
		t.Errorf("the run asked `go env GOROOT` %d times, want once", strings.Count(string(b), "call"))
	}
	if len(res.Evals) != 1 {
		t.Fatalf("evals = %d, want 1", len(res.Evals))
	}
	ev := res.Evals[0]
	if ev.Samples != 40 || ev.Errors != 0 {
		t.Fatalf("samples %d errors %d, want 40 and 0 (%+v)", ev.Samples, ev.Errors, ev)
	}
	// The extractive baseline finds the needle sentence by BM25; anything
	// far below this means the grid or the baseline is broken.
	if m := ev.Metrics["niah"]; m == nil || m.Value < 0.8 || m.N != 40 {
		t.Fatalf("niah metric = %+v, want ≥ 0.8 over 40", m)
	}
	if res.OverheadUSPerSample <= 0 || res.RunID == "" {
		t.Fatalf("run_id %q overhead %v", res.RunID, res.OverheadUSPerSample)
	}
	// Second run: every response comes from the journal.
	again := decodeResult(t, hayloft(t, repoRoot(t), "run", "examples/quickstart.hcl", "--json", "--store", store))
	if c := again.Evals[0].Cached; c != 40 {
		t.Fatalf("second run cached %d of 40", c)
	}
	if again.Evals[0].Metrics["niah"].Value != ev.Metrics["niah"].Value {
		t.Fatal("cached run scored differently")
	}
}

// writeJSONL writes n samples whose answers the fake server's default policy
// (echo the best-matching sentence) can find.
func writeJSONL(t *testing.T, dir string, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"s%d","context":"The barn is red. The code for door %d is %d. The hay is dry.","question":"What is the code for door %d?","answers":["%d"]}`+"\n", i, i, 1000+i, i, 1000+i)
	}
	p := filepath.Join(dir, "data.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeConfig(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "eval.hcl")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func openaiConfig(baseURL, data string, concurrency int) string {
	return fmt.Sprintf(`
model "openai" "fake" {
  base_url        = %q
  model           = "fake-model"
  max_concurrency = %d
  max_tokens      = 32
  temperature     = 0
}
task "jsonl" "doors" {
  path = %q
}
eval "doors" {
  task    = task.jsonl.doors
  models  = [model.openai.fake]
  scorers = ["contains"]
}
`, baseURL, concurrency, data)
}

func TestOpenAIServerAndCache(t *testing.T) {
	srv, err := openaitest.Start(openaitest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, openaiConfig(srv.BaseURL(), writeJSONL(t, dir, 30), 8))
	res := decodeResult(t, hayloft(t, dir, "run", cfg, "--json"))
	ev := res.Evals[0]
	if ev.Samples != 30 || ev.Errors != 0 || ev.Cached != 0 {
		t.Fatalf("first run: %+v", ev)
	}
	if m := ev.Metrics["contains"]; m.N != 30 || m.Value < 0.9 {
		t.Fatalf("contains = %+v", m)
	}
	asked := srv.Requests("/v1/chat/completions")
	if asked != 30 {
		t.Fatalf("server saw %d chat requests, want 30", asked)
	}
	res = decodeResult(t, hayloft(t, dir, "run", cfg, "--json"))
	if res.Evals[0].Cached != 30 || srv.Requests("/v1/chat/completions") != asked {
		t.Fatalf("second run asked the server again: cached %d, requests %d", res.Evals[0].Cached, srv.Requests("/v1/chat/completions"))
	}
}

// pluginProcesses lists live processes started from the test's hayloft
// binary as plugins (`hayloft plugin start …`).
func pluginProcesses(t *testing.T) []string {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) >= 2 && args[0] == hayloftBin && args[1] == "plugin" {
			// A zombie has an empty cmdline, so anything here is alive.
			out = append(out, e.Name()+" "+strings.Join(args, " "))
		}
	}
	return out
}

func waitNoPlugins(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := pluginProcesses(t)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("plugin processes outlived hayloft:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// interruptAndResume starts a run against a slow server, stops it with sig
// once some responses are in, and resumes it. Nothing finished may be asked
// again: at most the requests in flight at the stop are repeated. In flight
// is two stages of max_concurrency each: the requests at the server (job
// slots), and the answers being journaled while the next requests go out
// (post slots: a model's answer hands its job slot on before it is synced,
// kernel/runner/schedule.go). Under a slow fsync the second stage fills,
// and a kill loses its answers too; the bound of one stage failed then, as
// it had since the post slots came.
func interruptAndResume(t *testing.T, sig syscall.Signal) {
	const n, conc = 60, 4
	const inFlight = 2 * conc
	srv, err := openaitest.Start(openaitest.Options{Latency: 80 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, openaiConfig(srv.BaseURL(), writeJSONL(t, dir, n), conc))

	cmd := exec.Command(hayloftBin, "run", cfg, "--json")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for srv.Requests("/v1/chat/completions") < 16 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("server saw only %d requests\n%s", srv.Requests("/v1/chat/completions"), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(sig)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("run was not stopped by %v: %v", sig, err)
	}
	if sig != syscall.SIGKILL && ee.ExitCode() != 130 {
		t.Fatalf("exit code after SIGINT = %d, want 130\n%s", ee.ExitCode(), stderr.String())
	}
	waitNoPlugins(t)
	before := srv.Requests("/v1/chat/completions")

	res := decodeResult(t, hayloft(t, dir, "run", cfg, "--json"))
	ev := res.Evals[0]
	if ev.Samples != n || ev.Errors != 0 {
		t.Fatalf("resumed run: %+v", ev)
	}
	total := srv.Requests("/v1/chat/completions")
	if total > n+inFlight {
		t.Fatalf("server asked %d times for %d samples (%d before the stop): finished responses were asked again", total, n, before)
	}
	if ev.Cached < before-inFlight {
		t.Fatalf("resumed run reused %d responses, but %d were asked before the stop", ev.Cached, before)
	}
	twice := 0
	for _, c := range srv.Prompts() {
		if c > 1 {
			twice++
		}
	}
	if twice > inFlight {
		t.Fatalf("%d prompts asked twice; at most the %d in flight may be", twice, inFlight)
	}
	waitNoPlugins(t)
}

func TestKill9LosesNothing(t *testing.T)   { interruptAndResume(t, syscall.SIGKILL) }
func TestSIGINTStopsCleanly(t *testing.T)  { interruptAndResume(t, syscall.SIGINT) }
func TestSIGTERMStopsCleanly(t *testing.T) { interruptAndResume(t, syscall.SIGTERM) }

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	data := writeJSONL(t, dir, 3)
	cases := []struct {
		name, config string
		want         []string
	}{
		{"unknown block type", `modle "openai" "x" {}`, []string{"eval.hcl:1", `did you mean "model"`}},
		{"eval names a missing model", fmt.Sprintf(`
task "jsonl" "t" { path = %q }
model "baseline" "b" {}
eval "e" {
  task   = task.jsonl.t
  models = [model.baseline.c]
}`, data), []string{"eval.hcl:", "model.baseline.c", "model.baseline.b"}},
		{"typo in a component option", fmt.Sprintf(`
task "jsonl" "t" {
  pth = %q
}
model "baseline" "b" {}
eval "e" {
  task   = task.jsonl.t
  models = [model.baseline.b]
}`, data), []string{"eval.hcl:3", "pth"}},
		{"haystack missing", `
task "niah" "t" {
  haystack = "/nonexistent/haystack.txt"
}
model "baseline" "b" {}
eval "e" {
  task   = task.niah.t
  models = [model.baseline.b]
}`, []string{"eval.hcl:3", "/nonexistent/haystack.txt"}},
		{"plugin binary missing", `
plugin "ghost" {
  source = "./no-such-plugin"
}`, []string{"eval.hcl:2:1", "no-such-plugin"}},
		{"unknown component", fmt.Sprintf(`
task "jsnol" "t" { path = %q }
model "baseline" "b" {}
eval "e" {
  task   = task.jsnol.t
  models = [model.baseline.b]
}`, data), []string{"eval.hcl:2", `"jsnol"`, `did you mean "jsonl"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeConfig(t, dir, c.config)
			r := hayloft(t, dir, "run", cfg, "--json", "--store", filepath.Join(dir, "bad.db"))
			if r.code == 0 {
				t.Fatalf("exit 0 for a bad config\n%s", r.stdout)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

// deadServerURL is the base URL of an OpenAI-compatible server that has
// been stopped: nothing listens there now.
func deadServerURL(t *testing.T) string {
	t.Helper()
	srv, err := openaitest.Start(openaitest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	url := srv.BaseURL()
	srv.Close()
	return url
}

func TestServerDownFailsClearly(t *testing.T) {
	url := deadServerURL(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, strings.Replace(openaiConfig(url, writeJSONL(t, dir, 20), 2), `max_tokens      = 32`, "max_tokens = 32\n  max_retries = 1\n  timeout = \"2s\"", 1))
	r := hayloft(t, dir, "run", cfg, "--json")
	if r.code == 0 {
		t.Fatalf("exit 0 with the server down\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "model.openai.fake") {
		t.Fatalf("the error does not name the model:\n%s", r.stderr)
	}
}

// validate checks every component's options without starting or contacting
// anything; --deep provisions them too.
func TestValidateContactsNothingUnlessDeep(t *testing.T) {
	srv, err := openaitest.Start(openaitest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
model "openai" "m" { base_url = %q }
task "jsonl" "t" { path = %q }
eval "e" {
  task   = task.jsonl.t
  models = [model.openai.m]
}`, srv.BaseURL(), writeJSONL(t, dir, 2)))
	if r := hayloft(t, dir, "validate", cfg); r.code != 0 || !strings.Contains(r.stdout, "ok") {
		t.Fatalf("validate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := srv.Requests("/v1/models"); n != 0 {
		t.Fatalf("validate contacted the model server %d times", n)
	}
	// Without a model name, provisioning asks the server which it serves.
	if r := hayloft(t, dir, "validate", cfg, "--deep"); r.code != 0 {
		t.Fatalf("validate --deep: exit %d\n%s", r.code, r.stderr)
	}
	if n := srv.Requests("/v1/models"); n == 0 {
		t.Fatal("validate --deep did not provision the model")
	}
}

// A journal that does not close cleanly is said so on stderr, and the run's
// results stand: here its progress rows cannot be deleted (a trigger), so
// removing the fed log fails at Close.
func TestRunWarnsWhenJournalDoesNotClose(t *testing.T) {
	store := filepath.Join(t.TempDir(), "q.db")
	args := []string{"run", "examples/quickstart.hcl", "--json", "--limit", "2", "--store", store}
	decodeResult(t, hayloft(t, repoRoot(t), args...))
	db, err := sql.Open("sqlite", store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TRIGGER held BEFORE DELETE ON journal_logs BEGIN SELECT RAISE(ABORT, 'held'); END`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r := hayloft(t, repoRoot(t), args...)
	res := decodeResult(t, r)
	if len(res.Evals) != 1 || res.Evals[0].Cached != 2 {
		t.Fatalf("second run: %+v", res.Evals)
	}
	if !strings.Contains(r.stderr, "hayloft: warning: ") || !strings.Contains(r.stderr, "remove fed log") {
		t.Errorf("no warning that the journal did not close; stderr:\n%s", r.stderr)
	}
}
