package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hayloft/hayloft/kernel/limiter"
	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
	"github.com/hayloft/hayloft/sdk"
)

// BenchmarkGenerateParallel measures client overhead: 64 goroutines sending
// small chat requests (a ~150-byte prompt, max_tokens 16) to a zero-latency
// loopback server sharing the machine's cores. cpu-µs/req is this process's
// user+system CPU per request; it means client cost only in the "process"
// variant, where the server runs as a separate fakeopenai process. The
// "inprocess" variant needs no build but counts the server's CPU too.
func BenchmarkGenerateParallel(b *testing.B) {
	// Started once for all rounds and only if asked for, so the build stays
	// out of the timing.
	server := sync.OnceValues(func() (string, error) { return startFakeOpenAI(b) })
	process := func(bench func(*testing.B, string)) func(*testing.B) {
		return func(b *testing.B) {
			root, err := server()
			if errors.Is(err, errNoFakeOpenAI) {
				b.Skip(err)
			}
			if err != nil {
				b.Fatal(err)
			}
			bench(b, root)
		}
	}
	for _, tr := range []string{TransportAuto, TransportNetHTTP} {
		b.Run("server=process,transport="+tr, process(func(b *testing.B, root string) { benchGenerateParallel(b, root, tr) }))
	}
	b.Run("server=process,client=nethttp", process(benchBareHTTPParallel))
	b.Run("server=inprocess", func(b *testing.B) {
		srv := openaitest.NewServer(openaitest.Options{Answer: func(openaitest.ChatRequest) string { return "ok" }})
		defer srv.Close()
		benchGenerateParallel(b, srv.BaseURL(), TransportAuto)
	})
}

// benchPrompt is ~150 bytes once the counter is in.
const benchPrompt = "Read the passage and answer briefly. The harbour master logged %08d ships before noon on the day of the storm.\nHow many ships were logged that day?"

func benchGenerateParallel(b *testing.B, baseURL, transport string) {
	c := newBenchClient(b, baseURL, transport)
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	var n atomic.Int64
	cpu0 := cpuTime(b)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := chat(fmt.Sprintf(benchPrompt, n.Add(1)))
			req.Params.MaxTokens = 16
			if _, err := c.Generate(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/req")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}

// benchBareHTTPParallel is the floor the client is measured against: a bare
// net/http client posting one prebuilt body and discarding the answer.
func benchBareHTTPParallel(b *testing.B, baseURL string) {
	body, err := json.Marshal(map[string]any{"model": "fake-model", "max_tokens": 16,
		"messages": []sdk.Message{{Role: "user", Content: fmt.Sprintf(benchPrompt, 1)}}})
	if err != nil {
		b.Fatal(err)
	}
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := hc.Post(baseURL+"/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	elapsed := time.Since(start)
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/req")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}

// cpuTime is the user+system CPU this process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// errNoFakeOpenAI is a failed build of fakeopenai: the out-of-process
// variants are skipped, not failed, where no Go toolchain is at hand.
var errNoFakeOpenAI = errors.New("cannot build fakeopenai, so no out-of-process server")

// startFakeOpenAI builds and starts openaitest's fakeopenai command, so that
// the server's CPU is not counted as the client's, and returns its API root.
// The process is killed when b ends. It reports failures as errors rather
// than through b because it runs on a sub-benchmark's goroutine.
func startFakeOpenAI(b *testing.B) (string, error) {
	bin := filepath.Join(b.TempDir(), "fakeopenai")
	if out, err := exec.Command("go", "build", "-o", bin, "./openaitest/cmd/fakeopenai").CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: %v\n%s", errNoFakeOpenAI, err, out)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start fakeopenai: %w", err)
	}
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case root := <-line:
		if !strings.HasPrefix(root, "http://") {
			return "", fmt.Errorf("fakeopenai printed %q, want its URL", root)
		}
		return root + "/v1", nil
	case <-time.After(10 * time.Second):
		return "", errors.New("fakeopenai printed no URL within 10s")
	}
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
