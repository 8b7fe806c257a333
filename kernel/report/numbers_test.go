package report

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// sigmoidDepths is the NIAH task's sigmoid depth grid (plugins/tasks/niah
// grid.go), in percent: niah.md "the linear and sigmoid depth modes
// (logistic(x, L=100, x0=50, k=0.1), rounded to 3 decimals, 0 and 100 kept)".
func sigmoidDepths(n int) []float64 {
	out := make([]float64, n)
	step := 100.0 / float64(n-1)
	for i := range out {
		x := float64(float64(i)*step) + 0
		if x == 0 || x == 100 {
			out[i] = x
			continue
		}
		v := 100 * (1 / (1 + math.Exp(0.1*(x-50))))
		out[i] = math.RoundToEven(v*1000) / 1000
	}
	return out
}

// niah.md: depths are "rounded to 3 decimals" (in percent), and the report
// is "a length × depth heatmap, the mean per length and per depth": every
// asked depth of a 150-point sigmoid grid keeps a bucket and a grid row of
// its own (rounded to 0.001 as a fraction, six of them merged).
func TestSigmoidDepthsKeepTheirOwnBuckets(t *testing.T) {
	ctx := context.Background()
	st, run := newRun(t, "niah.hcl")
	name := "niah/model.m/none"
	if err := st.PutEval(ctx, run, store.EvalInfo{Name: name, Eval: "niah", Task: "task.niah.t", Model: "model.m", Scorers: []string{"niah"}}); err != nil {
		t.Fatal(err)
	}
	depths := sigmoidDepths(150)
	distinct := map[float64]bool{}
	seq := 0
	for _, l := range []int{1000, 2000} {
		for i, d := range depths {
			distinct[d] = true
			smp := &sdk.Sample{ID: fmt.Sprintf("L%d-%03d", l, i), Length: sdk.Length{Tokens: l}, Depth: d / 100,
				Grid: &sdk.GridPoint{Length: l, Depth: d / 100}}
			// Score 1 on even grid rows, 0 on odd: merged rows show 0.5.
			sc := &sdk.ScoreResponse{Value: float64(1 - i%2)}
			if err := st.PutResult(ctx, run, name, smp, store.SampleMeta{Index: seq}, []store.NamedScore{{Scorer: "niah", Score: sc}}); err != nil {
				t.Fatal(err)
			}
			seq++
		}
	}
	res := finishRun(t, st, run, name, store.Outcome{Samples: seq}, nil)
	row := res.Evals[0]
	if len(row.ByDepth) != len(distinct) {
		var merged []string
		for _, b := range row.ByDepth {
			if b.N != 2 {
				merged = append(merged, fmt.Sprintf("depth %v: n %d mean %v", *b.Depth, b.N, b.Metrics["niah"]))
			}
		}
		t.Errorf("by_depth has %d buckets for %d distinct asked depths; merged: %v", len(row.ByDepth), len(distinct), merged)
	}
	if len(row.Grid) != 2*len(distinct) {
		t.Errorf("grid has %d cells, want %d (2 lengths × %d depths)", len(row.Grid), 2*len(distinct), len(distinct))
	}
}

// xlbench.md: "`<1` is shown for scores under 1". A score of 0.996 (×100)
// is under 1 but FormatCell compares the value after rounding to the
// column's decimals and prints "1.00".
func TestFloorShowsScoresUnderOne(t *testing.T) {
	col := sdk.Column{Key: "k", Label: "k", Scale: 100, Decimals: 2, Floor: 1}
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0.00996, "<1"}, // 0.996: under 1, though it rounds to 1.00
		{0.01, "1.00"},  // exactly the floor
		{0.1 * 0.1, "1.00"},
		{0.0123, "1.23"},
	} {
		if got := FormatCell(col, sdk.Val(tc.v, 1)); got != tc.want {
			t.Errorf("FormatCell(%v on the ×100 scale) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// kernel/runner/aggregate.go journals a scorer whose Aggregate failed as
// Metric{N: len(scores), Details: {"error": ...}}: Value 0. The summary
// (and HTML metrics table, and --json) then print a score of 0.000 with a
// CI [0.000, 0.000] for a metric that was never computed (metrics.md:
// every aggregate comes with its sample count, invalid count and CI).
func TestFailedAggregateIsNotAZeroScore(t *testing.T) {
	ctx := context.Background()
	st, run := newRun(t, "x.hcl")
	name := "xl/model.m/none"
	if err := st.PutEval(ctx, run, store.EvalInfo{Name: name, Eval: "xl", Task: "task.xlbench.x", Model: "model.m", Scorers: []string{"xlbench"}}); err != nil {
		t.Fatal(err)
	}
	m := map[string]*store.Metric{"xlbench": {N: 4, Details: map[string]any{"error": "xlbench: score 3: no XLBench subtask in its details"}}}
	res := finishRun(t, st, run, name, store.Outcome{Samples: 4}, m)
	var b strings.Builder
	WriteSummary(&b, res)
	if strings.Contains(b.String(), "0.000 [0.000, 0.000]") {
		t.Errorf("a failed aggregate is printed as a score:\n%s", b.String())
	}
}

// finishRun finishes the one eval row name and its run, and loads the run's
// report.
func finishRun(t *testing.T, st *store.Store, run, name string, o store.Outcome, m map[string]*store.Metric) *Run {
	t.Helper()
	ctx := context.Background()
	if err := st.FinishEval(ctx, run, name, o, m); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishRun(ctx, run, store.StatusDone); err != nil {
		t.Fatal(err)
	}
	res, err := Load(ctx, st, run)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
