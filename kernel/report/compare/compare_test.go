package compare_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/kernel/report/compare"
	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/kernel/report/reporttest"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/stats"
)

// samples are ids from..to-1 scored by f.
func samples(from, to int, f func(i int) float64) []reporttest.Sample {
	var out []reporttest.Sample
	for i := from; i < to; i++ {
		out = append(out, reporttest.Sample{ID: fmt.Sprintf("s%03d", i), Length: 1000, Depth: -1, Context: fmt.Sprint("c", i),
			Response: "r", Scores: map[string]float64{"exact": f(i)}})
	}
	return out
}

func load(t *testing.T, st *store.Store, evals ...reporttest.Eval) *journal.Run {
	t.Helper()
	ctx := context.Background()
	id, err := reporttest.Write(ctx, st, reporttest.Run{ConfigPath: "c.hcl", Evals: evals})
	if err != nil {
		t.Fatal(err)
	}
	run, err := journal.Load(ctx, st, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func open(t *testing.T) *store.Store {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestCompareRuns(t *testing.T) {
	// A: the first 60 of 100 right. B: 30 that A got wrong become right
	// and 10 that A got right become wrong: +0.20 exactly.
	a := func(i int) float64 { return b2f(i < 60) }
	b := func(i int) float64 {
		switch {
		case i >= 60 && i < 90:
			return 1
		case i < 10:
			return 0
		}
		return a(i)
	}
	tests := []struct {
		name                   string
		aFrom, aTo, bFrom, bTo int
		shared, onlyA, onlyB   int
		diff                   float64
		better, worse          int
		excludesZero           bool
	}{
		{"full overlap", 0, 100, 0, 100, 100, 0, 0, 0.2, 30, 10, true},
		{"partial overlap", 0, 100, 50, 150, 50, 50, 50, 0.6, 30, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := open(t)
			ra := load(t, st, reporttest.Eval{Base: "e", Model: "m", Scorers: []string{"exact"}, Samples: samples(tt.aFrom, tt.aTo, a)})
			rb := load(t, st, reporttest.Eval{Base: "e", Model: "m", Scorers: []string{"exact"}, Samples: samples(tt.bFrom, tt.bTo, b)})
			pairs, err := compare.Runs(ra, rb, stats.DefaultSeed)
			if err != nil {
				t.Fatal(err)
			}
			m := pairs[0].Metrics[0]
			if m.Shared != tt.shared || m.OnlyA != tt.onlyA || m.OnlyB != tt.onlyB {
				t.Errorf("shared %d only A %d only B %d, want %d %d %d", m.Shared, m.OnlyA, m.OnlyB, tt.shared, tt.onlyA, tt.onlyB)
			}
			if d := m.Diff - tt.diff; d > 1e-9 || d < -1e-9 {
				t.Errorf("diff %v, want %v", m.Diff, tt.diff)
			}
			if m.Better != tt.better || m.Worse != tt.worse {
				t.Errorf("better %d worse %d, want %d %d", m.Better, m.Worse, tt.better, tt.worse)
			}
			if !(m.CILow <= m.Diff && m.Diff <= m.CIHigh) || m.CILow == m.CIHigh {
				t.Errorf("CI [%v, %v] does not bracket %v", m.CILow, m.CIHigh, m.Diff)
			}
			if tt.excludesZero && m.CILow <= 0 {
				t.Errorf("CI [%v, %v] includes 0 for a +0.2 difference on 100 pairs", m.CILow, m.CIHigh)
			}
			var buf bytes.Buffer
			if err := compare.WriteText(&buf, pairs); err != nil || !strings.Contains(buf.String(), fmt.Sprintf("%+.3f", tt.diff)) {
				t.Errorf("text: %v\n%s", err, buf.String())
			}
		})
	}
}

// A paired CI is narrower than the unpaired spread when the two rows share
// most of their outcomes: here B is A plus a constant 0.1, so every paired
// difference is 0.1 and the CI collapses to it.
func TestComparePairedCIOfConstantShift(t *testing.T) {
	st := open(t)
	run := load(t, st,
		reporttest.Eval{Base: "e", Model: "a", Scorers: []string{"exact"}, Samples: samples(0, 50, func(i int) float64 { return float64(i%5) / 5 })},
		reporttest.Eval{Base: "e", Model: "b", Scorers: []string{"exact"}, Samples: samples(0, 50, func(i int) float64 { return float64(i%5)/5 + 0.1 })},
	)
	pairs, err := compare.Within(run, "model", "a", "b", stats.DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	m := pairs[0].Metrics[0]
	if abs(m.CILow-0.1) > 1e-9 || abs(m.CIHigh-0.1) > 1e-9 || m.Better != 50 {
		t.Fatalf("%+v", m)
	}
	if _, err := compare.Within(run, "model", "a", "nope", stats.DefaultSeed); err == nil {
		t.Fatal("comparing with a model the run does not have succeeded")
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// The shared samples' comparison is about the metric only when the
// scorer's aggregate is the mean of its sample scores. When it is not
// (corpus BLEU, XLBench's subtask means) or there is none, A and B are the
// rows' own aggregates and nothing per sample is claimed; an error metric
// counts lower scores as better.
func TestCompareThroughTheScorersAggregate(t *testing.T) {
	a := func(i int) float64 { return float64(i%4) / 4 }
	b := func(i int) float64 { return float64((i+1)%4) / 4 }
	corpus := func(rs []*sdk.ScoreResponse) *sdk.AggregateResponse {
		// Not a mean of the values: a corpus statistic of its own.
		v := 0.0
		for _, r := range rs {
			v = max(v, r.Value)
		}
		return &sdk.AggregateResponse{Value: v / 3, N: len(rs), CILow: v / 4, CIHigh: v}
	}
	declined := func(rs []*sdk.ScoreResponse) *sdk.AggregateResponse {
		agg := stats.AggregateMean(rs, stats.DefaultSeed)
		agg.Details = sdk.WithoutValue(nil, "two languages")
		return agg
	}
	errorMetric := func(rs []*sdk.ScoreResponse) *sdk.AggregateResponse {
		agg := stats.AggregateMean(rs, stats.DefaultSeed)
		agg.Details = map[string]any{sdk.LowerIsBetterKey: true}
		return agg
	}
	tests := []struct {
		name          string
		agg           func([]*sdk.ScoreResponse) *sdk.AggregateResponse
		perSample     bool
		valueA        *float64
		better, worse int
		text          string
	}{
		{"mean", nil, true, ptr(0.375), 30, 10, "[-0.126, +0.125]"},
		{"own aggregate", corpus, false, ptr(0.25), 0, 0, "not the mean of its sample scores"},
		{"no value", declined, false, nil, 0, 0, "no single value (two languages)"},
		{"lower is better", errorMetric, true, ptr(0.375), 10, 30, "lower is better"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := open(t)
			agg := tt.agg
			if agg == nil {
				agg = func(rs []*sdk.ScoreResponse) *sdk.AggregateResponse {
					return stats.AggregateMean(rs, stats.DefaultSeed)
				}
			}
			ra := loadAggregated(t, st, agg, reporttest.Eval{Base: "e", Model: "m", Scorers: []string{"exact"}, Samples: samples(0, 40, a)})
			rb := loadAggregated(t, st, agg, reporttest.Eval{Base: "e", Model: "m", Scorers: []string{"exact"}, Samples: samples(0, 40, b)})
			pairs, err := compare.Runs(ra, rb, stats.DefaultSeed)
			if err != nil {
				t.Fatal(err)
			}
			m := pairs[0].Metrics[0]
			if (m.NotPerSample == "") != tt.perSample {
				t.Errorf("per sample: %q, want per sample %v", m.NotPerSample, tt.perSample)
			}
			if (m.Paired != nil) != tt.perSample {
				t.Fatalf("paired figures %+v, want them: %v", m.Paired, tt.perSample)
			}
			if (m.ValueA == nil) != (tt.valueA == nil) || m.ValueA != nil && math.Abs(*m.ValueA-*tt.valueA) > 1e-12 {
				t.Errorf("value A %v, want %v", deref(m.ValueA), deref(tt.valueA))
			}
			if m.Shared != 40 || m.Paired != nil && (m.Better != tt.better || m.Worse != tt.worse) {
				t.Errorf("shared %d, paired %+v; want 40, better %d worse %d", m.Shared, m.Paired, tt.better, tt.worse)
			}
			var buf bytes.Buffer
			if err := compare.WriteText(&buf, pairs); err != nil || !strings.Contains(buf.String(), tt.text) {
				t.Errorf("text (want %q): %v\n%s", tt.text, err, buf.String())
			}
			buf.Reset()
			if err := compare.WriteHTML(&buf, pairs); err != nil || !strings.Contains(buf.String(), html.EscapeString(tt.text)) {
				t.Errorf("HTML (want %q): %v\n%s", tt.text, err, buf.String())
			}
		})
	}
}

func ptr(v float64) *float64 { return &v }

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// loadAggregated is load with the row's aggregate journaled as agg makes
// it from the row's scores, as the runner journals a scorer's own.
func loadAggregated(t *testing.T, st *store.Store, agg func([]*sdk.ScoreResponse) *sdk.AggregateResponse, ev reporttest.Eval) *journal.Run {
	t.Helper()
	ctx := context.Background()
	id, err := reporttest.Write(ctx, st, reporttest.Run{ConfigPath: "c.hcl", Evals: []reporttest.Eval{ev}, Running: true})
	if err != nil {
		t.Fatal(err)
	}
	finish(t, st, id, ev, "exact", agg)
	if err := st.FinishRun(ctx, id, store.StatusDone); err != nil {
		t.Fatal(err)
	}
	run, err := journal.Load(ctx, st, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	return run
}
