// Package xlbench is XLBench's scorer: it routes each sample to its
// subtask's metric (the spec's table), reusing the metric scorers — exact
// (accuracy), rougel (character tokens for Chinese), bleu (sacrebleu), mae
// (ratings 0–10) and f1 (option-set F1) — and returns the paper's tables
// from Aggregate: per-subtask scores ×100 grouped by task family, split by
// scenario and language, one row per model; the original-vs-variant table;
// and scores against document-length bins.
//
// Options (all optional):
//
//	metrics     = { question_answering = "rougel", "paper/content_retrieval" = "contains" }
//	accuracy    = { lowercase = true, … }     # exact's options
//	rougel      = { use_stemmer = false }     # English; Chinese adds tokenizer = "char"
//	rougel_zh   = { tokenizer = "char" }
//	bleu        = { smooth_method = "exp" }   # sacrebleu; tokenizer 13a (en) / zh (zh) unless set
//	mae         = { min = 0, max = 10 }
//	length_bins = [50000, 100000, 150000, 200000]   # document length edges (words en, chars zh)
//	seed        = 0                                  # bootstrap interval
//
// The paper names no implementation for its metrics; the choices above are
// hayloft's, and every table's notes and the aggregate's details record them.
package xlbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/hayloft/hayloft/plugins/internal/metanum"
	"github.com/hayloft/hayloft/plugins/scorers/bleu"
	"github.com/hayloft/hayloft/plugins/scorers/contains"
	"github.com/hayloft/hayloft/plugins/scorers/exact"
	"github.com/hayloft/hayloft/plugins/scorers/f1"
	"github.com/hayloft/hayloft/plugins/scorers/mae"
	"github.com/hayloft/hayloft/plugins/scorers/rougel"
	task "github.com/hayloft/hayloft/plugins/tasks/xlbench"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/stats"
)

// Name is the scorer's registered name.
const Name = "xlbench"

// Metric names the map accepts, beyond the spec's five.
const (
	MetricContains = "contains"
	MetricTokenF1  = "f1"
)

// Default options of the underlying scorers: hayloft's choices, recorded.
var (
	// Accuracy ignores case, ASCII punctuation and extra whitespace, so
	// "12." matches "12"; articles are kept (they are not English-only noise
	// in Chinese answers).
	defaultAccuracy = map[string]any{"lowercase": true, "remove_punctuation": true, "normalize_whitespace": true}
	defaultMAE      = map[string]any{"min": 0, "max": 10}
)

// DefaultLengthBins are the document-length edges of the length table, in
// the documents' own unit (words for English, characters for Chinese).
var DefaultLengthBins = []int{50_000, 100_000, 150_000, 200_000}

// Options are the scorer's settings.
type Options struct {
	Metrics    map[string]string `json:"metrics"`
	Accuracy   json.RawMessage   `json:"accuracy"`
	RougeL     json.RawMessage   `json:"rougel"`
	RougeLZh   json.RawMessage   `json:"rougel_zh"`
	BLEU       json.RawMessage   `json:"bleu"`
	MAE        json.RawMessage   `json:"mae"`
	LengthBins []int             `json:"length_bins"`
	Seed       uint64            `json:"seed"`
}

// Scorer is the XLBench scorer; safe for concurrent use.
type Scorer struct {
	metric  map[string]string // "scenario/subtask" → metric
	scorers map[string]sdk.Scorer
	impl    map[string]string // metric → how it is computed, for the notes
	// bleuPoint is the BLEU scorer with a single bootstrap resample: the
	// corpus value alone, cheap enough to recompute per resample.
	bleuPoint sdk.Aggregator
	bins      []int
	seed      uint64
}

var _ sdk.Aggregator = (*Scorer)(nil)

func key(scenario, subtask string) string { return scenario + "/" + subtask }

// New builds the scorer.
func New(ctx context.Context, raw sdk.Options) (sdk.Scorer, error) {
	return NewScorer(ctx, raw)
}

