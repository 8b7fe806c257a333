package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

const killHelperEnv = "HAYLOFT_STORE_KILL_HELPER"

// TestHelperProcess is the child of TestKillDuringWrites: it writes
// responses from many goroutines and prints each key once PutResponse has
// returned, until it is killed.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(killHelperEnv)
	if path == "" {
		t.Skip("runs only as the child of TestKillDuringWrites")
	}
	ctx := context.Background()
	s, err := OpenWith(ctx, path, Options{Sync: Sync(os.Getenv(killHelperEnv + "_SYNC"))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// A parent that died without killing us must not leave us running.
	time.AfterFunc(30*time.Second, func() { os.Exit(4) })
	k, err := NewKeyer(testIdentity())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	round := os.Getenv(killHelperEnv + "_ROUND")
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for w := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				req := testRequest(i)
				req.Messages[0].Content = fmt.Sprintf("round %s writer %d request %d", round, w, i)
				r, err := k.Request(req)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(3)
				}
				key := r.Key
				resp := &sdk.GenerateResponse{Text: "answer " + key[:12], FinishReason: "stop"}
				if err := s.PutResponse(ctx, k, r, resp, time.Millisecond); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(3)
				}
				mu.Lock()
				fmt.Fprintln(os.Stdout, key) // os.Stdout is unbuffered: printed means written to the pipe
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// A response whose PutResponse returned survives SIGKILL at any moment,
// whether the log is fsynced or only written.
func TestKillDuringWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, sync := range []Sync{SyncBatch, SyncOS} {
		t.Run(string(sync), func(t *testing.T) { testKillDuringWrites(t, sync) })
	}
}

func testKillDuringWrites(t *testing.T, sync Sync) {
	path := filepath.Join(t.TempDir(), "hayloft.db")
	var acknowledged []string
	for round := range 3 {
		keys := killChildMidWrite(t, path, sync, round, 300+200*round)
		if len(keys) < 300 {
			t.Fatalf("round %d: child acknowledged only %d writes", round, len(keys))
		}
		acknowledged = append(acknowledged, keys...)
	}

	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer s.Close()
	for _, key := range acknowledged {
		c, ok, err := s.LookupResponse(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Errorf("acknowledged response %s lost", key)
			continue
		}
		if c.Response.Text != "answer "+key[:12] {
			t.Errorf("response %s has text %q", key, c.Response.Text)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(path+logDirSuffix, "*.log")); len(left) != 0 {
		t.Errorf("the dead processes' logs were not fed and removed: %v", left)
	}
	// A kill leaves a torn tail at worst, never damage.
	if kept, _ := filepath.Glob(filepath.Join(path+logDirSuffix, "*"+damagedSuffix)); len(kept) != 0 {
		t.Errorf("a killed process's log was taken for a damaged one: %v", kept)
	}
	if !t.Failed() {
		t.Logf("%d acknowledged responses over 3 kills, all present", len(acknowledged))
	}
}

// killChildMidWrite starts the helper on path, SIGKILLs it once it has
// acknowledged after writes, and returns every key it acknowledged,
// including those still in the pipe when it died.
func killChildMidWrite(t *testing.T, path string, sync Sync, round, after int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), killHelperEnv+"="+path, fmt.Sprintf("%s_ROUND=%d", killHelperEnv, round),
		killHelperEnv+"_SYNC="+string(sync))
	var stderr bytes.Buffer // written by exec's copier, read after Wait
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		if line := sc.Text(); len(line) == 64 {
			keys = append(keys, line)
		}
		if !killed && len(keys) >= after {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("round %d: child ended with %v; stderr:\n%s", round, err, stderr.String())
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("round %d: child was not killed by SIGKILL: %v; stderr:\n%s", round, err, stderr.String())
	}
	return keys
}
