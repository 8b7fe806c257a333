// Package acmepy_test runs hayloft's own checks against the Python example
// plugin and against Python plugins that misbehave: the Go conformance
// suite (sdktest) through the real plugin host, `hayloft run` end to end
// with a pinned .pyz, and the failures a Python plugin can have.
//
// The tests need a Python with grpcio and protobuf (Debian: python3-grpcio
// python3-protobuf). Without one they skip, except under CI, where they
// fail.
package acmepy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hayloft/hayloft/kernel/pluginhost"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

// findPython returns the first interpreter that imports grpc and protobuf:
// $HAYLOFT_PYTHON, python3 on PATH, then Debian's /usr/bin/python3 (a
// python3 of pyenv or a venv may lack the Debian packages).
var findPython = sync.OnceValues(func() (string, []string) {
	var tried []string
	cands := []string{os.Getenv("HAYLOFT_PYTHON"), "python3", "/usr/bin/python3"}
	for _, c := range cands {
		if c == "" {
			continue
		}
		path, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, c+" (not found)")
			continue
		}
		// The real interpreter, not a shim: it goes on the .pyz's #! line.
		out, err := exec.Command(path, "-c", "import grpc, google.protobuf, sys; print(sys.executable)").Output()
		if err != nil {
			tried = append(tried, c+" (no grpc or protobuf)")
			continue
		}
		return strings.TrimSpace(string(out)), nil
	}
	return "", tried
})

func python(t testing.TB) string {
	t.Helper()
	py, tried := findPython()
	if py == "" {
		msg := fmt.Sprintf("no Python with grpcio and protobuf (tried %s): apt-get install python3-grpcio python3-protobuf", strings.Join(tried, ", "))
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return py
}

var shaLine = regexp.MustCompile(`sha256 = "([0-9a-f]{64})"`)

// pack writes MODULE.pyz of the plugin in module (found in dir) into out and
// returns its path and the sha256 pack printed, checked against the file.
func pack(t testing.TB, dir, module, out string) (string, string) {
	t.Helper()
	py := python(t)
	sdkDir, err := filepath.Abs("../../sdk/python")
	if err != nil {
		t.Fatal(err)
	}
	pyz := filepath.Join(out, module+".pyz")
	cmd := exec.Command(py, "-m", "hayloft_plugin", "pack", module+":plugin", "-o", pyz, "--python", py, "--path", dir)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+sdkDir)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pack %s: %v\n%s", module, err, b)
	}
	m := shaLine.FindSubmatch(b)
	if m == nil {
		t.Fatalf("pack %s printed no sha256:\n%s", module, b)
	}
	if got := sha256File(t, pyz); got != string(m[1]) {
		t.Fatalf("pack printed sha256 %s, the file has %s", m[1], got)
	}
	return pyz, string(m[1])
}

