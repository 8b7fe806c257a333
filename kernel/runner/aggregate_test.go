package runner

import (
	"context"
	"maps"
	"slices"
	"strings"
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
	res, err := f.run(t, context.Background(), oneEval("m", "", "plain", "corpus"))
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

// encodedScorer answers batches as a plugin's scorer does through the
// host: details encoded by the plugin (DetailsJSON), Response.Details nil.
type encodedScorer struct {
	infoScorer
	details string
	seen    atomic.Value // the details the last Aggregate received
}

func (s *encodedScorer) ScoreBatch(ctx context.Context, reqs []*sdk.ScoreRequest) ([]plugin.ScoreResult, error) {
	out := make([]plugin.ScoreResult, len(reqs))
	for i, req := range reqs {
		out[i].Response, out[i].Err = s.Score(ctx, req)
		out[i].DetailsJSON = []byte(s.details)
	}
	return out, nil
}

func (s *encodedScorer) Aggregate(ctx context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	if len(req.Scores) > 0 {
		s.seen.Store(req.Scores[0].Details)
	}
	return s.infoScorer.Aggregate(ctx, req)
}

// A batched scorer's details are journaled as its plugin encoded them, not
// decoded and encoded again (which would reorder these keys and round the
// integer to a float64's 53 bits); a scorer's own Aggregate still gets
// them decoded; details that are not a JSON object end the row.
func TestScoreDetailsJournaledAsEncoded(t *testing.T) {
	const details = `{"z":1,"big":9007199254740993,"a":"x<y"}`
	for _, c := range []struct {
		name, details string
		caps          []string
		wantErr       string
	}{
		{"mean", details, nil, ""},
		{"own aggregate", details, []string{plugin.CapAggregator}, ""},
		{"not an object", `[1,2]`, nil, "not a JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, 3, map[string]*echoModel{"m": {}})
			sc := &encodedScorer{infoScorer: infoScorer{caps: c.caps}, details: c.details}
			f.set.RegisterScorer("enc", func(context.Context, sdk.Options) (sdk.Scorer, error) { return sc, nil })
			res, err := f.run(t, context.Background(), oneEval("m", "", "enc"))
			if err != nil {
				t.Fatal(err)
			}
			ev := res.Evals[0]
			if c.wantErr != "" {
				if !strings.Contains(ev.Error, c.wantErr) {
					t.Fatalf("row error %q, want one saying %q", ev.Error, c.wantErr)
				}
				return
			}
			if ev.Error != "" || ev.Samples != 3 {
				t.Fatalf("row: %d samples, error %q", ev.Samples, ev.Error)
			}
			got, err := f.store.SampleScores(context.Background(), res.RunID, "e/model.m.m/none", "1", []string{"enc"})
			if err != nil {
				t.Fatal(err)
			}
			if string(got[0].Details) != details {
				t.Errorf("journaled details %s, want the plugin's bytes %s", got[0].Details, details)
			}
			if c.caps == nil {
				return
			}
			want := map[string]any{"z": 1.0, "big": 9007199254740993.0, "a": "x<y"}
			if seen, _ := sc.seen.Load().(map[string]any); !maps.Equal(seen, want) {
				t.Errorf("Aggregate got details %v, want %v", seen, want)
			}
		})
	}
}
