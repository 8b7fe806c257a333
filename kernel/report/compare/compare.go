// Package compare sets two eval rows side by side on the samples they
// share: per scorer, the mean difference with a paired bootstrap CI and how
// many samples got better or worse. The rows come from two runs (the same
// eval, model and retriever) or from one run (two models, or two
// retrievers, of the same eval).
package compare

import (
	"fmt"
	"math"
	"slices"

	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/stats"
)

// Resamples is the number of bootstrap resamples of a paired CI.
const Resamples = 1000

// Pair is two eval rows compared: B against A.
type Pair struct {
	Name    string    `json:"name"` // what is compared, e.g. "needle: model.a vs model.b"
	A       string    `json:"a"`    // A's run and journal name
	B       string    `json:"b"`
	Metrics []*Metric `json:"metrics"`
}

// Metric is one scorer's comparison: the rows' own aggregates, and over the
// samples both rows scored validly, the paired comparison of their scores.
type Metric struct {
	Scorer string `json:"scorer"`
	Shared int    `json:"shared"` // samples both rows scored validly
	OnlyA  int    `json:"only_a"` // samples with a valid score in A alone
	OnlyB  int    `json:"only_b"`
	// ValueA and ValueB are the rows' aggregates as their run reported
	// them (over all of each row's samples); null where a row has none.
	ValueA *float64 `json:"value_a"`
	ValueB *float64 `json:"value_b"`
	// LowerIsBetter: the metric is an error (MAE); Better and Worse count a
	// lower score as the better one.
	LowerIsBetter bool `json:"lower_is_better,omitempty"`
	// NotPerSample says why the shared samples' comparison below is left
	// out (all zero): it is about the metric only when the scorer's
	// aggregate is the mean of its sample scores, which corpus BLEU,
	// XLBench's subtask means or Counting-Stars' cells are not.
	NotPerSample string  `json:"not_per_sample,omitempty"`
	MeanA        float64 `json:"mean_a"` // over the shared samples
	MeanB        float64 `json:"mean_b"`
	Diff         float64 `json:"diff"` // MeanB - MeanA
	CILow        float64 `json:"ci_low"`
	CIHigh       float64 `json:"ci_high"`
	Better       int     `json:"better"` // shared samples that scored better in B
	Worse        int     `json:"worse"`  // … worse in B
}

// Compare compares row b against row a on every scorer they share.
func Compare(name string, a, b *journal.Eval, aLabel, bLabel string, seed uint64) *Pair {
	p := &Pair{Name: name, A: aLabel, B: bLabel}
	for ia, scorer := range a.Scorers {
		ib := slices.Index(b.Scorers, scorer)
		if ib < 0 {
			continue
		}
		va, vb := valid(a, ia), valid(b, ib)
		ma, mb := aggregate(a, ia), aggregate(b, ib)
		m := metric(scorer, va, vb, seed)
		m.ValueA, m.ValueB = value(ma), value(mb)
		m.LowerIsBetter = sdk.LowerIsBetter(ma.Details) || sdk.LowerIsBetter(mb.Details)
		if m.LowerIsBetter {
			m.Better, m.Worse = m.Worse, m.Better
		}
		why := notMean(ma, va)
		if why == "" {
			why = notMean(mb, vb)
		}
		if why != "" {
			*m = Metric{Scorer: m.Scorer, Shared: m.Shared, OnlyA: m.OnlyA, OnlyB: m.OnlyB,
				ValueA: m.ValueA, ValueB: m.ValueB, LowerIsBetter: m.LowerIsBetter, NotPerSample: why}
		}
		p.Metrics = append(p.Metrics, m)
	}
	return p
}

// aggregate is row e's journaled aggregate of scorer i (zero when none).
func aggregate(e *journal.Eval, i int) journal.Metric {
	if i < len(e.Metrics) {
		return e.Metrics[i]
	}
	return journal.Metric{}
}

func value(m journal.Metric) *float64 {
	if !m.HasValue() {
		return nil
	}
	v := m.Value
	return &v
}

