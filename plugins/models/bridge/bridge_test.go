//go:build unix

package bridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hayloft/hayloft/sdk"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// fakeServer builds testdata/fakeserver once per test binary.
func fakeServer(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := filepath.Abs("testdata/fakeserver")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(tempDir, "fakeserver")
		out, err := exec.Command("go", "build", "-o", binPath, dir).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build fakeserver: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

var tempDir string

func TestMain(m *testing.M) {
	if bin := os.Getenv("BRIDGE_TEST_HELPER"); bin != "" {
		orphanHelper(bin)
		return
	}
	dir, err := os.MkdirTemp("", "bridge-test-")
	if err != nil {
		panic(err)
	}
	tempDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer collects log output from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newBridge(t *testing.T, opts map[string]any) (*Model, *syncBuffer, error) {
	t.Helper()
	logs := &syncBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Name: "test", Output: logs, Level: hclog.Debug})
	m, err := NewWithLogger(context.Background(), sdk.MustOptions(opts), log)
	if err != nil {
		return nil, logs, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = m.Provision(ctx)
	t.Cleanup(func() { m.Close() })
	return m, logs, err
}

func chat(s string) *sdk.GenerateRequest {
	return &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: "The secret colour is blue.\nWhat is the secret colour? " + s}}}
}