// NewScorer is New returning the concrete type.
func NewScorer(ctx context.Context, raw sdk.Options) (*Scorer, error) {
	var o Options
	if err := raw.Decode(&o); err != nil {
		return nil, err
	}
	s := &Scorer{metric: map[string]string{}, scorers: map[string]sdk.Scorer{}, impl: map[string]string{}, bins: DefaultLengthBins, seed: o.Seed}
	for _, st := range task.Subtasks {
		s.metric[key(st.Scenario, st.Name)] = st.Metric
	}
	known := []string{task.MetricAccuracy, task.MetricRougeL, task.MetricBLEU, task.MetricMAE, task.MetricChoiceF1, MetricContains, MetricTokenF1}
	for name, m := range o.Metrics {
		if !slices.Contains(known, m) {
			return nil, sdk.Configf("metrics."+name, "unknown metric %q (want one of %v)", m, known)
		}
		hit := false
		for _, st := range task.Subtasks {
			if name == st.Name || name == key(st.Scenario, st.Name) {
				s.metric[key(st.Scenario, st.Name)] = m
				hit = true
			}
		}
		if !hit {
			msg := fmt.Sprintf("unknown subtask %q", name)
			if near := sdk.Suggest(name, task.SubtaskNames("")); near != "" {
				msg += fmt.Sprintf("; did you mean %q?", near)
			}
			return nil, sdk.Configf("metrics", "%s", msg)
		}
	}
	if len(o.LengthBins) > 0 {
		for i, e := range o.LengthBins {
			if e <= 0 || i > 0 && e <= o.LengthBins[i-1] {
				return nil, sdk.Configf("length_bins", "want increasing positive edges, got %v", o.LengthBins)
			}
		}
		s.bins = o.LengthBins
	}
	build := []struct {
		id      string
		field   string
		factory sdk.ScorerFactory
		given   json.RawMessage
		def     map[string]any
		impl    string
	}{
		{task.MetricAccuracy, "accuracy", exact.New, o.Accuracy, defaultAccuracy,
			"accuracy: exact match after lowercasing, dropping ASCII punctuation and collapsing whitespace"},
		{MetricContains, "accuracy", contains.New, o.Accuracy, defaultAccuracy,
			"contains: a target occurs in the answer, same normalisation as accuracy"},
		{task.MetricRougeL + "/en", "rougel", rougel.New, o.RougeL, nil,
			"ROUGE-L (en): rouge_score's F-measure and tokenizer, no stemming"},
		{task.MetricRougeL + "/zh", "rougel_zh", rougel.New, o.RougeLZh, map[string]any{"tokenizer": rougel.TokenizerChar},
			"ROUGE-L (zh): rouge_score's F-measure over characters (tokenizer \"char\")"},
		{task.MetricBLEU, "bleu", bleu.New, o.BLEU, nil,
			"BLEU: sacrebleu corpus BLEU per subtask (13a tokenizer for en, zh for zh, exp smoothing), shown /100 on the ×100 scale"},
		{task.MetricMAE, "mae", mae.New, o.MAE, defaultMAE,
			"MAE: first number in the answer against the rating (0–10); answers without one are invalid, \"None\" when no answer is usable"},
		{task.MetricChoiceF1, "", f1.New, nil, map[string]any{"mode": f1.ModeChoices},
			"option-set F1: letters named in the answer against the answer's letters; an answer naming no option scores 0"},
		{MetricTokenF1, "", f1.New, nil, nil, "f1: SQuAD token F1 (en), character F1 (zh)"},
	}
	for _, b := range build {
		opts := sdk.Options(b.given)
		if len(b.given) == 0 {
			opts = sdk.MustOptions(b.def)
		}
		if b.id == task.MetricRougeL+"/zh" && len(o.RougeLZh) == 0 {
			// Chinese reuses the English settings with character tokens.
			m := map[string]any{}
			if len(o.RougeL) > 0 {
				if err := json.Unmarshal(o.RougeL, &m); err != nil {
					return nil, sdk.Configf("rougel", "%v", err)
				}
			}
			m["tokenizer"] = rougel.TokenizerChar
			opts = sdk.MustOptions(m)
		}
		sc, err := b.factory(ctx, opts)
		if err != nil {
			var ce *sdk.ConfigError
			if errors.As(err, &ce) && b.field != "" {
				return nil, sdk.Configf(b.field+"."+ce.Field, "%s", ce.Msg)
			}
			return nil, err
		}
		s.scorers[b.id] = sc
		s.impl[b.id] = b.impl
		if o := strings.TrimSpace(string(opts)); o != "" && o != "null" && o != "{}" {
			s.impl[b.id] += "; options " + o
		}
	}
	point := map[string]any{}
	if len(o.BLEU) > 0 {
		if err := json.Unmarshal(o.BLEU, &point); err != nil {
			return nil, sdk.Configf("bleu", "%v", err)
		}
	}
	point["bootstrap_resamples"] = 1
	bp, err := bleu.New(ctx, sdk.MustOptions(point))
	if err != nil {
		return nil, err
	}
	s.bleuPoint = bp.(sdk.Aggregator)
	return s, nil
}

