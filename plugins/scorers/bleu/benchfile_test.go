package bleu

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// benchPairs reads ../shared/bench/bleu_pairs.jsonl, the input of
// bench/score's BLEU rows, as score requests; benchmarks skip without it.
func benchPairs(b *testing.B) []*sdk.ScoreRequest {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "shared", "bench", "bleu_pairs.jsonl"))
	if err != nil {
		b.Skipf("bench input: %v", err)
	}
	var reqs []*sdk.ScoreRequest
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Prediction string   `json:"prediction"`
			References []string `json:"references"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			b.Fatal(err)
		}
		reqs = append(reqs, &sdk.ScoreRequest{Sample: &sdk.Sample{Targets: line.References}, Prediction: line.Prediction})
	}
	return reqs
}

// BenchmarkBenchFile is the metric's share of bench/score's BLEU rows, in
// one goroutine: sentence BLEU of every pair of the file with its details
// as a plugin writes them, the same for an aggregate (no details), and
// corpus BLEU with its bootstrap over the file's statistics.
func BenchmarkBenchFile(b *testing.B) {
	reqs := benchPairs(b)
	s, err := newScorer(nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, agg := range []bool{false, true} {
		name := "sentence"
		if agg {
			name = "for_aggregate"
		}
		b.Run(name, func(b *testing.B) {
			var buf []byte
			cpu0 := cpuSeconds()
			for b.Loop() {
				for _, r := range reqs {
					r.ForAggregate = agg
					_, d, err := s.ScoreDetailsJSON(ctx, r, buf[:0])
					if err != nil {
						b.Fatal(err)
					}
					if d != nil {
						buf = d
					}
				}
			}
			b.ReportMetric((cpuSeconds()-cpu0)*1e3/float64(b.N), "cpu-ms/file")
		})
	}
	b.Run("corpus", func(b *testing.B) {
		scores := make([]*sdk.ScoreResponse, len(reqs))
		for i, r := range reqs {
			if scores[i], err = s.Score(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		cpu0 := cpuSeconds()
		for b.Loop() {
			if _, err := s.Aggregate(ctx, &sdk.AggregateRequest{Scores: scores}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((cpuSeconds()-cpu0)*1e3/float64(b.N), "cpu-ms/file")
	})
}

// cpuSeconds is this process's CPU time: the machines are shared, and wall
// time overstates the cost.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
