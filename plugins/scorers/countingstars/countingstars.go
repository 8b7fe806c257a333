// Package countingstars scores Counting-Stars answers (nick7nlp/Counting-
// Stars, MIT) as the upstream viz.ipynb does: parse the count list, keep the
// first M items, de-duplicate, and credit each counting index.
//
// Acquisition: 1 when the correct count a_i is in the answer, else 0.
// Reasoning: 1 for a_i alone, 0.5 for a_i together with the wrong count
// r_i, 0.25 for r_i alone, 0 for neither. A sample scores the mean over its
// indices; the benchmark scores the mean over all index × size cells.
//
// References come from Sample.Metadata["references"], an object
// {"counts": [...], "wrong": [...]} ("wrong" for reasoning only), whether the
// task put Go ints there or they arrived as JSON numbers.
package countingstars

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/hayloft/hayloft/plugins/internal/metanum"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/stats"
)

// Name is the scorer's registered name.
const Name = "countingstars"

// Modes and languages.
const (
	Acquisition = "acquisition"
	Reasoning   = "reasoning"
	English     = "en"
	Chinese     = "zh"
)

// Bad-case classes (the paper's Table 6).
const (
	BadFormat     = "format"     // no JSON list under the key: integers were scraped from the text
	BadRepeat     = "repeat"     // one number given at least RepeatMin times
	BadIncreasing = "increasing" // a run of at least RunMin numbers rising by one
)

// Thresholds of the bad-case classes. Reference counts are distinct and
// never multiples of four, one to each bucket (4i, 4i+3], so a correct
// answer neither repeats a number nor holds three consecutive integers.
const (
	RepeatMin = 3
	RunMin    = 3
)

// Stats layout of a ScoreResponse, read by Aggregate: the sum of the
// per-index credits, M, then 1 or 0 for each bad-case class.
const (
	statHits = iota
	statM
	statFormat
	statRepeat
	statIncreasing
	statLen
)

// Options are the scorer's settings. Empty values fall back to the sample:
// its Metadata["mode"] (or reasoning when references carry "wrong") and its
// Language.
type Options struct {
	Mode     string `json:"mode"`
	Language string `json:"language"`
}

// Scorer scores Counting-Stars answers. It is safe for concurrent use.
type Scorer struct {
	opts Options
}

// New builds the scorer from its options.
func New(ctx context.Context, raw sdk.Options) (sdk.Scorer, error) {
	var o Options
	if err := raw.Decode(&o); err != nil {
		return nil, err
	}
	o.Mode = strings.ToLower(o.Mode)
	if o.Mode == "searching" { // upstream's name for acquisition
		o.Mode = Acquisition
	}
	if o.Mode != "" && o.Mode != Acquisition && o.Mode != Reasoning {
		return nil, sdk.Configf("mode", "%q is not acquisition or reasoning", o.Mode)
	}
	o.Language = strings.ToLower(o.Language)
	if o.Language != "" && o.Language != English && o.Language != Chinese {
		return nil, sdk.Configf("language", "%q is not en or zh", o.Language)
	}
	return &Scorer{opts: o}, nil
}

// References are the counts a sample is scored against.
type References struct {
	Counts []int `json:"counts"`
	Wrong  []int `json:"wrong,omitempty"`
}

// Score scores one answer.
func (s *Scorer) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	if req == nil || req.Sample == nil {
		return nil, errors.New("countingstars: score request without a sample")
	}
	smp := req.Sample
	refs, err := ReadReferences(smp.Metadata["references"])
	if err != nil {
		return nil, fmt.Errorf("countingstars: sample %q: metadata references: %w", smp.ID, err)
	}
	mode := s.mode(smp, refs)
	if mode == Reasoning && len(refs.Wrong) != len(refs.Counts) {
		return nil, fmt.Errorf("countingstars: sample %q: reasoning needs references.wrong with %d counts, got %d", smp.ID, len(refs.Counts), len(refs.Wrong))
	}
	ans := ParseAnswer(req.Prediction, s.keys(smp)...)
	hits := Credit(mode, refs, ans)
	bad := Classify(ans)

	sum := 0.0
	for _, h := range hits {
		sum += h
	}
	st := make([]float64, statLen)
	st[statHits], st[statM] = sum, float64(len(hits))
	for _, b := range bad {
		switch b {
		case BadFormat:
			st[statFormat] = 1
		case BadRepeat:
			st[statRepeat] = 1
		case BadIncreasing:
			st[statIncreasing] = 1
		}
	}
	details := map[string]any{
		"hits":      hits,
		"format_ok": ans.FormatOK,
		"bad_cases": bad,
		"bad_case":  primary(bad),
		"predicted": ans.Ints(),
		"mode":      mode,
		"m":         len(hits),
		"language":  s.language(smp),
	}
	// Carry the size so a report can lay hits out by index × size without
	// the sample.
	for _, k := range []string{"nominal_length", "size", "size_index", "haystack", "haystack_sha256", "size_rule"} {
		if v, ok := smp.Metadata[k]; ok {
			details[k] = v
		}
	}
	if smp.Length.Tokens > 0 {
		details["length_tokens"] = smp.Length.Tokens
	}
	return &sdk.ScoreResponse{Value: sum / float64(len(hits)), Details: details, Stats: st}, nil
}

