// Package journal reads one run back from the journal into the shape every
// report of it needs (the HTML report, the live view, compare, export): its
// evals, their metrics and tables, and each sample's position, scores and
// fate. Requests and responses, which hold whole contexts, are not loaded:
// a report streams them (store.EachSampleAnswer) or fetches one at a time.
package journal

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/hayloft/hayloft/kernel/report"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/stats"
)

// Run is a journaled run read back.
type Run struct {
	*store.Run
	Evals []*Eval
	// Tables are the benchmarks' own result tables, merged across evals.
	Tables []sdk.Table
}

// Eval is one journaled eval row: a task answered by one model through one
// retriever.
type Eval struct {
	store.EvalInfo
	// Base is the config's eval name (the journal names a row
	// "eval/model/retriever").
	Base     string
	Identity *store.ModelIdentity // nil when no sample was answered
	Metrics  []Metric             // one per scorer, in EvalInfo.Scorers order
	Samples  []*Sample            // in stream order, then failed samples never journaled as samples
	Lengths  []int                // distinct grid lengths, ascending (empty: none)
	Depths   []float64            // distinct grid depths, ascending (empty: none)
	Failed   int
	// ScoreDetails: every sample score holds its details (Load, or
	// LoadIndexDetails within its budget).
	ScoreDetails bool
}

// Label names the eval row's model and retriever, as the {model} slot of
// its tables is filled in.
func (e *Eval) Label() string {
	if e.Retriever == "" {
		return e.Model
	}
	return e.Model + " / " + e.Retriever
}

// RetrieverName is the retriever, or "none" for the full-context control.
func (e *Eval) RetrieverName() string {
	if e.Retriever == "" {
		return "none"
	}
	return e.Retriever
}

// Metric is one scorer's aggregate over an eval row.
type Metric struct {
	Scorer  string         `json:"scorer"`
	Value   float64        `json:"value"`
	N       int            `json:"n"`
	Invalid int            `json:"invalid"`
	CILow   float64        `json:"ci_low"`
	CIHigh  float64        `json:"ci_high"`
	Details map[string]any `json:"details,omitempty"`
	// Recomputed: the journal holds no aggregate for this scorer, so this
	// is the plain mean of the sample scores with a bootstrap CI, which is
	// the scorer's own aggregate only for mean-aggregating scorers.
	Recomputed bool `json:"recomputed,omitempty"`
}

// HasValue reports whether m has a single value to show: not when its
// aggregate failed (N is 0) nor when its scorer declined one
// (sdk.NoValueKey).
func (m Metric) HasValue() bool { return m.N > 0 && !sdk.NoValue(m.Details) }

// Sample is one sample of an eval row.
type Sample struct {
	ID  string
	Seq int
	// Length and Depth are the grid point the sample belongs to: the one
	// the task asked for when it says so, else the measured one; 0 and -1
	// when they do not apply.
	Length     int
	Depth      float64
	Truncated  bool
	RequestKey string
	// Row is where the sample's row sits in the journal
	// (store.SamplePosition.Row); 0 when unknown.
	Row      int64
	Scores   []Score // aligned with the eval's scorers
	Failed   bool
	FailCode string
	FailMsg  string
	// Lone: the sample failed before it was journaled as a sample.
	Lone bool
}

// Score is one scorer's score of a sample; Has is false when the sample has
// none from that scorer.
type Score struct {
	Has     bool
	Value   float64
	Invalid bool
	Details json.RawMessage // nil unless the eval's ScoreDetails
}

// Load reads run runID; evalNames, when given, keeps only the evals whose
// base name or journal name is listed. Each sample score keeps its details
// (what export writes); LoadIndex leaves them in the journal.
func Load(ctx context.Context, st *store.Store, runID string, evalNames []string) (*Run, error) {
	return load(ctx, st, runID, evalNames, true, 0)
}

// LoadIndex is Load without the sample scores' details: what the HTML
// report and the live view keep in memory for a run of any size (they read
// the details of the samples they draw from the journal).
func LoadIndex(ctx context.Context, st *store.Store, runID string, evalNames []string) (*Run, error) {
	return load(ctx, st, runID, evalNames, false, 0)
}

// LoadIndexDetails is LoadIndex keeping each eval's sample score details
// while they take at most budget bytes (a few bytes a score, usually): the
// HTML report then reads them with the index, in the pass that reads the
// score values anyway, rather than again with each block of samples. An
// eval whose details take more keeps none (Eval.ScoreDetails false).
func LoadIndexDetails(ctx context.Context, st *store.Store, runID string, evalNames []string, budget int) (*Run, error) {
	return load(ctx, st, runID, evalNames, false, budget)
}

