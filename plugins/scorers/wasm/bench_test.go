package wasm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// callTarget is issue 16's target for one pooled call of the keyword
// coverage example, serial.
const callTarget = 50 * time.Microsecond

// BenchmarkKeywordCoverage measures one call of the keyword-coverage
// example, a short answer against a one-line reference. Each serial row
// logs its wall and CPU time per call beside the target: on a shared
// machine the CPU time is the steadier figure.
func BenchmarkKeywordCoverage(b *testing.B) {
	h := open(b, "coverage", nil)
	req := &sdk.ScoreRequest{
		Sample:     &sdk.Sample{ID: "b", Targets: []string{"The Light whose Rays are all alike Refrangible, I call Simple, Homogeneal and Similar"}},
		Prediction: "Light whose rays are alike refrangible is called simple and homogeneal by Newton",
	}
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		perCall(b, "pooled", callTarget, func() error {
			_, err := h.Score(ctx, req)
			return err
		})
	})
	// fresh_instance = true: a module start per call, as every call cost
	// before instances were pooled.
	fresh := open(b, "coverage", map[string]any{"fresh_instance": true})
	b.Run("serial_fresh", func(b *testing.B) {
		perCall(b, "fresh_instance", callTarget, func() error {
			_, err := fresh.Score(ctx, req)
			return err
		})
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := h.Score(ctx, req); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	})
}

// BenchmarkCallFloor is the least a pooled call costs: a version 2 module
// that decodes its input and returns a value, with no scoring work. The
// rest of a scorer's figure is its own code.
func BenchmarkCallFloor(b *testing.B) {
	h := open(b, "badwire", nil)
	ctx := context.Background()
	req := &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "f", Targets: []string{"ok"}}, Prediction: "ok"}
	perCall(b, "floor (decode, no scoring)", 0, func() error {
		_, err := h.Score(ctx, req)
		return err
	})
}

// perCall runs call b.N times and reports wall and CPU time per call, and
// logs them beside target unless it is 0.
func perCall(b *testing.B, what string, target time.Duration, call func() error) {
	b.Helper()
	cpu0, cpuOK := cpuTime()
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	cpu1, _ := cpuTime()
	n := float64(b.N)
	wall := b.Elapsed().Seconds() / n * 1e6
	b.ReportMetric(n/b.Elapsed().Seconds(), "calls/s")
	line := fmt.Sprintf("%s: %.1f µs wall", what, wall)
	if cpuOK {
		cpu := (cpu1 - cpu0).Seconds() / n * 1e6
		b.ReportMetric(cpu, "cpu-µs/call")
		line += fmt.Sprintf(", %.1f µs CPU", cpu)
	}
	if target > 0 {
		t := target.Seconds() * 1e6
		line += fmt.Sprintf(" per call; target ≤ %.0f µs: %s", t, versus(wall, t))
	} else {
		line += " per call"
	}
	b.Log(line)
}

// versus says how far a figure is from its target, smaller being better.
func versus(have, target float64) string {
	if have <= target {
		return "meets it"
	}
	return fmt.Sprintf("%.1f× over", have/target)
}