// pids reads the "pid N" lines the stand-in prints.
func pids(logs string) []int {
	var out []int
	for _, m := range regexp.MustCompile(`pid (\d+)`).FindAllStringSubmatch(logs, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

// alive reports whether pid runs. A zombie counts as gone: an orphaned
// grandchild waits for init to reap it, which is not the bridge's doing.
func alive(pid int) bool {
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// The state follows the parenthesised command name.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	return syscall.Kill(pid, 0) == nil
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestOptions(t *testing.T) {
	tests := []struct {
		name  string
		opts  map[string]any
		field string
	}{
		{"no command", map[string]any{}, "command"},
		{"no port placeholder", map[string]any{"command": []string{"vllm", "serve", "m"}}, "command"},
		{"base_url", map[string]any{"command": []string{"x", "{port}"}, "base_url": "http://h/v1"}, "base_url"},
		{"bad ready_timeout", map[string]any{"command": []string{"x", "{port}"}, "ready_timeout": "later"}, "ready_timeout"},
		{"bad stop_grace", map[string]any{"command": []string{"x", "{port}"}, "stop_grace": "-1s"}, "stop_grace"},
		{"bad health_path", map[string]any{"command": []string{"x", "{port}"}, "health_path": "health"}, "health_path"},
		{"bad gpus", map[string]any{"command": []string{"x", "{port}"}, "gpus": true}, "gpus"},
		{"bad env", map[string]any{"command": []string{"x", "{port}"}, "env": map[string]string{"A=B": "c"}}, "env"},
		{"openai option checked", map[string]any{"command": []string{"x", "{port}"}, "endpoint": "nope"}, "endpoint"},
		{"unknown option", map[string]any{"command": []string{"x", "{port}"}, "comand": 1}, "comand"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(context.Background(), sdk.MustOptions(tt.opts))
			var ce *sdk.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Fatalf("err = %v, want ConfigError on %q", err, tt.field)
			}
		})
	}
}

func TestServeAndClose(t *testing.T) {
	bin := fakeServer(t)
	m, logs, err := newBridge(t, map[string]any{
		"command": []string{bin, "-port", "{port}", "-startup-delay", "300ms"},
		"env":     map[string]string{"BRIDGE_TEST": "yes"},
		"gpus":    []int{2, 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Generate(context.Background(), chat(""))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "The secret colour is blue." {
		t.Errorf("text = %q", resp.Text)
	}
	tok, err := m.Tokenize(context.Background(), &sdk.TokenizeRequest{Texts: []string{"a b c"}})
	if err == nil {
		t.Errorf("tokenizer not enabled but Tokenize answered %v", tok)
	}
	if err := m.Validate(context.Background()); err != nil {
		t.Errorf("Validate: %v", err)
	}
	out := logs.String()
	for _, want := range []string{"CUDA_VISIBLE_DEVICES=2,3 BRIDGE_TEST=yes", "test.fakeserver", "INFO loading weights", "stream=stderr", "server ready"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	ps := pids(out)
	if len(ps) != 1 {
		t.Fatalf("pids %v", ps)
	}
	m.Close()
	waitGone(t, ps[0])
	if _, err := m.Generate(context.Background(), chat("")); err == nil {
		t.Error("Generate after Close succeeded")
	}
}

func TestNeverReady(t *testing.T) {
	bin := fakeServer(t)
	start := time.Now()
	_, logs, err := newBridge(t, map[string]any{
		"command":       []string{bin, "-port", "{port}", "-never-ready"},
		"ready_timeout": "1s",
	})
	if err == nil || !strings.Contains(err.Error(), "not ready within ready_timeout 1s") || !strings.Contains(err.Error(), "INFO loading weights") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d < time.Second || d > 10*time.Second {
		t.Errorf("gave up after %v", d)
	}
	for _, pid := range pids(logs.String()) {
		waitGone(t, pid)
	}
}

func TestExitsAtStartup(t *testing.T) {
	bin := fakeServer(t)
	start := time.Now()
	_, _, err := newBridge(t, map[string]any{"command": []string{bin, "-port", "{port}", "-exit-code", "7"}})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready (exit status 7)") || !strings.Contains(err.Error(), "CUDA out of memory") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("noticed the exit after %v", d)
	}
}

func TestMissingBinary(t *testing.T) {
	_, _, err := newBridge(t, map[string]any{"command": []string{filepath.Join(t.TempDir(), "no-such-server"), "{port}"}})
	if err == nil || !strings.Contains(err.Error(), "no-such-server") {
		t.Fatalf("err = %v", err)
	}
}

// The server dies mid-run: the bridge restarts it once, and the request
// that saw the death still gets its answer; a second death is final.
func TestRestartOnceThenFail(t *testing.T) {
	bin := fakeServer(t)
	m, logs, err := newBridge(t, map[string]any{
		"command":     []string{bin, "-port", "{port}", "-die-after", "2"},
		"max_retries": 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 4 { // 2 on the first server, death, 2 on the second
		if _, err := m.Generate(ctx, chat(fmt.Sprint(i))); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if ps := pids(logs.String()); len(ps) != 2 {
		t.Fatalf("want two server runs, got pids %v", ps)
	}
	_, err = m.Generate(ctx, chat("fatal"))
	if err == nil || !strings.Contains(err.Error(), "died again after a restart") || !strings.Contains(err.Error(), "engine core died") {
		t.Fatalf("err = %v", err)
	}
	if _, again := m.Generate(ctx, chat("after")); again == nil || again.Error() != err.Error() {
		t.Errorf("later call: %v", again)
	}
	for _, pid := range pids(logs.String()) {
		waitGone(t, pid)
	}
}

// A server that ignores SIGTERM is killed after stop_grace, and so is a
// server started through a shell (the whole group goes).
func TestCloseKillsGroup(t *testing.T) {
	bin := fakeServer(t)
	m, logs, err := newBridge(t, map[string]any{
		"command":    []string{"sh", "-c", bin + " -port {port} -ignore-term; echo shell done"},
		"stop_grace": "300ms",
	})
	if err != nil {
		t.Fatal(err)
	}
	ps := pids(logs.String())
	if len(ps) != 1 {
		t.Fatalf("pids %v", ps)
	}
	start := time.Now()
	m.Close()
	if d := time.Since(start); d < 300*time.Millisecond || d > 5*time.Second {
		t.Errorf("Close took %v, want about the 300ms grace", d)
	}
	waitGone(t, ps[0])
}

// orphanHelper runs in a child test process: it starts a bridge, reports
// through its log on stdout, and waits to be killed.
func orphanHelper(bin string) {
	log := hclog.New(&hclog.LoggerOptions{Name: "helper", Output: os.Stdout})
	m, err := NewWithLogger(context.Background(), sdk.MustOptions(map[string]any{"command": []string{bin, "-port", "{port}"}}), log)
	if err == nil {
		err = m.Provision(context.Background())
	}
	if err != nil {
		fmt.Println("helper failed:", err)
		os.Exit(1)
	}
	select {}
}

// A hayloft process killed outright (no Close) must not leave the server
// behind.
func TestServerDiesWithKilledParent(t *testing.T) {
	bin := fakeServer(t)
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), "BRIDGE_TEST_HELPER="+bin)
	var out syncBuffer
	helper.Stdout = &out
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "server ready") {
		if time.Now().After(deadline) || strings.Contains(out.String(), "helper failed") {
			helper.Process.Kill()
			helper.Wait()
			t.Fatalf("helper did not start a server:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	ps := pids(out.String())
	if len(ps) != 1 {
		t.Fatalf("pids %v in\n%s", ps, out.String())
	}
	helper.Process.Kill()
	helper.Wait()
	waitGone(t, ps[0])
}
