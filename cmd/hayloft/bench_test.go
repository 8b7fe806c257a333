package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/pluginhost"
	"github.com/hayloft/hayloft/kernel/runner"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/plugins/builtin"
	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
	"github.com/hayloft/hayloft/sdk"
)

// BenchmarkPipeline runs the whole kernel path with out-of-process plugins:
// jsonl task plugin → openai model plugin over HTTP to a zero-latency
// loopback server → contains scorer plugin → SQLite journal. Every iteration
// is a fresh journal, so nothing is served from the cache.
//
//	go test ./cmd/hayloft -run '^$' -bench Pipeline -benchtime 3x
func BenchmarkPipeline(b *testing.B) {
	const n = 5000
	srv, err := openaitest.Start(openaitest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	dir := b.TempDir()
	var body []byte
	for i := range n {
		body = fmt.Appendf(body, `{"id":"s%d","context":"The barn is red. The code for door %d is %d. The hay is dry.","question":"What is the code for door %d?","answers":["%d"]}`+"\n", i, i, 1000+i, i, 1000+i)
	}
	data := filepath.Join(dir, "data.jsonl")
	if err := os.WriteFile(data, body, 0o644); err != nil {
		b.Fatal(err)
	}
	src := fmt.Sprintf(`
model "openai" "fake" {
  base_url        = %q
  model           = "fake-model"
  max_concurrency = 64
  max_tokens      = 16
}
task "jsonl" "doors" { path = %q }
eval "doors" {
  task    = task.jsonl.doors
  models  = [model.openai.fake]
  scorers = ["contains"]
}`, srv.BaseURL(), data)
	cfg, err := config.Parse(filepath.Join(dir, "bench.hcl"), []byte(src), config.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	host, err := pluginhost.New(pluginhost.Options{SelfExe: hayloftBin, Builtin: builtin.Set(version), Logger: hclog.NewNullLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer host.Close()

	ctx := context.Background()
	var total time.Duration
	var overhead float64
	b.ResetTimer()
	for i := range b.N {
		st, err := store.Open(ctx, filepath.Join(dir, fmt.Sprintf("j%d.db", i)))
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		res, err := runner.New(runner.Options{Opener: host, Store: st}).Run(ctx, cfg)
		total += time.Since(t0)
		st.Close()
		if err != nil || res.Failed() || res.Evals[0].Samples != n {
			b.Fatalf("run: %v %+v", err, res.Evals[0])
		}
		overhead += res.OverheadUSPerSample
	}
	b.StopTimer()
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "samples/s")
	b.ReportMetric(overhead/float64(b.N), "overhead-µs/sample")

	// Plugin round trip: one scorer call to a plugin process and back.
	v, err := host.Open(ctx, sdk.KindScorer, "contains", "", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer closeIfCloser(v)
	sc := v.(sdk.Scorer)
	req := &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "x", Targets: []string{"1042"}}, Prediction: "The code is 1042."}
	lat := make([]time.Duration, 2000)
	for i := range lat {
		t0 := time.Now()
		if _, err := sc.Score(ctx, req); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "rtt-p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "rtt-p99-µs")
}