func load(ctx context.Context, st *store.Store, runID string, evalNames []string, details bool, budget int) (*Run, error) {
	run, err := loadWith(ctx, st, runID, evalNames, func(ev *Eval) error { return loadEval(ctx, st, runID, ev, details, budget) })
	if err != nil {
		return nil, err
	}
	withdrawRecomputed(run.Evals)
	return run, nil
}

// NotMean says why m, scorer i's journaled aggregate of row e, is not the
// mean of the row's valid sample scores, or "" when it is; checked is
// false when m cannot tell (recomputed, failed, or no valid score). Only a
// mean-aggregating scorer's sample scores can stand for its metric
// (compared sample by sample, or averaged for a row that did not finish).
// It checks the number rather than trusting a scorer kind.
func NotMean(m Metric, e *Eval, i int) (why string, checked bool) {
	switch {
	case m.Recomputed || m.N == 0:
		return "", false
	case sdk.NoValue(m.Details):
		return fmt.Sprintf("the scorer gives a row no single value (%s)", sdk.NoValueReason(m.Details)), true
	}
	sum, n := 0.0, 0
	for _, s := range e.Samples {
		if i < len(s.Scores) && s.Scores[i].Has && !s.Scores[i].Invalid {
			sum += s.Scores[i].Value
			n++
		}
	}
	if n == 0 {
		return "", false
	}
	if mean := sum / float64(n); math.Abs(mean-m.Value) > 1e-9*max(1, math.Abs(m.Value)) {
		return fmt.Sprintf("the scorer's aggregate (%.4g) is not the mean of its sample scores (%.4g)", m.Value, mean), true
	}
	return "", true
}

// withdrawRecomputed takes back the plain mean recompute gave a row that
// journaled no aggregate (it did not finish) wherever another row of the
// run shows that its scorer's aggregate is no mean (corpus BLEU, XLBench
// declining a value): that mean would stand in the row's value column for
// a number its scorer never gives.
func withdrawRecomputed(evs []*Eval) {
	// Checking a journaled aggregate reads every score of its row: only
	// when a row did not finish is there anything to withdraw.
	if !slices.ContainsFunc(evs, func(ev *Eval) bool {
		return slices.ContainsFunc(ev.Metrics, func(m Metric) bool { return m.Recomputed })
	}) {
		return
	}
	notMean := map[string]string{}
	for _, ev := range evs {
		for i, m := range ev.Metrics {
			if why, _ := NotMean(m, ev, i); why != "" {
				notMean[m.Scorer] = why
			}
		}
	}
	for _, ev := range evs {
		for i := range ev.Metrics {
			m := &ev.Metrics[i]
			if why := notMean[m.Scorer]; m.Recomputed && why != "" {
				m.Details = sdk.WithoutValue(m.Details, "the row did not finish, so it journaled no aggregate, and the mean of its sample scores is not one: on another row, "+why)
			}
		}
	}
}

// loadWith reads run runID's evals (those of evalNames when given), each
// filled in by fill, and merges their tables.
func loadWith(ctx context.Context, st *store.Store, runID string, evalNames []string, fill func(*Eval) error) (*Run, error) {
	info, err := st.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	infos, err := st.Evals(ctx, runID)
	if err != nil {
		return nil, err
	}
	run := &Run{Run: info}
	var srcs []report.TableSource
	for _, ei := range infos {
		ev := &Eval{EvalInfo: ei, Base: ei.Eval}
		if ev.Base == "" {
			ev.Base = baseName(ei)
		}
		if len(evalNames) > 0 && !slices.Contains(evalNames, ev.Base) && !slices.Contains(evalNames, ev.Name) {
			continue
		}
		if err := fill(ev); err != nil {
			return nil, err
		}
		run.Evals = append(run.Evals, ev)
		for _, m := range ev.Metrics {
			ts, err := sdk.TablesOf(m.Details)
			if err != nil {
				return nil, fmt.Errorf("run %s: eval %s: scorer %s: %w", runID, ev.Name, m.Scorer, err)
			}
			srcs = append(srcs, report.TableSource{Model: ev.Label(), Tables: ts})
		}
	}
	if len(evalNames) > 0 && len(run.Evals) == 0 {
		return nil, fmt.Errorf("run %s has no eval named %s", runID, strings.Join(evalNames, " or "))
	}
	run.Tables = report.MergeTables(srcs)
	return run, nil
}

// Latest is the newest run's ID.
func Latest(ctx context.Context, st *store.Store) (string, error) {
	runs, err := st.Runs(ctx)
	if err != nil {
		return "", err
	}
	if len(runs) == 0 {
		return "", fmt.Errorf("%s holds no run yet", st.Path())
	}
	return runs[0].ID, nil
}

