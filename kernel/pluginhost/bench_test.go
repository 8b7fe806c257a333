package pluginhost

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hayloft/hayloft/sdk"
)

func benchHost(b *testing.B) *Host {
	b.Helper()
	h, err := New(Options{SelfExe: pluginBin, Logger: hclog.NewNullLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	return h
}

// reportLatency records each call's latency and reports p50 and p99 in µs.
func reportLatency(b *testing.B, call func() error) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// A typical scoring call: a sample with a few KB of context, a short
// prediction.
func BenchmarkScorerRoundTrip(b *testing.B) {
	h := benchHost(b)
	c, err := h.Open(context.Background(), sdk.KindScorer, "exact", "", nil)
	if err != nil {
		b.Fatal(err)
	}
	sc := c.(*Scorer)
	req := &sdk.ScoreRequest{
		Sample: &sdk.Sample{ID: "s1", Context: strings.Repeat("hay ", 1024), Question: "what?", Targets: []string{"42"},
			Metadata: map[string]any{"depth_bucket": 3}},
		Prediction: "42",
	}
	ctx := context.Background()
	reportLatency(b, func() error {
		_, err := sc.Score(ctx, req)
		return err
	})
}

func BenchmarkGenerateRoundTrip(b *testing.B) {
	h := benchHost(b)
	c, err := h.Open(context.Background(), sdk.KindModel, "echo", "", nil)
	if err != nil {
		b.Fatal(err)
	}
	m := c.(*Model)
	req := &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: strings.Repeat("hay ", 1024)}}}
	ctx := context.Background()
	reportLatency(b, func() error {
		_, err := m.Generate(ctx, req)
		return err
	})
}

// Throughput of the task stream: samples per second through a plugin
// process.
func BenchmarkTaskStream(b *testing.B) {
	h := benchHost(b)
	c, err := h.Open(context.Background(), sdk.KindTask, "count", "", sdk.MustOptions(map[string]any{"n": 1 << 30}))
	if err != nil {
		b.Fatal(err)
	}
	task := c.(*Task)
	start := time.Now()
	n := 0
	for _, err := range task.Samples(context.Background(), &sdk.SamplesRequest{Limit: b.N}) {
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "samples/s")
}

// Scoring throughput with many calls in flight, as the runner drives it.
func BenchmarkScorerParallel(b *testing.B) {
	h := benchHost(b)
	c, err := h.Open(context.Background(), sdk.KindScorer, "exact", "", nil)
	if err != nil {
		b.Fatal(err)
	}
	sc := c.(*Scorer)
	req := &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "s1", Context: strings.Repeat("hay ", 1024), Targets: []string{"42"}}, Prediction: "42"}
	b.SetParallelism(4)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := sc.Score(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}