func sha256File(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// packed caches one .pyz per module for the whole test binary.
var (
	packMu  sync.Mutex
	packDir string
	packed  = map[string][2]string{}
)

func packOnce(t testing.TB, dir, module string) (string, string) {
	t.Helper()
	packMu.Lock()
	defer packMu.Unlock()
	if p, ok := packed[module]; ok {
		return p[0], p[1]
	}
	if packDir == "" {
		d, err := os.MkdirTemp("", "acmepy")
		if err != nil {
			t.Fatal(err)
		}
		packDir = d
	}
	pyz, sum := pack(t, dir, module, packDir)
	packed[module] = [2]string{pyz, sum}
	return pyz, sum
}

func TestMain(m *testing.M) {
	code := m.Run()
	if packDir != "" {
		os.RemoveAll(packDir)
	}
	if built != "" {
		os.RemoveAll(filepath.Dir(built))
	}
	os.Exit(code)
}

// host returns a plugin host with the plugin at pyz, pinned to sum, under
// the name name.
func host(t *testing.T, name, pyz, sum string, start time.Duration) *pluginhost.Host {
	t.Helper()
	h, err := pluginhost.New(pluginhost.Options{
		Builtin:      sdk.NewSet("builtin", "test"),
		SelfExe:      os.Args[0],
		Logger:       hclog.New(&hclog.LoggerOptions{Name: "hayloft", Level: hclog.Info, Output: &testWriter{t: t}}),
		StartTimeout: start,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddPlugin(pluginhost.Spec{Name: name, Source: pyz, SHA256: sum}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("close host: %v", err)
		}
	})
	return h
}

type testWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func open(t *testing.T, h *pluginhost.Host, kind sdk.Kind, name string, opts any) (any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return h.Open(ctx, kind, name, "", sdk.MustOptions(opts))
}

var operandsRE = regexp.MustCompile(`The first number is (\d+) and the second number is (\d+)\.`)

// TestConformance runs Go's conformance suite against the Python example,
// through the host hayloft uses: a pinned .pyz, its own process, the
// go-plugin handshake, the Calls stream and SampleBatches.
func TestConformance(t *testing.T) {
	pyz, sum := packOnce(t, ".", "acme")
	h := host(t, "acme", pyz, sum, 0)

	v, err := open(t, h, sdk.KindTask, "arith", map[string]any{"count": 40, "filler_sentences": 8})
	if err != nil {
		t.Fatal(err)
	}
	task := v.(*pluginhost.Task)
	sdktest.CheckTask(t, task)
	n := 0
	for s, err := range task.Samples(context.Background(), &sdk.SamplesRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		m := operandsRE.FindAllStringSubmatch(s.Context, -1)
		if len(m) != 1 {
			t.Fatalf("sample %s: %d number sentences, want 1", s.ID, len(m))
		}
		a, _ := strconv.Atoi(m[0][1])
		b, _ := strconv.Atoi(m[0][2])
		if s.ID != strconv.Itoa(n) || len(s.Targets) != 1 || s.Targets[0] != strconv.Itoa(a+b) || s.Language != "en" {
			t.Errorf("sample %d: id %q targets %q for %d + %d, language %q", n, s.ID, s.Targets, a, b, s.Language)
		}
		if got := strings.Count(s.Context, "The barn was quiet"); got != 8 {
			t.Errorf("sample %s: %d filler sentences, want 8", s.ID, got)
		}
		n++
	}
	if n != 40 {
		t.Fatalf("%d samples, want 40", n)
	}
	if info := task.Info(); info.Plugin != "acme" || info.Version != "1.0.0" || info.Protocol != "hayloft.plugin.v1" {
		t.Errorf("info %+v", info)
	}

	req := func(pred string, targets ...string) *sdk.ScoreRequest {
		return &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "x", Targets: targets}, Prediction: pred}
	}
	v, err = open(t, h, sdk.KindScorer, "numeric", nil)
	if err != nil {
		t.Fatal(err)
	}
	scorer := v.(*pluginhost.Scorer)
	sdktest.CheckScorer(t, scorer, []sdktest.ScorerCase{
		{Name: "right", Req: req("The sum is 1234.", "1234"), Want: 1},
		{Name: "wrong", Req: req("1233", "1234"), Want: 0},
		{Name: "first number counts", Req: req("12 + 22 = 34", "34"), Want: 0},
		{Name: "decimal equal", Req: req("42.0", "42"), Want: 1},
		{Name: "negative", Req: req("minus: -7", "-7"), Want: 1},
		{Name: "any target", Req: req("9", "8", "9"), Want: 1},
		{Name: "no number", Req: req("I cannot tell.", "5"), Invalid: true},
		{Name: "empty", Req: req("", "5"), Invalid: true},
	})
	_, err = scorer.Score(context.Background(), req("5"))
	var re *sdk.RequestError
	if !errors.As(err, &re) || re.Code != sdk.CodeBadRequest {
		t.Fatalf("score without targets: %v, want a %s RequestError", err, sdk.CodeBadRequest)
	}

	// Option errors keep their kind and field across the boundary.
	for _, tt := range []struct {
		kind  sdk.Kind
		name  string
		opts  map[string]any
		field string
		msg   string
	}{
		{sdk.KindTask, "arith", map[string]any{"count": 0}, "count", "must be at least 1, got 0"},
		{sdk.KindTask, "arith", map[string]any{"cout": 5}, "cout", `unknown option; did you mean "count"?`},
		{sdk.KindTask, "arith", map[string]any{"count": "five"}, "count", "want int, got string"},
		{sdk.KindScorer, "numeric", map[string]any{"tolerence": 1}, "tolerence", `unknown option; did you mean "tolerance"?`},
		{sdk.KindScorer, "numeric", map[string]any{"tolerance": -0.1}, "tolerance", "must not be negative"},
	} {
		t.Run(fmt.Sprintf("%s %v", tt.name, tt.opts), func(t *testing.T) {
			_, err := open(t, h, tt.kind, tt.name, tt.opts)
			var ce *sdk.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field || ce.Msg != tt.msg {
				t.Fatalf("err = %v, want a ConfigError on %q: %s", err, tt.field, tt.msg)
			}
		})
	}
}

