//go:build unix

package scoreio

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hayloft/hayloft/plugins/scorers/bleu"
	"github.com/hayloft/hayloft/plugins/scorers/rougel"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

// benchInput is one of the fixed speed-comparison inputs of
// ../shared/bench (see its README); benchmarks skip without it.
func benchInput(b *testing.B, name string) []byte {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "bench", name))
	if err != nil {
		b.Skipf("bench input: %v", err)
	}
	return data
}

// BenchmarkRun is `hayloft score` in process over the shared inputs: the
// cost of scoreio plus the scorer, without the plugin hop.
func BenchmarkRun(b *testing.B) {
	for _, bc := range []struct {
		name, input string
		new         factory
		aggregate   bool
	}{
		{"bleu", "bleu_pairs.jsonl", bleu.New, false},
		{"bleu_aggregate", "bleu_pairs.jsonl", bleu.New, true},
		{"rougel", "rouge_pairs.jsonl", rougel.New, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := benchInput(b, bc.input)
			sc, err := bc.new(context.Background(), nil)
			if err != nil {
				b.Fatal(err)
			}
			lines := bytes.Count(in, []byte("\n"))
			b.ResetTimer()
			cpu0 := cpuSeconds()
			for i := 0; i < b.N; i++ {
				if err := Run(context.Background(), sc, bytes.NewReader(in), io.Discard, bc.aggregate); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(lines*b.N)/b.Elapsed().Seconds(), "pairs/s")
			// The machines are shared: CPU time is the steadier figure.
			b.ReportMetric(float64(lines*b.N)/(cpuSeconds()-cpu0), "pairs/cpu-s")
		})
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkParse is the host's JSON work per line of bench/score's BLEU
// row, without the scorer: splitting each line into its fields and
// decoding the prediction and references, then writing an output line
// with a plugin's details (appendLine walks them to add "invalid" and
// "value").
func BenchmarkParse(b *testing.B) {
	in := benchInput(b, "bleu_pairs.jsonl")
	lines := bytes.SplitAfter(in, []byte("\n"))
	details := []byte(`{"bp":0.8187307530779819,"counts":[20,12,7,4],"precisions":[66.66666666666667,42.857142857142854,28,17.391304347826086],"ref_len":36,"score":31.32109487433328,"sys_len":30,"totals":[30,28,25,23]}`)
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			bt := &batch{}
			for i, line := range lines {
				if len(line) > 1 {
					if it := bt.parse(line, i+1, false); it.err != nil {
						b.Fatal(it.err)
					}
				}
				if len(bt.items) == batchLines {
					bt = &batch{}
				}
			}
		}
	})
	b.Run("write", func(b *testing.B) {
		bt := &batch{}
		var items []*item
		for i, line := range lines[:batchLines] {
			it := bt.parse(line, i+1, false)
			it.res = plugin.ScoreResult{Response: &sdk.ScoreResponse{Value: 31.32109487433328}, DetailsJSON: details}
			items = append(items, it)
		}
		var out []byte
		for b.Loop() {
			for _, it := range items {
				var err error
				if out, err = appendLine(out[:0], it); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