// inner picks the underlying scorer of a metric for a language.
func (s *Scorer) inner(metric, lang string) sdk.Scorer {
	if metric == task.MetricRougeL {
		if lang == "zh" {
			return s.scorers[metric+"/zh"]
		}
		return s.scorers[metric+"/en"]
	}
	return s.scorers[metric]
}

func metaString(s *sdk.Sample, k string) string {
	v, _ := s.Metadata[k].(string)
	return v
}

// Score scores one sample by its subtask's metric. Details carry what the
// tables group by (scenario, subtask, family, language, metric, document
// length, variant, mode) and the metric's own details under "metric_details".
func (s *Scorer) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	if err := req.NeedTargets(Name); err != nil {
		return nil, err
	}
	smp := req.Sample
	scenario := metaString(smp, "scenario")
	st, ok := task.Lookup(scenario, smp.Subtask)
	if !ok {
		return nil, fmt.Errorf("%s: sample %q: scenario %q, subtask %q is not an XLBench subtask (is the task xlbench?)", Name, smp.ID, scenario, smp.Subtask)
	}
	metric := s.metric[key(scenario, smp.Subtask)]
	resp, err := s.inner(metric, smp.Language).Score(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", Name, metric, err)
	}
	out := &sdk.ScoreResponse{Value: resp.Value, Invalid: resp.Invalid, Stats: resp.Stats}
	switch metric {
	case task.MetricBLEU:
		out.Value = resp.Value / 100 // sacrebleu is 0–100; tables are ×100 of 0–1
	case task.MetricChoiceF1:
		if resp.Invalid {
			out.Value, out.Invalid = 0, false
		}
	}
	d := map[string]any{
		"scenario": scenario, "subtask": st.Name, "family": st.Family, "language": smp.Language,
		"metric": metric, "metric_details": resp.Details,
	}
	for _, k := range []string{"doc_length", "doc_length_unit", "variant", "mode", "layout"} {
		if v, ok := smp.Metadata[k]; ok {
			d[k] = v
		}
	}
	out.Details = d
	return out, nil
}

// group is the scores of one (scenario, language, subtask).
type group struct {
	scenario, lang string
	st             task.Subtask
	metric         string
	scores         []*sdk.ScoreResponse
}

// cell is a group's table value.
type cell struct {
	value *float64
	n     int
}

// value is a subtask's table value: corpus BLEU (through bleuAgg) /100 for
// BLEU, else the mean of the valid scores; nil when none is valid.
func (s *Scorer) value(ctx context.Context, metric string, scores []*sdk.ScoreResponse, bleuAgg sdk.Aggregator) (cell, error) {
	if metric == task.MetricBLEU {
		agg, err := bleuAgg.Aggregate(ctx, &sdk.AggregateRequest{Scores: scores})
		if err != nil {
			return cell{}, err
		}
		v := agg.Value / 100
		return cell{&v, agg.N - agg.Invalid}, nil
	}
	var sum float64
	n := 0
	for _, sc := range scores {
		if sc.Invalid {
			continue
		}
		sum += sc.Value
		n++
	}
	if n == 0 {
		return cell{nil, 0}, nil
	}
	v := sum / float64(n)
	return cell{&v, n}, nil
}

func detailString(d map[string]any, k string) string {
	v, _ := d[k].(string)
	return v
}

