package pluginhost

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hayloft/hayloft/sdk"
)

// Test plugin binaries, built once in TestMain.
var (
	pluginBin   string // speaks hayloft.plugin.v1
	pluginBinV2 string // the same code built to speak hayloft.plugin.v2
)

// parentEnv makes the test binary act as a hayloft that opens plugins and
// then waits to be killed (TestNoOrphansAfterParentKilled).
const parentEnv = "PLUGINHOST_TEST_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(parentEnv) != "" {
		parentMain(os.Getenv(parentEnv))
		return
	}
	dir, err := os.MkdirTemp("", "pluginhost-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginBin = filepath.Join(dir, "testplugin")
	pluginBinV2 = filepath.Join(dir, "testplugin-v2")
	builds := [][]string{
		{"build", "-o", pluginBin, "./testdata/testplugin"},
		{"build", "-o", pluginBinV2, "-ldflags", "-X github.com/hayloft/hayloft/sdk/plugin.protocolVersionOverride=2", "./testdata/testplugin"},
	}
	for _, args := range builds {
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go %s: %v\n%s", strings.Join(args, " "), err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// parentMain opens a task and a model, prints "ready", and sleeps until it
// is killed.
func parentMain(bin string) {
	h, err := New(Options{SelfExe: bin, Logger: hclog.NewNullLogger()})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	for _, k := range []struct {
		kind sdk.Kind
		name string
	}{{sdk.KindTask, "count"}, {sdk.KindModel, "echo"}} {
		if _, err := h.Open(ctx, k.kind, k.name, "", nil); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	fmt.Println("ready")
	time.Sleep(time.Hour)
}

// children lists the live (non-zombie) child processes of pid.
func children(t testing.TB, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		rest := b[bytes.LastIndexByte(b, ')')+1:]
		f := strings.Fields(string(rest))
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// waitNoChildren fails unless this process has no children within d.
func waitNoChildren(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		kids := children(t, os.Getpid())
		if len(kids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child processes still running: %v", kids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var orphanChecked sync.Map // *testing.T → true

// newHost returns a Host whose built-ins are the test plugin, closed at
// the end of the test, after which no child process may remain.
func newHost(t *testing.T, opts Options) *Host {
	t.Helper()
	if opts.SelfExe == "" && !opts.InProcess {
		opts.SelfExe = pluginBin
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-in first-out: the orphan check registered with a
	// test's first host runs after every host of the test is closed.
	if _, seen := orphanChecked.LoadOrStore(t, true); !seen {
		t.Cleanup(func() {
			orphanChecked.Delete(t)
			waitNoChildren(t, 5*time.Second)
		})
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("host close: %v", err)
		}
	})
	return h
}

func copyBinary(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}

// readLine reads one line from r within d.
func readLine(r *bufio.Reader, d time.Duration) (string, error) {
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := r.ReadString('\n')
		ch <- res{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-time.After(d):
		return "", fmt.Errorf("no line within %v", d)
	}
}