// notMean says why the mean of a row's sample scores is not its scorer's
// aggregate, or "" when it is: the one case in which comparing sample
// scores compares the metric. It checks the number rather than trusting a
// scorer kind, so a mean-aggregating scorer without a declaration passes
// and a scorer with its own aggregate does not.
func notMean(m journal.Metric, valid map[string]float64) string {
	switch {
	case m.Recomputed:
		return "" // the journal had no aggregate: it is the plain mean
	case m.N == 0:
		return "a row's aggregate failed, so its sample scores cannot be checked against it"
	case sdk.NoValue(m.Details):
		return fmt.Sprintf("the scorer gives a row no single value (%v)", m.Details[sdk.NoValueKey])
	case len(valid) == 0:
		return ""
	}
	sum := 0.0
	for _, v := range valid {
		sum += v
	}
	mean := sum / float64(len(valid))
	if math.Abs(mean-m.Value) > 1e-9*max(1, math.Abs(m.Value)) {
		return fmt.Sprintf("the scorer's aggregate (%.4g) is not the mean of its sample scores (%.4g); compare the aggregates, or the benchmark's own tables", m.Value, mean)
	}
	return ""
}

// valid is a row's valid scores of scorer i, by sample ID.
func valid(e *journal.Eval, i int) map[string]float64 {
	out := map[string]float64{}
	for _, s := range e.Samples {
		if sc := s.Scores[i]; sc.Has && !sc.Invalid {
			out[s.ID] = sc.Value
		}
	}
	return out
}

func metric(scorer string, a, b map[string]float64, seed uint64) *Metric {
	m := &Metric{Scorer: scorer}
	var ids []string
	for id := range a {
		if _, ok := b[id]; ok {
			ids = append(ids, id)
		} else {
			m.OnlyA++
		}
	}
	m.OnlyB = len(b) - len(ids)
	slices.Sort(ids) // the bootstrap draws by position: fix the order
	d := make([]float64, len(ids))
	for i, id := range ids {
		va, vb := a[id], b[id]
		m.MeanA += va
		m.MeanB += vb
		d[i] = vb - va
		switch {
		case vb > va:
			m.Better++
		case vb < va:
			m.Worse++
		}
	}
	m.Shared = len(ids)
	if m.Shared == 0 {
		return m
	}
	n := float64(m.Shared)
	m.MeanA /= n
	m.MeanB /= n
	m.Diff = stats.Mean(d)
	// Paired: each resample draws samples, keeping each sample's two
	// scores together, so what the samples share cancels out.
	m.CILow, m.CIHigh = stats.Bootstrap(len(d), Resamples, seed, func(idx []int) float64 {
		sum := 0.0
		for _, i := range idx {
			sum += d[i]
		}
		return sum / float64(len(idx))
	})
	return m
}

// Runs pairs the rows of run a and run b that have the same journal name
// (eval, model and retriever) and compares each pair.
func Runs(a, b *journal.Run, seed uint64) ([]*Pair, error) {
	var out []*Pair
	for _, ea := range a.Evals {
		for _, eb := range b.Evals {
			if ea.Name == eb.Name {
				out = append(out, Compare(ea.Name, ea, eb, a.ID, b.ID, seed))
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("runs %s and %s share no eval row (same eval, model and retriever)", a.ID, b.ID)
	}
	return out, nil
}

// Within compares two models (by="model") or two retrievers
// (by="retriever"; "none" is the full-context control) of one run: each
// eval row with x is paired with the row of the same eval, and the same
// retriever (or model), with y.
func Within(run *journal.Run, by, x, y string, seed uint64) ([]*Pair, error) {
	field := func(e *journal.Eval) (string, string) {
		if by == "model" {
			return e.Model, e.RetrieverName()
		}
		return e.RetrieverName(), e.Model
	}
	var out []*Pair
	for _, ea := range run.Evals {
		va, restA := field(ea)
		if va != x {
			continue
		}
		for _, eb := range run.Evals {
			vb, restB := field(eb)
			if vb == y && eb.Base == ea.Base && restA == restB {
				name := fmt.Sprintf("%s (%s): %s vs %s", ea.Base, restA, x, y)
				out = append(out, Compare(name, ea, eb, ea.Name, eb.Name, seed))
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("run %s has no eval with both %s %q and %q", run.ID, by, x, y)
	}
	return out, nil
}