// Aggregate computes each subtask's score and the paper's tables. Value is
// the row's mean as the paper computes one, per scenario and language: the
// macro mean over subtasks of the higher-is-better metrics (MAE is left
// out: its scale is not 0–1), with a bootstrap interval over samples. A row
// with more than one such mean has no value (sdk.NoValueKey): pooling them
// would mix languages, which the paper never does.
func (s *Scorer) Aggregate(ctx context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	groups := map[string]*group{}
	var order []string
	invalid := 0
	variant, mode, layout := "", "", ""
	for i, sc := range req.Scores {
		if sc == nil {
			invalid++
			continue
		}
		scenario, lang, sub := detailString(sc.Details, "scenario"), detailString(sc.Details, "language"), detailString(sc.Details, "subtask")
		st, ok := task.Lookup(scenario, sub)
		if !ok && sc.Invalid {
			// A sample the scorer could not score at all (the runner's
			// record of its error carries no subtask): invalid, as any.
			invalid++
			continue
		}
		if !ok {
			return nil, fmt.Errorf("%s: score %d: no XLBench subtask in its details", Name, i)
		}
		if sc.Invalid {
			invalid++
		}
		if v := detailString(sc.Details, "variant"); v != "" {
			variant = v
		}
		if m := detailString(sc.Details, "mode"); m != "" {
			mode = m
		}
		if l := detailString(sc.Details, "layout"); l != "" {
			layout = l
		}
		k := scenario + "\x00" + lang + "\x00" + sub
		g := groups[k]
		if g == nil {
			g = &group{scenario: scenario, lang: lang, st: st, metric: detailString(sc.Details, "metric")}
			groups[k] = g
			order = append(order, k)
		}
		g.scores = append(g.scores, sc)
	}
	cells := map[string]cell{}
	subtasks := map[string]any{}
	var macro []string
	for _, k := range order {
		g := groups[k]
		c, err := s.value(ctx, g.metric, g.scores, s.scorers[task.MetricBLEU].(sdk.Aggregator))
		if err != nil {
			return nil, fmt.Errorf("%s: %s/%s/%s: %w", Name, g.scenario, g.lang, g.st.Name, err)
		}
		cells[k] = c
		entry := map[string]any{"metric": g.metric, "n": len(g.scores), "valid": c.n, "family": g.st.Family}
		if c.value != nil {
			entry["value"] = *c.value
		}
		subtasks[g.scenario+"/"+g.lang+"/"+g.st.Name] = entry
		if g.metric != task.MetricMAE && c.value != nil {
			macro = append(macro, k)
		}
	}
	means := s.means(groups, order, cells)
	noValue := s.noValue(groups, means)
	value, lo, hi := 0.0, 0.0, 0.0
	if noValue == "" {
		for _, k := range macro {
			value += *cells[k].value
		}
		if len(macro) > 0 {
			value /= float64(len(macro))
		}
		lo, hi = s.bootstrap(ctx, groups, macro)
	}
	label := rowLabel(variant, mode)
	notes := func(scenario, lang string) []string {
		return s.notes(groups, func(g *group) bool { return g.scenario == scenario && (lang == "" || g.lang == lang) }, variant, mode, layout)
	}
	tables := s.subtaskTables(groups, cells, label, notes)
	if t, ok := s.variantTable(groups, order, cells, variant, mode, notes(task.Fiction, "")); ok {
		tables = append(tables, t)
	}
	tables = append(tables, s.lengthTables(groups, order, label, notes)...)
	details := map[string]any{
		"subtasks":        subtasks,
		"metric_map":      s.metricMap(groups),
		"implementations": s.impl,
		"value":           "the row's one scenario and language: the macro mean over its subtasks of the 0–1 metrics (MAE excluded), as in means; interval: bootstrap over samples, recomputed the same way. A row of more than one scenario or language has no value: the paper's means are per scenario and language, never pooled across languages (see means and the tables)",
		"means":           means,
	}
	if noValue != "" {
		details = sdk.WithoutValue(details, noValue)
	}
	return &sdk.AggregateResponse{
		Value: value, N: len(req.Scores), Invalid: invalid, CILow: lo, CIHigh: hi,
		Details: sdk.WithTables(details, tables...),
	}, nil
}

