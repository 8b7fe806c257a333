package countingstars

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// BenchmarkReferenceDatasets materialises the four reference datasets
// (EN on Opticks, ZH on the reference novel; acquisition and reasoning; 32
// sizes up to 128K each), tokens counted, as a run would. Targets: under 3 s
// and 300 MB peak RSS together. It reports the peak live heap seen between
// samples and the process's peak RSS.
func BenchmarkReferenceDatasets(b *testing.B) {
	paths := map[string]string{English: opticksPath(b), Chinese: stonePath(b)}
	var peakHeap uint64
	var ms runtime.MemStats
	for b.Loop() {
		for _, lang := range []string{English, Chinese} {
			for _, mode := range []string{Acquisition, Reasoning} {
				task, err := New(context.Background(), sdk.MustOptions(map[string]any{"language": lang, "mode": mode, "haystack": paths[lang]}))
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for s, err := range task.Samples(context.Background(), nil) {
					if err != nil {
						b.Fatal(err)
					}
					n += len(s.Context)
					runtime.ReadMemStats(&ms)
					peakHeap = max(peakHeap, ms.HeapAlloc)
				}
				if n == 0 {
					b.Fatal("no context generated")
				}
			}
		}
	}
	b.ReportMetric(float64(peakHeap)/1e6, "peak-heap-MB")
	if rss := peakRSS(); rss > 0 {
		b.ReportMetric(float64(rss)/1e6, "peak-RSS-MB")
	}
}

// peakRSS reads VmHWM from /proc (Linux); 0 elsewhere.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}
