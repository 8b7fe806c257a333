package compare_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/kernel/report/compare"
	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/kernel/report/reporttest"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/stats"
)

// corpusAgg is a scorer's own aggregate that is not the mean of its sample
// scores (as corpus BLEU's is not the mean of sentence BLEU).
func corpusAgg(rs []*sdk.ScoreResponse) *sdk.AggregateResponse {
	v := 0.0
	for _, r := range rs {
		v = max(v, r.Value)
	}
	return &sdk.AggregateResponse{Value: v / 3, N: len(rs), CILow: v / 4, CIHigh: v}
}

// With no per-sample comparison (NotPerSample), compare's JSON must not
// hand a script a difference of 0 with the interval [0, 0]: that reads as
// "no difference, known exactly". The commit's own rule for the aggregate
// (MarshalJSON: null, so no JSON reader takes a zero for a score) is not
// applied to compare's diff / ci_low / ci_high / mean_a / mean_b.
func TestCompareJSONClaimsNoZeroInterval(t *testing.T) {
	st := open(t)
	a := func(i int) float64 { return float64(i%4) / 4 }
	b := func(i int) float64 { return float64((i+1)%4) / 4 }
	ra := loadAggregated(t, st, corpusAgg, reporttest.Eval{Base: "e", Model: "m", Scorers: []string{"exact"}, Samples: samples(0, 40, a)})
	rb := loadAggregated(t, st, corpusAgg, reporttest.Eval{Base: "e", Model: "m", Scorers: []string{"exact"}, Samples: samples(0, 40, b)})
	pairs, err := compare.Runs(ra, rb, stats.DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	if pairs[0].Metrics[0].NotPerSample == "" {
		t.Fatalf("setup: expected no per-sample comparison: %+v", pairs[0].Metrics[0])
	}
	// As `hayloft compare --json` encodes it.
	raw, err := json.Marshal(map[string]any{"pairs": pairs})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Pairs []struct {
			Metrics []map[string]any `json:"metrics"`
		} `json:"pairs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	m := doc.Pairs[0].Metrics[0]
	for _, k := range []string{"diff", "ci_low", "ci_high", "mean_a", "mean_b"} {
		if v, ok := m[k]; ok && v != nil {
			t.Errorf("compare --json of a metric compared without samples writes %q: %v (want null or absent; a script reads diff 0 in [0, 0])", k, v)
		}
	}
}

// finish journals the row's aggregate of scorer as agg makes it from the
// row's journaled scores, as the runner does when a row ends.
func finish(t *testing.T, st *store.Store, id string, ev reporttest.Eval, scorer string, agg func([]*sdk.ScoreResponse) *sdk.AggregateResponse) {
	t.Helper()
	ctx := context.Background()
	scores, err := st.Scores(ctx, id, ev.JournalName(), scorer)
	if err != nil {
		t.Fatal(err)
	}
	rs := make([]*sdk.ScoreResponse, len(scores))
	for i, s := range scores {
		rs[i] = s.Score
	}
	if err := st.FinishEval(ctx, id, ev.JournalName(), store.Outcome{Samples: len(rs)}, map[string]*store.Metric{scorer: agg(rs)}); err != nil {
		t.Fatal(err)
	}
}

// A run killed during its second row (SIGKILL, OOM, a Slurm time limit):
// the full-context row journaled its aggregate, the retrieval row has
// none, so the journal reader recomputes a plain mean for it. compare then
// prints that plain mean in column A beside the other row's own aggregate,
// as "the rows' own aggregates", and B−A their difference: corpus value
// minus a mean of sample scores. For a scorer that declines a value
// (XLBench over two languages) the killed row's column shows a mean pooled
// over languages and subtasks (raw MAE included).
func TestCompareRecomputedSideIsNotTheRowsAggregate(t *testing.T) {
	ctx := context.Background()
	declined := func(rs []*sdk.ScoreResponse) *sdk.AggregateResponse {
		agg := stats.AggregateMean(rs, stats.DefaultSeed)
		agg.Value, agg.CILow, agg.CIHigh = 0, 0, 0
		agg.Details = sdk.WithoutValue(nil, "the row has 2 means (fiction/en, fiction/zh)")
		return agg
	}
	for _, tc := range []struct {
		name string
		agg  func([]*sdk.ScoreResponse) *sdk.AggregateResponse
	}{
		{"own aggregate", corpusAgg},
		{"declined", declined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := open(t)
			full := reporttest.Eval{Base: "e", Model: "m", Scorers: []string{"exact"}, Samples: samples(0, 40, func(i int) float64 { return float64(i%4) / 4 })}
			rag := reporttest.Eval{Base: "e", Model: "m", Retriever: "retriever.cosine.tokens", Scorers: []string{"exact"}, Samples: samples(0, 40, func(i int) float64 { return float64((i+1)%4) / 4 })}
			id, err := reporttest.Write(ctx, st, reporttest.Run{ConfigPath: "c.hcl", Evals: []reporttest.Eval{full, rag}, Running: true})
			if err != nil {
				t.Fatal(err)
			}
			finish(t, st, id, full, "exact", tc.agg) // the retrieval row was killed before its end
			run, err := journal.Load(ctx, st, id, nil)
			if err != nil {
				t.Fatal(err)
			}
			pairs, err := compare.Within(run, "retriever", "none", "retriever.cosine.tokens", stats.DefaultSeed)
			if err != nil {
				t.Fatal(err)
			}
			m := pairs[0].Metrics[0]
			var buf bytes.Buffer
			compare.WriteText(&buf, pairs)
			if m.ValueB != nil {
				t.Errorf("B (no journaled aggregate) is shown as the row's own aggregate %v beside A's %v; B−A printed:\n%s", *m.ValueB, deref(m.ValueA), buf.String())
			}
		})
	}
}

// Two XLBench rows whose aggregates were never journaled (a killed run, or
// a run still in progress read by `hayloft compare`): compare keeps the
// paired comparison of the raw sample scores, pooled over languages and
// subtasks (accuracy beside raw MAE), with a 95% CI, and says nothing of
// it: the very comparison the commit set out to remove. Claim 3 keeps it
// "only when the journaled aggregate equals the mean"; here there is no
// journaled aggregate to check.
func TestCompareUncheckedWithoutJournaledAggregate(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	const sc = "scorer.xlbench.paper"
	row := func(model string, shift float64) reporttest.Eval {
		var ss []reporttest.Sample
		for i := range 20 {
			lang, v := "en", float64(i%2) // accuracy
			if i >= 10 {
				lang, v = "zh", 2+shift // rating_score: raw MAE, 0-10
			}
			ss = append(ss, reporttest.Sample{ID: fmt.Sprintf("s%02d", i), Depth: -1, Context: fmt.Sprint("c", i), Response: "r",
				Metadata: map[string]any{"language": lang}, Scores: map[string]float64{sc: v}})
		}
		return reporttest.Eval{Base: "xlbench", Model: model, Scorers: []string{sc}, Samples: ss}
	}
	id, err := reporttest.Write(ctx, st, reporttest.Run{ConfigPath: "c.hcl", Evals: []reporttest.Eval{row("a", 0), row("b", 1)}, Running: true})
	if err != nil {
		t.Fatal(err)
	}
	run, err := journal.Load(ctx, st, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := compare.Within(run, "model", "a", "b", stats.DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	m := pairs[0].Metrics[0]
	var buf bytes.Buffer
	compare.WriteText(&buf, pairs)
	if m.NotPerSample == "" && !strings.Contains(buf.String(), "recomputed") {
		t.Errorf("no journaled aggregate on either side, yet compare claims the paired comparison (diff %+.3f, CI [%+.3f, %+.3f]) without a word:\n%s", m.Diff, m.CILow, m.CIHigh, buf.String())
	}
}
