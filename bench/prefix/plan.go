package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// Planning a large grid: `hayloft plan` on a 35 × 35 NIAH grid to 128K
// tokens over Go's Opticks, calling no model. It once held every fitted
// prompt of the eval (748 MB at peak); the planner now keeps only the
// order's look-ahead and the cache models' block names.
//
// Targets (hayloft's choice; the issue asks for "seconds"): at most 20 s of
// CPU, and at most 300 MB of peak resident memory (the process tree's
// largest, as wait4 reports it).
const (
	planTargetCPU = 20 * time.Second
	planTargetRSS = 300 << 20
)

// planGrid is the config planned.
const planGrid = `task "niah" "grid" {
  haystack         = %q
  min_length       = 1000
  max_length       = 128000
  length_intervals = 35
  min_depth        = 0
  max_depth        = 100
  depth_intervals  = 35
}
model "openai" "far" {
  base_url       = "http://127.0.0.1:1/v1"
  model          = "nobody"
  context_window = 131072
  max_tokens     = 50
}
eval "needle" {
  task    = task.niah.grid
  models  = [model.openai.far]
  scorers = ["niah"]
}
`

// benchPlan builds hayloft unless bin names one, plans the grid and prints
// the figures beside their targets.
func benchPlan(out io.Writer, bin string) error {
	dir, err := os.MkdirTemp("", "hayloft-plan-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin == "" {
		bin = filepath.Join(dir, "hayloft")
		build := exec.Command("go", "build", "-o", bin, "github.com/hayloft/hayloft/cmd/hayloft")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build hayloft: %w", err)
		}
	}
	cfg := filepath.Join(dir, "grid.hcl")
	haystack := filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, planGrid, haystack), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(bin, "plan", cfg, "--json")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hayloft plan: %w", err)
	}
	wall := time.Since(t0)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	rss := peakRSS(cmd.ProcessState)
	fmt.Fprintf(out, "plan, NIAH 35 × 35 to 128K tokens (1225 prompts, no model called)\n")
	fmt.Fprintf(out, "  wall %.1f s (loaded machines inflate it)\n", wall.Seconds())
	fmt.Fprintf(out, "  CPU  %.1f s     target ≤ %.0f s   %s\n", cpu.Seconds(), planTargetCPU.Seconds(), verdict(cpu <= planTargetCPU))
	if rss > 0 {
		fmt.Fprintf(out, "  peak RSS %d MB  target ≤ %d MB  %s\n", rss>>20, planTargetRSS>>20, verdict(rss <= planTargetRSS))
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
