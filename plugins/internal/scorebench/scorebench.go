//go:build unix

// Package scorebench is the shared harness of the metric benchmarks: the
// same deterministic prediction/reference pairs for every metric, and the
// same figures reported, so pairs/s compare across scorers. Tests only.
package scorebench

import (
	"context"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

// Pairs builds n (reference, prediction) pairs of about 200 words from Go's
// public-domain Opticks text: the reference a window of the text, the
// prediction an overlapping window with every seventh word dropped.
func Pairs(tb testing.TB, n int) (refs, preds []string) {
	data, err := os.ReadFile(sdktest.OpticksPath())
	if err != nil {
		tb.Skipf("Opticks text not available: %v", err)
	}
	words := strings.Fields(string(data))
	for i := 0; i < n; i++ {
		start := (i * 37) % (len(words) - 260)
		refs = append(refs, strings.Join(words[start:start+200], " "))
		var p []string
		for j, w := range words[start+20 : start+220] {
			if j%7 != 3 {
				p = append(p, w)
			}
		}
		preds = append(preds, strings.Join(p, " "))
	}
	return refs, preds
}

// Run scores 10,000 pairs round-robin with s and reports pairs/s and, since
// the machines are shared and wall time overstates the cost, pairs per CPU
// second of this process.
func Run(b *testing.B, s sdk.Scorer) {
	refs, preds := Pairs(b, 10000)
	ctx := context.Background()
	runtime.GC()
	b.ResetTimer()
	cpu0 := cpuSeconds()
	for i := 0; i < b.N; i++ {
		k := i % len(refs)
		if _, err := s.Score(ctx, &sdk.ScoreRequest{Sample: &sdk.Sample{Targets: refs[k : k+1]}, Prediction: preds[k]}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(float64(b.N)/(cpuSeconds()-cpu0), "pairs/cpu-s")
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
