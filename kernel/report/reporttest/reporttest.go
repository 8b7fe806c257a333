// Package reporttest writes runs into a real journal for the tests and
// benchmarks of the reports: the samples, answers, scores and failures a
// run would journal, through the store's own API.
package reporttest

import (
	"context"
	"fmt"
	"time"

	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/stats"
)

// Run describes a run to journal.
type Run struct {
	ConfigPath, ConfigText string
	Evals                  []Eval
	// Running leaves the run in progress (no FinishRun).
	Running bool
}

// Eval is one eval row.
type Eval struct {
	Base, Model, Retriever string // Retriever "" is the full-context control
	Scorers                []string
	Samples                []Sample
	// PrefixMetrics, when set, is journaled as the row's server counters
	// (the row is then finished with its samples counted).
	PrefixMetrics *store.PrefixMetrics
}

// JournalName is the row's name in the journal, as the runner forms it.
func (e Eval) JournalName() string {
	r := e.Retriever
	if r == "" {
		r = "none"
	}
	return e.Base + "/" + e.Model + "/" + r
}

// Sample is one sample and its fate.
type Sample struct {
	ID       string
	Length   int
	Depth    float64
	Context  string
	Question string
	Targets  []string
	Metadata map[string]any
	// Response is the answer; ignored when Fail is set.
	Response string
	// Fail, when set, journals the sample as failed with this message.
	Fail     string
	Scores   map[string]float64
	Invalid  map[string]bool
	Details  map[string]map[string]any
	Attempts []sdk.Attempt
	// CachedTokens is the prompt tokens the answer reported cached; nil:
	// not reported.
	CachedTokens *int
}

// Write journals r in st and returns the run's ID.
func Write(ctx context.Context, st *store.Store, r Run) (string, error) {
	id, err := st.BeginRun(ctx, store.RunInfo{ConfigPath: r.ConfigPath, ConfigText: r.ConfigText, Version: "test"})
	if err != nil {
		return "", err
	}
	for _, ev := range r.Evals {
		name := ev.JournalName()
		if err := st.PutEval(ctx, id, store.EvalInfo{Name: name, Task: "task.test." + ev.Base, Model: ev.Model, Retriever: ev.Retriever, Scorers: ev.Scorers}); err != nil {
			return "", err
		}
		keyer, err := store.NewKeyer(store.ModelIdentity{Plugin: "builtin", PluginVersion: "test", Component: "test", Instance: ev.Model, Model: ev.Model})
		if err != nil {
			return "", err
		}
		for seq, s := range ev.Samples {
			smp := &sdk.Sample{ID: s.ID, Context: s.Context, Question: s.Question, Targets: s.Targets,
				Length: sdk.Length{Tokens: s.Length, Tokenizer: "test"}, Depth: s.Depth, Metadata: s.Metadata}
			req := &sdk.GenerateRequest{Messages: smp.Render()}
			keyed, err := keyer.Request(req)
			if err != nil {
				return "", err
			}
			if s.Fail != "" {
				if err := st.PutFailure(ctx, id, name, s.ID, keyed.Key, fmt.Errorf("%s", s.Fail)); err != nil {
					return "", err
				}
				if err := st.PutAttempts(ctx, keyed.Key, s.Attempts); err != nil {
					return "", err
				}
				continue
			}
			resp := &sdk.GenerateResponse{Text: s.Response, FinishReason: "stop", Attempts: s.Attempts,
				Usage: sdk.Usage{PromptTokens: s.Length, CompletionTokens: 5, CachedTokens: s.CachedTokens}}
			if err := st.PutResponse(ctx, keyer, keyed, resp, 20*time.Millisecond); err != nil {
				return "", err
			}
			var scores []store.NamedScore
			for _, sc := range ev.Scorers {
				v, ok := s.Scores[sc]
				if !ok && !s.Invalid[sc] {
					continue
				}
				scores = append(scores, store.NamedScore{Scorer: sc, Score: &sdk.ScoreResponse{Value: v, Invalid: s.Invalid[sc], Details: s.Details[sc]}})
			}
			meta := store.SampleMeta{Index: seq, RequestKey: keyed.Key, SentTokens: s.Length}
			if ev.Retriever != "" {
				meta.Retriever = ev.Retriever
			}
			if err := st.PutResult(ctx, id, name, smp, meta, scores); err != nil {
				return "", err
			}
		}
	}
	for _, ev := range r.Evals {
		if ev.PrefixMetrics == nil {
			continue
		}
		if err := st.FinishEval(ctx, id, ev.JournalName(), store.Outcome{Samples: len(ev.Samples), PrefixMetrics: ev.PrefixMetrics}, nil); err != nil {
			return "", err
		}
	}
	if !r.Running {
		if err := st.FinishRun(ctx, id, store.StatusDone); err != nil {
			return "", err
		}
	}
	return id, nil
}

// Grid is a needle grid: one sample per length × depth, scored by score.
func Grid(lengths []int, depths []float64, score func(length int, depth float64) float64) []Sample {
	var out []Sample
	for _, l := range lengths {
		for _, d := range depths {
			v := score(l, d)
			out = append(out, Sample{
				ID: fmt.Sprintf("L%d-D%g", l, d), Length: l, Depth: d,
				Context:  fmt.Sprintf("haystack of %d tokens with the needle at %g", l, d),
				Question: "What is the best thing to do in San Francisco?",
				Targets:  []string{"eat a sandwich"},
				Response: fmt.Sprintf("answer at %d/%g", l, d),
				Scores:   map[string]float64{"niah": v},
			})
		}
	}
	return out
}

// Aggregate journals each eval row's aggregates as the runner does when a
// row ends: each scorer's mean of the row's journaled scores with the
// seeded bootstrap CI.
func Aggregate(ctx context.Context, st *store.Store, runID string) error {
	evals, err := st.Evals(ctx, runID)
	if err != nil {
		return err
	}
	for _, ev := range evals {
		metrics := map[string]*store.Metric{}
		n := 0
		for _, name := range ev.Scorers {
			scores, err := st.Scores(ctx, runID, ev.Name, name)
			if err != nil {
				return err
			}
			rs := make([]*sdk.ScoreResponse, len(scores))
			for i, s := range scores {
				rs[i] = s.Score
			}
			metrics[name] = stats.AggregateMean(rs, stats.DefaultSeed)
			n = max(n, len(scores))
		}
		if err := st.FinishEval(ctx, runID, ev.Name, store.Outcome{Samples: n}, metrics); err != nil {
			return err
		}
	}
	return nil
}