// noValue says why a row has no one value, or "" when it has one: its
// samples are of one scenario and language, which has a mean (a row of
// rating_score alone has only an MAE, shown raw in the tables).
func (s *Scorer) noValue(groups map[string]*group, means map[string]float64) string {
	pairs := map[string]bool{}
	for _, g := range groups {
		pairs[g.scenario+"/"+g.lang] = true
	}
	switch {
	case len(pairs) > 1:
		return fmt.Sprintf("the row is of %d scenario-language pairs (%s); XLBench's means are per scenario and language, never pooled into one number: see means and the tables", len(pairs), strings.Join(slices.Sorted(maps.Keys(pairs)), ", "))
	case len(means) == 0:
		return "the row has no subtask scored 0–1 to take a mean of (an MAE is shown raw in the tables, never averaged)"
	}
	return ""
}

// means are the macro means of the 0–1 subtask scores per scenario and
// language ("fiction/en"), never pooled across languages.
func (s *Scorer) means(groups map[string]*group, order []string, cells map[string]cell) map[string]float64 {
	sum, n := map[string]float64{}, map[string]int{}
	for _, k := range order {
		g := groups[k]
		if g.metric == task.MetricMAE || cells[k].value == nil {
			continue
		}
		sum[g.scenario+"/"+g.lang] += *cells[k].value
		n[g.scenario+"/"+g.lang]++
	}
	out := map[string]float64{}
	for k, v := range sum {
		out[k] = v / float64(n[k])
	}
	return out
}

func (s *Scorer) metricMap(groups map[string]*group) map[string]string {
	out := map[string]string{}
	for _, g := range groups {
		out[key(g.scenario, g.st.Name)] = g.metric
	}
	return out
}

// bootstrap resamples the scores and recomputes the macro mean exactly as
// Value is computed (corpus BLEU for BLEU subtasks), so the interval is
// about the number it brackets.
func (s *Scorer) bootstrap(ctx context.Context, groups map[string]*group, macro []string) (float64, float64) {
	type item struct {
		g  int
		sc *sdk.ScoreResponse
	}
	var items []item
	for gi, k := range macro {
		for _, sc := range groups[k].scores {
			items = append(items, item{gi, sc})
		}
	}
	buckets := make([][]*sdk.ScoreResponse, len(macro))
	return stats.Bootstrap(len(items), stats.DefaultResamples, s.seed, func(ix []int) float64 {
		for g := range buckets {
			buckets[g] = buckets[g][:0]
		}
		for _, i := range ix {
			buckets[items[i].g] = append(buckets[items[i].g], items[i].sc)
		}
		m, n := 0.0, 0
		for g, b := range buckets {
			if len(b) == 0 {
				continue
			}
			c, err := s.value(ctx, groups[macro[g]].metric, b, s.bleuPoint)
			if err != nil || c.value == nil {
				continue
			}
			m += *c.value
			n++
		}
		if n == 0 {
			return 0
		}
		return m / float64(n)
	})
}

// rowLabel is the model slot, plus the variant and mode when they are not
// the original zero-shot setting: rows of different settings must not merge.
func rowLabel(variant, mode string) string {
	l := sdk.ModelSlot
	if variant != "" && variant != "original" {
		l += " · " + variant
	}
	if mode != "" && mode != task.ModeZeroShot {
		l += " · " + mode
	}
	return l
}

func scenarioTitle(scenario, lang string) string {
	return strings.ToUpper(scenario[:1]) + scenario[1:] + "-" + strings.ToUpper(lang)
}

