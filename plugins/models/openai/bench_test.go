package openai

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayloft/hayloft/kernel/limiter"
	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
	"github.com/hayloft/hayloft/sdk"
)

// BenchmarkGenerateParallel measures client overhead: 64 goroutines
// against a zero-latency loopback server sharing the machine's cores.
func BenchmarkGenerateParallel(b *testing.B) {
	srv := openaitest.NewServer(openaitest.Options{Answer: func(openaitest.ChatRequest) string { return "ok" }})
	defer srv.Close()
	c, err := NewClient(context.Background(), sdk.MustOptions(map[string]any{"base_url": srv.BaseURL(), "model": "fake-model"}))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	var n atomic.Int64
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if _, err := c.Generate(context.Background(), chat(fmt.Sprintf("The answer is %d.\nWhat is the answer?", i))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// BenchmarkGenerateLatency50ms: a server taking 50 ms per request and up to
// 256 requests allowed in flight, fixed or through the adaptive limiter.
// Reports the in-flight count the server saw and the throughput.
func BenchmarkGenerateLatency50ms(b *testing.B) {
	for _, adaptive := range []bool{false, true} {
		name := "fixed256"
		if adaptive {
			name = "limiter_max256"
		}
		b.Run(name, func(b *testing.B) {
			srv := openaitest.NewServer(openaitest.Options{Latency: 50 * time.Millisecond, Answer: func(openaitest.ChatRequest) string { return "ok" }})
			defer srv.Close()
			c, err := NewClient(context.Background(), sdk.MustOptions(map[string]any{"base_url": srv.BaseURL(), "model": "fake-model"}))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			lim := limiter.New(limiter.Options{Initial: 256, Max: 256})
			workers := 256
			if adaptive {
				lim = limiter.New(limiter.Options{Initial: 8, Max: 256})
				workers = 512
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						rel, err := lim.Acquire(context.Background())
						if err != nil {
							b.Error(err)
							return
						}
						resp, err := c.Generate(context.Background(), chat(fmt.Sprint("q", i)))
						if err != nil {
							rel(limiter.Outcome{Err: err})
							b.Error(err)
							return
						}
						rel(limiter.Outcome{Latency: time.Duration(resp.Attempts[len(resp.Attempts)-1].LatencyMS * float64(time.Millisecond))})
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
			b.ReportMetric(float64(srv.MaxInFlight()), "max-in-flight")
			b.ReportMetric(float64(lim.Stats().Limit), "final-limit")
		})
	}
}