// mode picks the scoring rule: the option, else the sample's, else
// reasoning exactly when the references carry wrong counts.
func (s *Scorer) mode(smp *sdk.Sample, refs References) string {
	if s.opts.Mode != "" {
		return s.opts.Mode
	}
	if m, ok := smp.Metadata["mode"].(string); ok && (m == Acquisition || m == Reasoning) {
		return m
	}
	if len(refs.Wrong) > 0 {
		return Reasoning
	}
	return Acquisition
}

// language is the answer's language: the option, else the sample's; ""
// when neither says.
func (s *Scorer) language(smp *sdk.Sample) string {
	if s.opts.Language != "" {
		return s.opts.Language
	}
	return strings.ToLower(smp.Language)
}

// keys lists the acceptable answer keys: the language's own, or both when
// the language is not known.
func (s *Scorer) keys(smp *sdk.Sample) []string {
	lang := s.opts.Language
	if lang == "" {
		lang = strings.ToLower(smp.Language)
	}
	switch lang {
	case English:
		return []string{KeyEN}
	case Chinese:
		return []string{KeyZH}
	}
	return []string{KeyEN, KeyZH}
}

// Credit returns the credit of each counting index: the answer is cut to M
// items, then treated as a set, so order and duplicates do not matter.
func Credit(mode string, refs References, ans Answer) []float64 {
	m := len(refs.Counts)
	items := ans.Items
	if len(items) > m {
		items = items[:m]
	}
	set := make(map[int]bool, len(items))
	for _, it := range items {
		if it.OK {
			set[it.Value] = true
		}
	}
	hits := make([]float64, m)
	for i, a := range refs.Counts {
		if mode != Reasoning {
			if set[a] {
				hits[i] = 1
			}
			continue
		}
		r := refs.Wrong[i]
		switch {
		case set[a] && set[r]:
			hits[i] = 0.5
		case set[a]:
			hits[i] = 1
		case set[r]:
			hits[i] = 0.25
		}
	}
	return hits
}

// Classify names the bad-case classes an answer falls in, in a fixed order.
func Classify(ans Answer) []string {
	bad := []string{}
	if !ans.FormatOK {
		bad = append(bad, BadFormat)
	}
	ints := ans.Ints()
	freq := map[int]int{}
	repeat := false
	for _, v := range ints {
		freq[v]++
		if freq[v] >= RepeatMin {
			repeat = true
		}
	}
	if repeat {
		bad = append(bad, BadRepeat)
	}
	run := 1
	for i := 1; i < len(ints); i++ {
		if ints[i] == ints[i-1]+1 {
			run++
		} else {
			run = 1
		}
		if run >= RunMin {
			bad = append(bad, BadIncreasing)
			break
		}
	}
	return bad
}

func primary(bad []string) string {
	if len(bad) == 0 {
		return ""
	}
	return bad[0]
}