// notes lists the implementations of the metrics the groups keep uses,
// and the setting the scores come from.
func (s *Scorer) notes(groups map[string]*group, keep func(*group) bool, variant, mode, layout string) []string {
	used := map[string]bool{}
	for _, g := range groups {
		if !keep(g) {
			continue
		}
		used[g.metric] = true
		if g.metric == task.MetricRougeL {
			used[g.metric+"/"+g.lang] = true
			delete(used, g.metric)
		}
	}
	var notes []string
	for _, k := range slices.Sorted(maps.Keys(used)) {
		if impl, ok := s.impl[k]; ok {
			notes = append(notes, impl)
		}
	}
	notes = append(notes, "Scores ×100 (MAE raw); \"<1\" marks scores under 1. The paper gives no decoding values; examples/xlbench.hcl uses temperature 0. Inputs over a model's window are cut by its `truncation` (default middle: the first and last halves of the token budget kept, hayloft's choice; the paper says only \"from the middle\"), and each sample records whether it was cut.")
	if variant != "" || mode != "" || layout != "" {
		notes = append(notes, fmt.Sprintf("data %s, %s, template layout %q (the paper's wording; the layout is hayloft's choice)",
			or(variant, "original"), or(mode, task.ModeZeroShot), or(layout, task.LayoutInline)))
	}
	return notes
}

