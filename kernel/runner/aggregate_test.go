package runner

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

// infoScorer is a plugin scorer as the host hands it over: it reports the
// capabilities it was configured with, and has an Aggregate method whether
// or not the component behind it has one.
type infoScorer struct {
	matchScorer
	caps       []string
	aggregates atomic.Int64
}

func (s *infoScorer) Info() plugin.Info {
	return plugin.Info{Kind: sdk.KindScorer, Protocol: plugin.Protocol, Capabilities: s.caps}
}

func (s *infoScorer) Aggregate(_ context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	s.aggregates.Add(1)
	if !slices.Contains(s.caps, plugin.CapAggregator) {
		return nil, sdk.ErrUnsupported
	}
	return &sdk.AggregateResponse{Value: 42, N: len(req.Scores)}, nil
}

// A scorer whose component has no Aggregate is not sent the row's scores
// to say so: its metric is the mean, as it was. One that has it is asked.
func TestAggregateAsksOnlyAggregators(t *testing.T) {
	f := newFixture(t, 6, map[string]*echoModel{"m": {}})
	plain := &infoScorer{}
	corpus := &infoScorer{caps: []string{plugin.CapAggregator}}
	f.set.RegisterScorer("plain", func(context.Context, sdk.Options) (sdk.Scorer, error) { return plain, nil })
	f.set.RegisterScorer("corpus", func(context.Context, sdk.Options) (sdk.Scorer, error) { return corpus, nil })
	res, err := f.run(t, context.Background(), `
task "counting" "t" {}
model "m" "m" {}
eval "e" {
  task    = task.counting.t
  models  = [model.m.m]
  scorers = ["plain", "corpus"]
}
`)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Evals[0].Metrics
	if n := plain.aggregates.Load(); n != 0 {
		t.Errorf("a scorer without Aggregate was asked to aggregate %d times", n)
	}
	if got := m["plain"]; got == nil || got.Value != 1 || got.N != 6 {
		t.Errorf("plain metric %+v, want the mean 1 over 6", got)
	}
	if n := corpus.aggregates.Load(); n != 1 {
		t.Errorf("an aggregating scorer was asked %d times, want 1", n)
	}
	if got := m["corpus"]; got == nil || got.Value != 42 {
		t.Errorf("corpus metric %+v, want its own 42", got)
	}
}