// ReadReferences decodes Metadata["references"]: a map with "counts" and
// optional "wrong", holding Go ints (from the task in process) or JSON
// numbers (after a plugin boundary or from a JSONL file), or the same object
// as JSON text.
func ReadReferences(v any) (References, error) {
	var refs References
	var obj map[string]any
	switch v := v.(type) {
	case nil:
		return refs, errors.New("missing")
	case References:
		refs = v
	case *References:
		refs = *v
	case map[string]any:
		obj = v
	case string:
		if err := json.Unmarshal([]byte(v), &obj); err != nil {
			return refs, fmt.Errorf("not a JSON object: %w", err)
		}
	case json.RawMessage:
		if err := json.Unmarshal(v, &obj); err != nil {
			return refs, fmt.Errorf("not a JSON object: %w", err)
		}
	default:
		// Some other map type: let encoding/json normalise it.
		b, err := json.Marshal(v)
		if err != nil {
			return refs, fmt.Errorf("%T: %w", v, err)
		}
		if err := json.Unmarshal(b, &obj); err != nil {
			return refs, fmt.Errorf("%T is not an object: %w", v, err)
		}
	}
	if obj != nil {
		var err error
		if refs.Counts, err = toInts(obj["counts"]); err != nil {
			return refs, fmt.Errorf("counts: %w", err)
		}
		if w, ok := obj["wrong"]; ok && w != nil {
			if refs.Wrong, err = toInts(w); err != nil {
				return refs, fmt.Errorf("wrong: %w", err)
			}
		}
	}
	if len(refs.Counts) == 0 {
		return refs, errors.New("counts: empty")
	}
	return refs, nil
}

