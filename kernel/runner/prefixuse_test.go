package runner

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"testing"

	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// twins is a task of n samples that all send the same request.
type twins struct{ n int }

func (tw twins) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		for i := range tw.n {
			if !yield(&sdk.Sample{ID: fmt.Sprint(i), Question: "the same question", Targets: []string{"a"}, Depth: -1}, nil) {
				return
			}
		}
	}
}

// cachingModel answers every call once all n are in flight (so none comes
// from the journal's cache), the i-th call reporting i cached tokens: a
// server's prefix cache warmed by the twins before.
type cachingModel struct {
	n       int
	mu      sync.Mutex
	calls   int
	arrived chan struct{}
}

func (m *cachingModel) Generate(ctx context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	m.mu.Lock()
	cached := m.calls
	if m.calls++; m.calls == m.n {
		close(m.arrived)
	}
	m.mu.Unlock()
	select {
	case <-m.arrived:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &sdk.GenerateResponse{Text: "a", Usage: sdk.Usage{PromptTokens: 10, CachedTokens: &cached}}, nil
}

// The prefix-cache sums journaled for a row are the journal's own (every
// sample joined to the response kept under its key) also when twins of one
// request are answered at once: the journal keeps the first answer, and the
// row's own sum of its answers (0 + 1 + 2 cached) would differ from that
// (the first one's count, three times). A second run, answered from the
// cache, journals the same sums.
func TestPrefixUseOfTwinsIsTheJournals(t *testing.T) {
	const n = 3
	f := newFixture(t, 0, nil)
	f.set.RegisterTask("twins", func(context.Context, sdk.Options) (sdk.Task, error) { return twins{n}, nil })
	m := &cachingModel{n: n, arrived: make(chan struct{})}
	f.set.RegisterModel("m", func(context.Context, sdk.Options) (sdk.Model, error) { return m, nil })
	hcl := fmt.Sprintf(`
task "twins" "t" {}
model "m" "m" { max_concurrency = %d }
eval "e" {
  task    = task.twins.t
  models  = [model.m.m]
  scorers = ["match"]
  order   = "task"
}`, n)
	var runs []store.PrefixUse
	for i := range 2 {
		res, err := f.run(t, context.Background(), hcl)
		if err != nil || res.Evals[0].Samples != n || res.Evals[0].Cached != i*n {
			t.Fatalf("run %d: %v %+v", i+1, err, res.Evals[0])
		}
		use, err := f.store.PrefixUse(context.Background(), res.RunID, "e/model.m.m/none")
		if err != nil {
			t.Fatal(err)
		}
		use.Metrics = nil
		runs = append(runs, use)
	}
	// The second run's answers all come from the one kept answer.
	first, kept := runs[0], runs[1]
	if kept.Responses != n || kept.Reported != n || kept.PromptTokens != 10*n || kept.CachedTokens%n != 0 {
		t.Errorf("second run, from the cache: %+v, want %d times one answer", kept, n)
	}
	if first != kept {
		t.Errorf("first run: %+v, want the journal's %+v", first, kept)
	}
}