// TestBadPlugins: each way a Python plugin can go wrong gives one clear
// line naming the plugin and the cause, and loses nothing it need not.
func TestBadPlugins(t *testing.T) {
	t.Run("prints at import and while scoring", func(t *testing.T) {
		pyz, sum := packOnce(t, "testdata", "import_prints")
		v, err := open(t, host(t, "loud", pyz, sum, 0), sdk.KindScorer, "loud", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := v.(sdk.Scorer).Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "a"}})
		if err != nil || resp.Value != 1 {
			t.Fatalf("score = %v, %v; want 1", resp, err)
		}
	})

	// Only the plugin that never answers waits out a start timeout, a short
	// one; the others keep the product's, so a loaded machine that starts
	// Python slowly cannot turn their exit into a timeout.
	for _, tt := range []struct {
		module, component string
		start             time.Duration
		want              []string
	}{
		{"import_raises", "anything", 0, []string{`plugin "bad"`, "import failed: RuntimeError: cannot load the answer key (import_raises.py:4)"}},
		{"no_handshake", "silent", 2 * time.Second, []string{`plugin "bad"`, `start scorer "silent"`, "timeout while waiting for plugin to start"}},
		{"exits_early", "gone", 0, []string{`plugin "bad"`, `start scorer "gone"`, "exited before the handshake: exits_early: import failed: SystemExit: 0 (exits_early.py:"}},
	} {
		t.Run(tt.module, func(t *testing.T) {
			pyz, sum := packOnce(t, "testdata", tt.module)
			_, err := open(t, host(t, "bad", pyz, sum, tt.start), sdk.KindScorer, tt.component, nil)
			if err == nil {
				t.Fatal("opened a broken plugin")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines:\n%s", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
		})
	}

	pyz, sum := packOnce(t, "testdata", "bad")
	h := host(t, "bad", pyz, sum, 0)
	score := func(t *testing.T, name string, opts any, id string) (*sdk.ScoreResponse, error) {
		t.Helper()
		v, err := open(t, h, sdk.KindScorer, name, opts)
		if err != nil {
			t.Fatal(err)
		}
		return v.(sdk.Scorer).Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: id}, Prediction: "p"})
	}

	t.Run("wrong type", func(t *testing.T) {
		_, err := score(t, "wrongtype", nil, "7")
		if err == nil || !strings.Contains(err.Error(), "scorer 'wrongtype' returned str for sample '7', want Score or a number") {
			t.Fatalf("err = %v", err)
		}
		var re *sdk.RequestError
		if errors.As(err, &re) {
			t.Fatalf("a broken contract is the component's error, not the sample's: %v", err)
		}
	})

	t.Run("raises on one sample", func(t *testing.T) {
		v, err := open(t, h, sdk.KindScorer, "raises", nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			resp, err := v.(sdk.Scorer).Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: strconv.Itoa(i)}})
			if i != 3 {
				if err != nil || resp.Value != 1 {
					t.Errorf("sample %d: %v, %v", i, resp, err)
				}
				continue
			}
			// A request error: the runner records it against the sample
			// and scores the rest.
			var re *sdk.RequestError
			if !errors.As(err, &re) || re.Code != "exception" || !regexp.MustCompile(`^KeyError: 'no such answer' \(bad\.py:\d+\)$`).MatchString(re.Msg) {
				t.Errorf("sample 3: %v, want a RequestError naming the exception and its line", err)
			}
		}
	})

	t.Run("killed mid-run", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "died")
		v, err := open(t, h, sdk.KindScorer, "diesonce", map[string]any{"marker": marker})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				var resp *sdk.ScoreResponse
				resp, errs[i] = v.(sdk.Scorer).Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: strconv.Itoa(i)}})
				if errs[i] == nil && resp.Value != 1 {
					errs[i] = fmt.Errorf("value %v", resp.Value)
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("sample %d lost to the crash: %v", i, err)
			}
		}
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("the scorer never died: %v", err)
		}
	})
}

// built is the hayloft binary, compiled once for the test binary.
var (
	buildMu sync.Mutex
	built   string
)

// build compiles hayloft (once) and returns its path.
func build(t testing.TB) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if built != "" {
		return built
	}
	dir, err := os.MkdirTemp("", "acmepy-hayloft")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hayloft")
	cmd := exec.Command("go", "build", "-o", out, "github.com/hayloft/hayloft/cmd/hayloft")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build hayloft: %v\n%s", err, b)
	}
	built = out
	return out
}

type result struct {
	stdout, stderr string
	code           int
}

func runBin(t *testing.T, dir string, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return result{out.String(), errb.String(), ee.ExitCode()}
	case err != nil:
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return result{out.String(), errb.String(), 0}
}
