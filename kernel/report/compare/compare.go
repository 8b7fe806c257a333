// Package compare sets two eval rows side by side on the samples they
// share: per scorer, the mean difference with a paired bootstrap CI and how
// many samples got better or worse. The rows come from two runs (the same
// eval, model and retriever) or from one run (two models, or two
// retrievers, of the same eval).
package compare

import (
	"fmt"
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
	// ValueA and ValueB are the rows' aggregates as their run journaled
	// them (over all of each row's samples); null where a row has none: it
	// failed, its scorer declined one, or the row did not finish.
	ValueA *float64 `json:"value_a"`
	ValueB *float64 `json:"value_b"`
	// LowerIsBetter: the metric is an error (MAE); Better and Worse count a
	// lower score as the better one.
	LowerIsBetter bool `json:"lower_is_better,omitempty"`
	// NotPerSample says why Paired is left out: the shared samples'
	// comparison is about the metric only when the scorer's aggregate is
	// the mean of its sample scores, which corpus BLEU or XLBench's subtask
	// means are not.
	NotPerSample string `json:"not_per_sample,omitempty"`
	// Unchecked: neither row journaled an aggregate (unfinished runs), so
	// Paired assumes, unchecked, that the scorer's aggregate is the mean.
	Unchecked bool `json:"unchecked,omitempty"`
	// Paired is the comparison over the shared samples; nil (its fields
	// absent from JSON) with NotPerSample, or with no shared sample.
	*Paired
}

// Paired compares the rows' scores of the samples both scored validly.
type Paired struct {
	MeanA  float64 `json:"mean_a"` // over the shared samples
	MeanB  float64 `json:"mean_b"`
	Diff   float64 `json:"diff"` // MeanB - MeanA
	CILow  float64 `json:"ci_low"`
	CIHigh float64 `json:"ci_high"`
	Better int     `json:"better"` // shared samples that scored better in B
	Worse  int     `json:"worse"`  // … worse in B
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
		if m.LowerIsBetter && m.Paired != nil {
			m.Better, m.Worse = m.Worse, m.Better
		}
		// Whether the scorer's aggregate is the mean of its sample scores
		// holds for the scorer, so a row that journaled none (it did not
		// finish) is vouched for by the other.
		why, checked := journal.NotMean(ma, a, ia)
		if why == "" {
			w, c := journal.NotMean(mb, b, ib)
			why, checked = w, checked || c
		}
		if why != "" {
			why += "; compare the aggregates, or the benchmark's own tables"
		}
		switch {
		case why != "":
			m.NotPerSample, m.Paired = why, nil
		case !checked && m.Paired != nil:
			m.Unchecked = true
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

// value is m's value when it is the row's own aggregate: not a failed or
// declined one, nor the plain mean the journal reader recomputes for a row
// that did not finish.
func value(m journal.Metric) *float64 {
	if !m.HasValue() || m.Recomputed {
		return nil
	}
	v := m.Value
	return &v
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
	m.Shared = len(ids)
	if m.Shared == 0 {
		return m
	}
	slices.Sort(ids) // the bootstrap draws by position: fix the order
	p := &Paired{}
	d := make([]float64, len(ids))
	for i, id := range ids {
		va, vb := a[id], b[id]
		p.MeanA += va
		p.MeanB += vb
		d[i] = vb - va
		switch {
		case vb > va:
			p.Better++
		case vb < va:
			p.Worse++
		}
	}
	n := float64(m.Shared)
	p.MeanA /= n
	p.MeanB /= n
	p.Diff = stats.Mean(d)
	// Paired: each resample draws samples, keeping each sample's two
	// scores together, so what the samples share cancels out.
	p.CILow, p.CIHigh = stats.Bootstrap(len(d), Resamples, seed, func(idx []int) float64 {
		sum := 0.0
		for _, i := range idx {
			sum += d[i]
		}
		return sum / float64(len(idx))
	})
	m.Paired = p
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