func baseName(ei store.EvalInfo) string {
	r := ei.Retriever
	if r == "" {
		r = "none"
	}
	if b, ok := strings.CutSuffix(ei.Name, "/"+ei.Model+"/"+r); ok {
		return b
	}
	return ei.Name
}

func loadEval(ctx context.Context, st *store.Store, runID string, ev *Eval, details bool, budget int) error {
	lengths, depths := map[int]bool{}, map[float64]bool{}
	// Sample rows come in ID order, then the lone failures.
	rowsEnd := 0
	// The sample positions and the score values are read at once (two
	// connections), the scores kept in key order until the samples are in.
	var values []store.ScoreValue
	var valuesErr error
	done := make(chan struct{})
	ev.ScoreDetails = details || budget > 0
	if !details {
		go func() {
			defer close(done)
			var kept scoreDetails
			valuesErr = st.EachScoreValue(ctx, runID, ev.Name, func(r *store.ScoreValue) error {
				v := *r
				v.Details = nil
				if ev.ScoreDetails && len(r.Details) > 2 {
					if v.Details = kept.keep(r.Details, budget); v.Details == nil {
						// Over budget: the blocks read them.
						ev.ScoreDetails = false
						kept = scoreDetails{}
						for i := range values {
							values[i].Details = nil
						}
					}
				}
				values = append(values, v)
				return nil
			})
		}()
	} else {
		close(done)
	}
	err := st.EachSamplePosition(ctx, runID, ev.Name, func(p *store.SamplePosition) error {
		s := newSample(ev, p)
		if !p.Lone {
			rowsEnd++
		}
		if p.Failed {
			ev.Failed++
		}
		if s.Length > 0 {
			lengths[s.Length] = true
		}
		if s.Depth >= 0 {
			depths[s.Depth] = true
		}
		ev.Samples = append(ev.Samples, s)
		return nil
	})
	<-done
	if err != nil {
		return err
	}
	if valuesErr != nil {
		return valuesErr
	}
	ev.Lengths = slices.Sorted(maps.Keys(lengths))
	ev.Depths = slices.Sorted(maps.Keys(depths))
	col := map[string]int{}
	for i, name := range ev.Scorers {
		col[name] = i
	}
	// find is the sample of a score: scores come by scorer, then ID, as
	// the sample rows do, so a cursor follows them. A score it misses (a
	// lone failure's, or a database whose collation is not bytewise) is
	// looked up.
	rows := ev.Samples[:rowsEnd]
	var byID map[string]*Sample
	cursor, last := 0, ""
	find := func(scorer, id string) *Sample {
		if scorer != last {
			cursor, last = 0, scorer
		}
		for cursor < len(rows) && rows[cursor].ID < id {
			cursor++
		}
		if cursor < len(rows) && rows[cursor].ID == id {
			return rows[cursor]
		}
		if byID == nil {
			byID = make(map[string]*Sample, len(ev.Samples))
			for _, s := range ev.Samples {
				byID[s.ID] = s
			}
		}
		return byID[id]
	}
	if details {
		// EachScore's order is not the key's: look every sample up.
		byID = make(map[string]*Sample, len(ev.Samples))
		for _, s := range ev.Samples {
			byID[s.ID] = s
		}
		err = st.EachScore(ctx, runID, ev.Name, func(r *store.ScoreRow) error {
			s, ok := byID[r.SampleID]
			i, known := col[r.Scorer]
			if !ok || !known {
				return nil // a score of a sample or scorer this eval no longer lists
			}
			s.Scores[i] = Score{Has: true, Value: r.Value, Invalid: r.Invalid}
			if len(r.Details) > 2 {
				s.Scores[i].Details = r.Details
			}
			return nil
		})
	} else {
		for _, r := range values {
			i, known := col[r.Scorer]
			if !known {
				continue
			}
			if s := find(r.Scorer, r.SampleID); s != nil {
				s.Scores[i] = Score{Has: true, Value: r.Value, Invalid: r.Invalid, Details: r.Details}
			}
		}
	}
	if err != nil {
		return err
	}
	if err := loadIdentity(ctx, st, ev); err != nil {
		return err
	}
	journaled, err := loadMetrics(ctx, st, runID, ev)
	if err != nil {
		return err
	}
	if !journaled {
		// Journals before schema 2, or a row still running: no aggregate
		// was journaled.
		ev.Metrics = recompute(ev)
	}
	return nil
}

