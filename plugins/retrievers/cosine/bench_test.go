package cosine

import (
	"bufio"
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/tokenizer"
)

// peakRSS reports the process's peak resident set (VmHWM) in MiB, or 0
// where /proc is not available.
func peakRSS() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

// BenchmarkRAG1M is the whole cosine path on a document of about a million
// cl100k tokens (Opticks, repeated): chunking and hashing-embedding it once
// (reported as index-s), then one op = 100 questions retrieved against it.
func BenchmarkRAG1M(b *testing.B) {
	ctx := context.Background()
	text := opticks(b)
	enc, err := tokenizer.Get("cl100k_base")
	if err != nil {
		b.Fatal(err)
	}
	var doc strings.Builder
	per := enc.Count(text)
	for copyN := 0; copyN*per < 1_000_000; copyN++ {
		doc.WriteString(text)
		doc.WriteString("\nCopy " + strconv.Itoa(copyN) + " ends here.\n")
	}
	context1M := doc.String()
	tokens := enc.Count(context1M)
	lines := strings.Split(text, "\n")
	var questions []string
	for i := 0; len(questions) < 100; i += 97 {
		if l := strings.TrimSpace(lines[i%len(lines)]); len(l) > 40 {
			questions = append(questions, l)
		}
	}

	r, err := NewRetriever(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	resp, err := r.Retrieve(ctx, &sdk.RetrieveRequest{Sample: &sdk.Sample{Context: context1M, Question: questions[0]}})
	if err != nil {
		b.Fatal(err)
	}
	index := time.Since(start)
	b.ResetTimer()
	for b.Loop() {
		for _, q := range questions {
			if _, err := r.Retrieve(ctx, &sdk.RetrieveRequest{Sample: &sdk.Sample{Context: context1M, Question: q}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(index.Seconds(), "index-s")
	b.ReportMetric(float64(tokens), "doc-tokens")
	b.ReportMetric(float64(resp.Details["chunks"].(int)), "chunks")
	b.ReportMetric(peakRSS(), "peak-RSS-MiB")
}

// BenchmarkTopK100kx768 measures exact top-5 over 100,000 unit vectors of
// 768 dimensions (a 307 MB matrix) as bytes of matrix read per second, next
// to a plain read of the same memory with the same number of goroutines:
// scoring is memory-bound, so the two should be close.
func BenchmarkTopK100kx768(b *testing.B) {
	const rows, dim = 100_000, 768
	matrix := make([]float32, rows*dim)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range matrix {
		matrix[i] = rng.Float32() - 0.5
	}
	q := randomUnit(rng, dim)
	scores := make([]float32, rows)
	b.Run("scores", func(b *testing.B) {
		b.SetBytes(int64(len(matrix) * 4))
		for b.Loop() {
			scores = Scores(matrix, dim, q, scores)
		}
	})
	b.Run("topk", func(b *testing.B) {
		b.SetBytes(int64(len(matrix) * 4))
		for b.Loop() {
			if hits := TopK(matrix, dim, q, 5); len(hits) != 5 {
				b.Fatal(hits)
			}
		}
	})
	b.Run("memread", func(b *testing.B) {
		b.SetBytes(int64(len(matrix) * 4))
		var sink float32
		for b.Loop() {
			sink += readAll(matrix)
		}
		_ = sink
	})
}

// readAll sums the matrix with as many goroutines as Scores uses.
func readAll(m []float32) float32 {
	workers := runtime.GOMAXPROCS(0)
	sums := make([]float32, workers)
	per := (len(m) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := min(w*per, len(m)), min((w+1)*per, len(m))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s0, s1, s2, s3 float32
			part := m[lo:hi]
			i := 0
			for ; i+4 <= len(part); i += 4 {
				s0 += part[i]
				s1 += part[i+1]
				s2 += part[i+2]
				s3 += part[i+3]
			}
			sums[w] = s0 + s1 + s2 + s3
		}()
	}
	wg.Wait()
	var s float32
	for _, x := range sums {
		s += x
	}
	return s
}
