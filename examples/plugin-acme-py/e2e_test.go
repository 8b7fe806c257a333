package acmepy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const acmeConfig = `plugin "acme" {
  source = %q
  sha256 = %q
}

task "arith" "small" {
  count = 10
}

model "baseline" "extractive" {}

scorer "numeric" "strict" {
  tolerance = 0
}

eval "arith" {
  task    = task.arith.small
  models  = [model.baseline.extractive]
  scorers = [scorer.numeric.strict]
}
`

type runJSON struct {
	Evals []struct {
		Name, Task              string
		Samples, Cached, Errors int
		Metrics                 map[string]*struct {
			Value      float64
			N, Invalid int
		}
		Error string
	}
}

func parseRun(t *testing.T, r result) runJSON {
	t.Helper()
	var res runJSON
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != 0 || err != nil || len(res.Evals) != 1 {
		t.Fatalf("exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	return res
}

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEndToEnd runs `hayloft run` on the Python example, pinned by sha256.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hayloft")
	}
	pyz, sum := packOnce(t, ".", "acme")
	hayloft := build(t)
	dir := t.TempDir()
	cfg := writeFile(t, filepath.Join(dir, "acme.hcl"), fmt.Sprintf(acmeConfig, pyz, sum))
	store := filepath.Join(dir, "journal.db")

	t.Run("run", func(t *testing.T) {
		ev := parseRun(t, runBin(t, dir, hayloft, "run", cfg, "--json", "--store", store)).Evals[0]
		if ev.Error != "" || ev.Samples != 10 || ev.Errors != 0 || ev.Task != "task.arith.small" {
			t.Fatalf("eval %+v, want 10 samples of task.arith.small", ev)
		}
		m := ev.Metrics["scorer.numeric.strict"]
		if m == nil || m.N+m.Invalid != 10 {
			t.Fatalf("metrics %v: want scorer.numeric.strict over 10 samples", ev.Metrics)
		}
	})

	t.Run("run again", func(t *testing.T) {
		ev := parseRun(t, runBin(t, dir, hayloft, "run", cfg, "--json", "--store", store)).Evals[0]
		if ev.Samples != 10 || ev.Cached != 10 {
			t.Fatalf("second run: %d samples, %d cached; want all 10 from the journal", ev.Samples, ev.Cached)
		}
	})

	t.Run("bad option points at its line", func(t *testing.T) {
		for _, tt := range []struct{ from, to, want string }{
			{"count = 10", "count = 0", "count.hcl:7:"},
			{"tolerance = 0", "tolerence = 0", "count.hcl:13:"},
		} {
			bad := writeFile(t, filepath.Join(dir, "count.hcl"), strings.Replace(fmt.Sprintf(acmeConfig, pyz, sum), tt.from, tt.to, 1))
			for _, cmd := range []string{"validate", "run"} {
				r := runBin(t, dir, hayloft, cmd, bad, "--store", store)
				if r.code == 0 || !strings.Contains(r.stderr, tt.want) {
					t.Errorf("%s with %q: exit %d; want an error at %s:\n%s", cmd, tt.to, r.code, tt.want, r.stderr)
				}
			}
		}
	})

	t.Run("path option beside the config file", func(t *testing.T) {
		// filler_file is a path option (path_option in acme.py): written
		// relative, it names the file beside the config, wherever hayloft
		// runs from; unresolved, the task could not open it and the run
		// would fail at filler_file's line.
		cdir := t.TempDir()
		writeFile(t, filepath.Join(cdir, "filler.txt"), "Hay is for horses.\nThe loft is full.\n")
		text := strings.Replace(fmt.Sprintf(acmeConfig, pyz, sum), "count = 10", "count = 10\n  filler_file = \"filler.txt\"", 1)
		cfg := writeFile(t, filepath.Join(cdir, "paths.hcl"), text)
		ev := parseRun(t, runBin(t, t.TempDir(), hayloft, "run", cfg, "--json", "--store", filepath.Join(t.TempDir(), "j.db"))).Evals[0]
		if ev.Error != "" || ev.Samples != 10 || ev.Errors != 0 {
			t.Fatalf("eval %+v: want 10 samples with the filler beside the config", ev)
		}
		r := runBin(t, t.TempDir(), hayloft, "validate", writeFile(t, filepath.Join(cdir, "missing.hcl"), strings.Replace(text, "filler.txt", "nofile.txt", 1)))
		if r.code == 0 || !strings.Contains(r.stderr, "missing.hcl:8:") || !strings.Contains(r.stderr, filepath.Join(cdir, "nofile.txt")) {
			t.Fatalf("validate with a missing filler_file: exit %d; want an error at missing.hcl:8 naming %s:\n%s", r.code, filepath.Join(cdir, "nofile.txt"), r.stderr)
		}
	})

	t.Run("wrong sha256", func(t *testing.T) {
		wrong := strings.Repeat("0", 64)
		bad := writeFile(t, filepath.Join(dir, "sha.hcl"), fmt.Sprintf(acmeConfig, pyz, wrong))
		r := runBin(t, dir, hayloft, "run", bad, "--store", store)
		if r.code == 0 || !strings.Contains(r.stderr, wrong) || !strings.Contains(r.stderr, sum) {
			t.Fatalf("exit %d; want a refusal naming both hashes:\n%s", r.code, r.stderr)
		}
	})

	t.Run("a scorer raising on one sample", func(t *testing.T) {
		bad, badSum := packOnce(t, "testdata", "bad")
		text := fmt.Sprintf(acmeConfig, pyz, sum) + fmt.Sprintf(`
plugin "bad" {
  source = %q
  sha256 = %q
}

eval "raises" {
  task    = task.arith.small
  models  = [model.baseline.extractive]
  scorers = ["raises"]
}
`, bad, badSum)
		cfg := writeFile(t, filepath.Join(dir, "raises.hcl"), text)
		ev := parseRun(t, runBin(t, dir, hayloft, "run", cfg, "--json", "--store", filepath.Join(t.TempDir(), "j.db"), "--eval", "raises")).Evals[0]
		m := ev.Metrics["raises"]
		// The mean over the samples scored is 1: the one that raised is
		// counted invalid, not scored 0.
		if ev.Error != "" || ev.Samples != 10 || ev.Errors != 0 || m == nil || m.Invalid != 1 || m.Value != 1 {
			t.Fatalf("eval %+v metrics %+v: want 9 samples scored and the one that raised recorded invalid", ev, m)
		}
	})
}

// TestKillHayloft: a hayloft killed with SIGKILL leaves no Python plugin
// process behind.
func TestKillHayloft(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hayloft")
	}
	bad, sum := packOnce(t, "testdata", "bad")
	hayloft := build(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "task.pid")
	cfg := writeFile(t, filepath.Join(dir, "slow.hcl"), fmt.Sprintf(`
plugin "bad" {
  source = %q
  sha256 = %q
}
task "slow" "s" {
  pid_file = %q
}
model "baseline" "extractive" {}
eval "slow" {
  task    = task.slow.s
  models  = [model.baseline.extractive]
  scorers = ["exact"]
}
`, bad, sum, pidFile))
	cmd := exec.Command(hayloft, "run", cfg, "--store", filepath.Join(dir, "j.db"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := waitPID(t, pidFile, cmd)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The plugin polls its parent every 200 ms.
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("python plugin %d outlived the hayloft killed with SIGKILL", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitPID waits for the task to write its pid: the run is under way.
func waitPID(t *testing.T, path string, cmd *exec.Cmd) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			pid, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the plugin's task never started")
	return 0
}

// alive reports whether pid runs (a zombie waiting for its reaper does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}