// scoreDetails holds copies of score details in a few large chunks rather
// than one allocation each.
type scoreDetails struct {
	chunk []byte
	total int
}

// keep returns a copy of d, or nil when the copies would take more than
// budget bytes in all.
func (k *scoreDetails) keep(d []byte, budget int) []byte {
	if k.total+len(d) > budget {
		return nil
	}
	k.total += len(d)
	if cap(k.chunk)-len(k.chunk) < len(d) {
		k.chunk = make([]byte, 0, max(len(d), 1<<20))
	}
	start := len(k.chunk)
	k.chunk = append(k.chunk, d...)
	return k.chunk[start:len(k.chunk):len(k.chunk)]
}

// loadMetrics sets the eval's metrics from its journaled aggregates; false
// when it has none.
func loadMetrics(ctx context.Context, st *store.Store, runID string, ev *Eval) (bool, error) {
	ms, err := st.Metrics(ctx, runID, ev.Name)
	if err != nil || len(ms) == 0 {
		return false, err
	}
	for _, name := range ev.Scorers {
		if m := ms[name]; m != nil {
			ev.Metrics = append(ev.Metrics, Metric{Scorer: name, Value: m.Value, N: m.N, Invalid: m.Invalid, CILow: m.CILow, CIHigh: m.CIHigh, Details: m.Details})
		} else {
			ev.Metrics = append(ev.Metrics, Metric{Scorer: name})
		}
	}
	return true, nil
}

// First is what LoadFirst counts of a run besides the samples it reads.
type First struct {
	// Total is the number of samples in the run's index, all evals.
	Total int
	// Shown and Failed are each eval's counts by journal name, as a full
	// load has them: len(Samples)-Failed and Failed.
	Shown, Failed map[string]int
	// Pending names the evals with no journaled aggregate (a row still
	// running, a journal before schema 2): their metrics are recomputed
	// from every sample, so LoadFirst leaves them unset.
	Pending map[string]bool
}

// errPageFull stops reading an eval's samples once the page has them.
var errPageFull = errors.New("page full")