// toInts reads a list of integers in any of the shapes it arrives in.
func toInts(v any) ([]int, error) {
	switch v := v.(type) {
	case nil:
		return nil, errors.New("missing")
	case []int:
		return v, nil
	case []int64:
		out := make([]int, len(v))
		for i, x := range v {
			out[i] = int(x)
		}
		return out, nil
	case []float64:
		out := make([]int, len(v))
		for i, x := range v {
			n, err := integral(x)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			out[i] = n
		}
		return out, nil
	case []any:
		out := make([]int, len(v))
		for i, x := range v {
			n, err := anyInt(x)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			out[i] = n
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a list of integers, got %T", v)
}

func anyInt(x any) (int, error) {
	switch x := x.(type) {
	case int:
		return x, nil
	case int64:
		return int(x), nil
	case float64:
		return integral(x)
	case json.Number:
		n, err := strconv.Atoi(x.String())
		if err != nil {
			return 0, fmt.Errorf("%q is not an integer", x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%v (%T) is not an integer", x, x)
}

func integral(x float64) (int, error) {
	if x != math.Trunc(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("%v is not an integer", x)
	}
	return int(x), nil
}

// Aggregate reports the benchmark score, the mean over every index × size
// cell (the mean of sample scores when all samples share M), with a seeded
// 95% bootstrap interval over samples, and counts of bad cases. Format
// failures are scored, not invalid. When samples carry their nominal length
// the details add per-length means and the counting-index × length heatmap.
func (s *Scorer) Aggregate(ctx context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	type row struct{ hits, m float64 }
	var rows []row
	invalid := 0
	bad := map[string]int{BadFormat: 0, BadRepeat: 0, BadIncreasing: 0}
	for i, sc := range req.Scores {
		if sc == nil || sc.Invalid {
			invalid++
			continue
		}
		if len(sc.Stats) < statLen || sc.Stats[statM] <= 0 {
			return nil, fmt.Errorf("countingstars: aggregate: score %d has no counting-stars stats", i)
		}
		rows = append(rows, row{sc.Stats[statHits], sc.Stats[statM]})
		bad[BadFormat] += int(sc.Stats[statFormat])
		bad[BadRepeat] += int(sc.Stats[statRepeat])
		bad[BadIncreasing] += int(sc.Stats[statIncreasing])
	}
	ratio := func(idx []int) float64 {
		var h, m float64
		for _, i := range idx {
			h += rows[i].hits
			m += rows[i].m
		}
		if m == 0 {
			return 0
		}
		return h / m
	}
	all := make([]int, len(rows))
	for i := range all {
		all[i] = i
	}
	value := ratio(all)
	lo, hi := stats.Bootstrap(len(rows), stats.DefaultResamples, 0x5354415253, ratio) // "STARS"
	cells := 0.0
	for _, r := range rows {
		cells += r.m
	}
	details := map[string]any{
		"display":   strconv.FormatFloat(value, 'f', 3, 64),
		"cells":     int(cells),
		"bad_cases": bad,
	}
	byLen, heat := layout(req.Scores)
	if byLen != nil {
		details["by_length"] = byLen
		if heat != nil {
			details["heatmap"] = heat
		}
	}
	run := describeRun(req.Scores)
	if run.Haystack != "" {
		details["haystack"] = map[string]string{"path": run.Haystack, "sha256": run.HaystackSHA256}
	}
	if run.SizeRule != "" {
		details["size_rule"] = run.SizeRule
	}
	details = sdk.WithTables(details, paperTables(run, value, len(rows), byLen)...)
	if heat != nil {
		details = sdk.WithHeatmaps(details, heat.Figure(run.Mode, run.Language))
	}
	return &sdk.AggregateResponse{
		Value:   value,
		N:       len(req.Scores),
		Invalid: invalid,
		CILow:   lo,
		CIHigh:  hi,
		Details: details,
	}, nil
}

// Heatmap is the mean credit per counting index (rows) and nominal length
// (columns), the paper's Figures 2 and 3.
type Heatmap struct {
	Lengths []int       `json:"lengths"`
	Rows    [][]float64 `json:"rows"` // Rows[i][k]: index i at Lengths[k]
}

// HeatmapID names the counting index × length heatmap among a report's.
const HeatmapID = "countingstars.index_by_length"

// Figure is the heatmap as reports draw it (sdk.Heatmap): counting
// indices down, nominal lengths across, as the paper's Figures 2 and 3.
func (h *Heatmap) Figure(mode, language string) sdk.Heatmap {
	title := "Counting-Stars: mean credit by counting index × context length (paper Figures 2 and 3)"
	if mode != "" && language != "" {
		title = fmt.Sprintf("Counting-Stars %s %s: mean credit by counting index × context length (paper Figures 2 and 3)", mode, strings.ToUpper(language))
	}
	f := sdk.Heatmap{ID: HeatmapID, Title: title,
		X: sdk.Axis{Label: "context length (nominal)"},
		Y: sdk.Axis{Label: "counting index"}}
	for _, l := range h.Lengths {
		f.X.Keys = append(f.X.Keys, strconv.Itoa(l))
		f.X.Labels = append(f.X.Labels, ShortLength(l))
	}
	for i, row := range h.Rows {
		f.Y.Keys = append(f.Y.Keys, strconv.Itoa(i+1))
		vals := make([]*float64, len(row))
		for k := range row {
			vals[k] = &row[k]
		}
		f.Values = append(f.Values, vals)
	}
	return f
}

// layout groups per-index hits by nominal length: the mean per length and,
// when every length has the same M, the heatmap. It returns nils when a
// valid score lacks a length or hits.
func layout(scores []*sdk.ScoreResponse) (map[string]float64, *Heatmap) {
	type acc struct {
		sum   []float64
		n     []float64
		total float64
		cells float64
	}
	byLen := map[int]*acc{}
	for _, sc := range scores {
		if sc == nil || sc.Invalid {
			continue
		}
		l, ok := metanum.Int(sc.Details["nominal_length"])
		if !ok {
			return nil, nil
		}
		hits, err := toFloats(sc.Details["hits"])
		if err != nil {
			return nil, nil
		}
		a := byLen[l]
		if a == nil {
			a = &acc{}
			byLen[l] = a
		}
		for len(a.sum) < len(hits) {
			a.sum = append(a.sum, 0)
			a.n = append(a.n, 0)
		}
		for i, h := range hits {
			a.sum[i] += h
			a.n[i]++
			a.total += h
			a.cells++
		}
	}
	if len(byLen) == 0 {
		return nil, nil
	}
	heat := &Heatmap{}
	for l := range byLen {
		heat.Lengths = append(heat.Lengths, l)
	}
	sort.Ints(heat.Lengths)
	means := map[string]float64{}
	rows := -1
	for _, l := range heat.Lengths {
		a := byLen[l]
		means[strconv.Itoa(l)] = a.total / a.cells
		if rows >= 0 && rows != len(a.sum) {
			rows = -2 // M differs between lengths: no grid
		} else if rows != -2 {
			rows = len(a.sum)
		}
	}
	if rows < 0 {
		return means, nil
	}
	heat.Rows = make([][]float64, rows)
	for i := range heat.Rows {
		heat.Rows[i] = make([]float64, len(heat.Lengths))
		for k, l := range heat.Lengths {
			a := byLen[l]
			heat.Rows[i][k] = a.sum[i] / a.n[i]
		}
	}
	return means, heat
}

func toFloats(v any) ([]float64, error) {
	switch v := v.(type) {
	case []float64:
		return v, nil
	case []any:
		out := make([]float64, len(v))
		for i, x := range v {
			f, ok := x.(float64)
			if !ok {
				return nil, fmt.Errorf("item %d: %T", i, x)
			}
			out[i] = f
		}
		return out, nil
	}
	return nil, fmt.Errorf("%T", v)
}