func or(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// subtaskTables are the paper's per-subtask tables: one per scenario and
// language, subtasks as columns grouped by family, never pooled across
// languages.
func (s *Scorer) subtaskTables(groups map[string]*group, cells map[string]cell, label string, notes func(scenario, lang string) []string) []sdk.Table {
	type sl struct{ scenario, lang string }
	var tabs []sl
	for _, sc := range []string{task.Fiction, task.Paper, task.Law} {
		for _, lang := range task.Languages[sc] {
			tabs = append(tabs, sl{sc, lang})
		}
	}
	var out []sdk.Table
	for _, tb := range tabs {
		var cols []sdk.Column
		row := sdk.Row{Label: label, Cells: map[string]sdk.Cell{}}
		for _, fam := range task.Families {
			for _, st := range task.Subtasks {
				if st.Scenario != tb.scenario || st.Family != fam {
					continue
				}
				g := groups[tb.scenario+"\x00"+tb.lang+"\x00"+st.Name]
				if g == nil {
					continue
				}
				col := sdk.Column{Key: st.Name, Label: st.Name, Group: fam, Scale: 100, Decimals: 2, Floor: 1}
				if g.metric == task.MetricMAE {
					col = sdk.Column{Key: st.Name, Label: st.Name + " (MAE)", Group: fam, Decimals: 2, LowerIsBetter: true}
				}
				cols = append(cols, col)
				c := cells[tb.scenario+"\x00"+tb.lang+"\x00"+st.Name]
				if c.value == nil {
					row.Cells[st.Name] = sdk.Cell{Text: "None", N: len(g.scores)}
				} else {
					row.Cells[st.Name] = sdk.Val(*c.value, c.n)
				}
			}
		}
		if len(cols) == 0 {
			continue
		}
		out = append(out, sdk.Table{
			ID:      "xlbench." + tb.scenario + "." + tb.lang,
			Title:   "XLBench " + scenarioTitle(tb.scenario, tb.lang) + ": per-subtask scores",
			Columns: cols,
			Rows:    []sdk.Row{row},
			Notes:   notes(tb.scenario, tb.lang),
			Derived: derived(cols),
		})
	}
	return out
}

// derived asks the report for each model's mean rank across subtasks
// (standard competition ranks per column, MAE ranked lowest first) and,
// when every column is a 0–1 score, the row mean and the rank by it; a
// mean over an MAE column would mix scales.
func derived(cols []sdk.Column) []string {
	for _, c := range cols {
		if c.LowerIsBetter {
			return []string{sdk.DerivedMeanRank}
		}
	}
	return []string{sdk.DerivedMean, sdk.DerivedRank, sdk.DerivedMeanRank}
}

// variantTable is the paper's Table 7: fiction scores per family, one
// column per variant (the original included), so an eval on the original
// data and one on each variant merge into one table.
func (s *Scorer) variantTable(groups map[string]*group, order []string, cells map[string]cell, variant, mode string, notes []string) (sdk.Table, bool) {
	variant = or(variant, "original")
	label := sdk.ModelSlot
	if mode != "" && mode != task.ModeZeroShot {
		label += " · " + mode
	}
	t := sdk.Table{ID: "xlbench.variants", Title: "XLBench fiction: original vs contamination-resistant variants (family means)",
		Notes: append(slices.Clone(notes), "Each cell is the mean of the family's subtask scores; Fiction-C/R/T rows come from evals of the variant data.")}
	row := sdk.Row{Label: label, Cells: map[string]sdk.Cell{}}
	for _, lang := range task.Languages[task.Fiction] {
		for _, fam := range task.Families {
			sum, n, samples := 0.0, 0, 0
			for _, k := range order {
				g := groups[k]
				if g.scenario != task.Fiction || g.lang != lang || g.st.Family != fam || cells[k].value == nil {
					continue
				}
				sum += *cells[k].value
				n++
				samples += cells[k].n
			}
			if n == 0 {
				continue
			}
			key := lang + "." + fam + "." + variant
			t.Columns = append(t.Columns, sdk.Column{Key: key, Label: variant, Group: scenarioTitle(task.Fiction, lang) + " " + fam, Scale: 100, Decimals: 2, Floor: 1})
			row.Cells[key] = sdk.Val(sum/float64(n), samples)
		}
	}
	if len(t.Columns) == 0 {
		return sdk.Table{}, false
	}
	t.Rows = []sdk.Row{row}
	return t, true
}

// binLabel names bin i of edges: "<50K", "50K–100K", "≥200K".
func binLabel(edges []int, i int) string {
	k := func(v int) string {
		if v%1000 == 0 {
			return fmt.Sprintf("%dK", v/1000)
		}
		return fmt.Sprint(v)
	}
	switch {
	case i == 0:
		return "<" + k(edges[0])
	case i == len(edges):
		return "≥" + k(edges[len(edges)-1])
	}
	return k(edges[i-1]) + "–" + k(edges[i])
}

// lengthTables are the paper's Figure 3 as tables: per scenario and
// language, one row per model and subtask, the mean sample score in each
// document-length bin (sentence BLEU for BLEU subtasks; MAE rows left out,
// their scale differs).
func (s *Scorer) lengthTables(groups map[string]*group, order []string, label string, notes func(scenario, lang string) []string) []sdk.Table {
	byTable := map[string]*sdk.Table{}
	var ids []string
	for _, k := range order {
		g := groups[k]
		if g.metric == task.MetricMAE {
			continue
		}
		sum := make([]float64, len(s.bins)+1)
		cnt := make([]int, len(s.bins)+1)
		unit := ""
		for _, sc := range g.scores {
			l, ok := metanum.Int(sc.Details["doc_length"])
			if !ok || sc.Invalid {
				continue
			}
			unit = or(unit, detailString(sc.Details, "doc_length_unit"))
			b := sort.SearchInts(s.bins, l+1) // bins are [edge_i-1, edge_i)
			sum[b] += sc.Value
			cnt[b]++
		}
		id := "xlbench.length." + g.scenario + "." + g.lang
		t := byTable[id]
		if t == nil {
			t = &sdk.Table{ID: id, Title: "XLBench " + scenarioTitle(g.scenario, g.lang) + ": score by document length (" + or(unit, task.LengthUnit(g.lang)) + ")",
				Notes: append(notes(g.scenario, g.lang), "Mean of sample scores per bin (sentence BLEU for BLEU subtasks); MAE subtasks are left out.")}
			for i := range len(s.bins) + 1 {
				t.Columns = append(t.Columns, sdk.Column{Key: binLabel(s.bins, i), Label: binLabel(s.bins, i), Scale: 100, Decimals: 2, Floor: 1})
			}
			byTable[id] = t
			ids = append(ids, id)
		}
		row := sdk.Row{Label: label + " · " + g.st.Name, Cells: map[string]sdk.Cell{}}
		for i := range sum {
			if cnt[i] > 0 {
				row.Cells[binLabel(s.bins, i)] = sdk.Val(sum[i]/float64(cnt[i]), cnt[i])
			}
		}
		t.Rows = append(t.Rows, row)
	}
	out := make([]sdk.Table, 0, len(ids))
	for _, id := range ids {
		t := byTable[id]
		// Keep only bins some row fills: documents of one length give one
		// column, not five mostly empty ones.
		var cols []sdk.Column
		for _, c := range t.Columns {
			for _, r := range t.Rows {
				if _, ok := r.Cells[c.Key]; ok {
					cols = append(cols, c)
					break
				}
			}
		}
		t.Columns = cols
		out = append(out, *t)
	}
	return out
}
