package niah

import (
	"context"
	"runtime"
	"syscall"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// BenchmarkGrid128K materialises upstream's 35×35 grid up to 128K tokens:
// 1225 samples, lengths round(linspace(1000, 128000, 35)), from reading and
// tokenizing the haystack to the last context. Targets: < 5 s, < 300 MB peak.
func BenchmarkGrid128K(b *testing.B) {
	hay := opticksPath(b)
	var peakHeap uint64
	var ms runtime.MemStats
	for b.Loop() {
		task, err := New(context.Background(), sdk.MustOptions(map[string]any{
			"haystack": hay, "min_length": 1000, "max_length": 128000, "length_intervals": 35, "depth_intervals": 35,
		}))
		if err != nil {
			b.Fatal(err)
		}
		n, bytes := 0, 0
		for s, err := range task.Samples(context.Background(), nil) {
			if err != nil {
				b.Fatal(err)
			}
			n++
			bytes += len(s.Context)
			if n%35 == 0 {
				runtime.ReadMemStats(&ms)
				peakHeap = max(peakHeap, ms.HeapAlloc)
			}
		}
		if n != 35*35 {
			b.Fatalf("%d samples", n)
		}
		b.ReportMetric(float64(bytes)/1e6, "MB-of-context/op")
	}
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MiB") // Linux reports KiB
	}
}