// LoadFirst reads run runID for a page that shows only its first samples,
// without reading the others (seconds at 200,000 samples): the evals'
// metrics and tables from their journaled aggregates, their counts from
// SQL, and the first page samples of the index's order (evals in turn,
// each in LoadIndex's order) with their scores' values. Identity, Lengths
// and Depths are left unset: they need every sample, and so do the metrics
// of an eval without a journaled aggregate (listed in First.Pending).
func LoadFirst(ctx context.Context, st *store.Store, runID string, page int) (*Run, *First, error) {
	first := &First{Shown: map[string]int{}, Failed: map[string]int{}, Pending: map[string]bool{}}
	run, err := loadWith(ctx, st, runID, nil, func(ev *Eval) error {
		journaled, err := loadMetrics(ctx, st, runID, ev)
		if err != nil {
			return err
		}
		if !journaled {
			first.Pending[ev.Name] = true
		}
		rows, failed, lone, err := st.EvalCounts(ctx, runID, ev.Name)
		if err != nil {
			return err
		}
		first.Total += rows + lone
		first.Shown[ev.Name], first.Failed[ev.Name] = rows+lone-failed, failed
		ev.Failed = failed
		want := page - (first.Total - rows - lone)
		if want <= 0 {
			return nil
		}
		err = st.EachSamplePosition(ctx, runID, ev.Name, func(p *store.SamplePosition) error {
			if len(ev.Samples) == want {
				return errPageFull
			}
			ev.Samples = append(ev.Samples, newSample(ev, p))
			return nil
		})
		if err != nil && !errors.Is(err, errPageFull) {
			return err
		}
		for _, s := range ev.Samples {
			scores, err := st.SampleScores(ctx, runID, ev.Name, s.ID, ev.Scorers)
			if err != nil {
				return err
			}
			for i, sc := range scores {
				if sc.Has {
					s.Scores[i] = Score{Has: true, Value: sc.Value, Invalid: sc.Invalid}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return run, first, nil
}

// newSample is the index entry of a sample position.
func newSample(ev *Eval, p *store.SamplePosition) *Sample {
	s := &Sample{ID: p.ID, Seq: p.Index, Row: p.Row, Truncated: p.Truncated, RequestKey: p.RequestKey,
		Failed: p.Failed, FailCode: p.FailCode, FailMsg: p.FailMsg, Lone: p.Lone,
		Scores: make([]Score, len(ev.Scorers))}
	s.Length, s.Depth = GridPoint(p.Tokens, p.Depth, p.Grid)
	if p.Lone {
		s.Length, s.Depth = 0, -1
	}
	return s
}

// loadIdentity sets the identity of the model that answered the eval's
// samples, as journaled with the first answer in stream order
// (store.EvalIdentity's choice, found here by looking up the samples
// already loaded in that order: the first is nearly always answered).
func loadIdentity(ctx context.Context, st *store.Store, ev *Eval) error {
	// The first in stream order nearly always answered: look it up before
	// ordering them all.
	var first *Sample
	for _, s := range ev.Samples {
		if !s.Lone && s.RequestKey != "" && (first == nil || s.Seq < first.Seq) {
			first = s
		}
	}
	if first == nil {
		return nil
	}
	if id, ok, err := st.ResponseIdentity(ctx, first.RequestKey); err != nil || ok {
		if err != nil {
			return fmt.Errorf("eval %s: %w", ev.Name, err)
		}
		ev.Identity = &id
		return nil
	}
	var order []*Sample
	for _, s := range ev.Samples {
		if !s.Lone && s.RequestKey != "" {
			order = append(order, s)
		}
	}
	slices.SortStableFunc(order, func(a, b *Sample) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, s := range order {
		id, ok, err := st.ResponseIdentity(ctx, s.RequestKey)
		if err != nil {
			return fmt.Errorf("eval %s: %w", ev.Name, err)
		}
		if ok {
			ev.Identity = &id
			return nil
		}
	}
	return nil
}

// recompute is each scorer's metric from the sample scores: the plain mean
// with the seeded bootstrap CI the kernel uses for mean-aggregating scorers.
func recompute(ev *Eval) []Metric {
	out := make([]Metric, len(ev.Scorers))
	for i, name := range ev.Scorers {
		var scores []*sdk.ScoreResponse
		for _, s := range ev.Samples {
			if sc := s.Scores[i]; sc.Has {
				scores = append(scores, &sdk.ScoreResponse{Value: sc.Value, Invalid: sc.Invalid})
			}
		}
		agg := stats.AggregateMean(scores, stats.DefaultSeed)
		out[i] = Metric{Scorer: name, Value: agg.Value, N: agg.N, Invalid: agg.Invalid, CILow: agg.CILow, CIHigh: agg.CIHigh, Recomputed: true}
	}
	return out
}

// GridPoint is where a sample sits in a length × depth grid: the point the
// task asked for (sdk.Sample.Grid; reached values vary a little per sample),
// else the measured length and depth. Length 0 and depth -1 mean "does not
// apply". Depths are rounded to 0.001 so that a grid's columns are not split
// by float noise.
func GridPoint(tokens int, depth float64, grid *sdk.GridPoint) (int, float64) {
	length := tokens
	if grid != nil {
		length, depth = grid.Length, grid.Depth
	}
	if depth >= 0 {
		depth = report.DepthKey(depth)
	} else {
		depth = -1
	}
	return length, depth
}

// Cell is the mean of one scorer's valid scores at one grid point.
type Cell struct {
	Length int
	Depth  float64
	Mean   float64
	N      int
}

// Grid is the length × depth means of scorer i, one cell per grid point
// that has a valid score, ordered by length then depth.
func (e *Eval) Grid(i int) []Cell {
	type key struct {
		l int
		d float64
	}
	sums := map[key]*Cell{}
	for _, s := range e.Samples {
		sc := s.Scores[i]
		if !sc.Has || sc.Invalid || s.Length <= 0 || s.Depth < 0 {
			continue
		}
		k := key{s.Length, s.Depth}
		c := sums[k]
		if c == nil {
			c = &Cell{Length: s.Length, Depth: s.Depth}
			sums[k] = c
		}
		c.Mean += sc.Value
		c.N++
	}
	out := make([]Cell, 0, len(sums))
	for _, c := range sums {
		c.Mean /= float64(c.N)
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Cell) int {
		return cmp.Or(cmp.Compare(a.Length, b.Length), cmp.Compare(a.Depth, b.Depth))
	})
	return out
}

// ByLength is the mean of scorer i's valid scores per grid length.
func (e *Eval) ByLength(i int) []Cell {
	sums := map[int]*Cell{}
	for _, s := range e.Samples {
		sc := s.Scores[i]
		if !sc.Has || sc.Invalid || s.Length <= 0 {
			continue
		}
		c := sums[s.Length]
		if c == nil {
			c = &Cell{Length: s.Length, Depth: -1}
			sums[s.Length] = c
		}
		c.Mean += sc.Value
		c.N++
	}
	out := make([]Cell, 0, len(sums))
	for _, c := range sums {
		c.Mean /= float64(c.N)
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Cell) int { return cmp.Compare(a.Length, b.Length) })
	return out
}
