// Package adaleval is Ada-LEval (open-compass/Ada-LEval): TSort, putting
// four shuffled segments of a book back in order, and BestAnswer, finding
// the accepted answer to a Stack Overflow question among many. Both need
// the whole text to answer.
//
// A task either loads upstream's released files (path) with prompts byte for
// byte as upstream builds them, or builds fresh cases (source) from any book
// or Stack Exchange–style dump at any length setting, deterministically for
// a seed. Samples carry kind, setting, num_choice, position, variant and
// the true answer in their metadata: the adaleval scorer needs nothing else.
package adaleval

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/tokenizer"
)

// Name is the task's registered name.
const Name = "adaleval"

// Tokenizer is the encoding the paper measures every setting in.
const Tokenizer = "cl100k_base"

// Position variants of a BestAnswer case (the paper's Table 8): the same
// case with the accepted answer moved to the front, the middle (A⌈n/2⌉) or
// the rear.
const (
	VariantOriginal = "original"
	VariantFront    = "front"
	VariantMiddle   = "middle"
	VariantRear     = "rear"
)

// Metadata keys every sample carries.
const (
	MetaKind      = "kind"
	MetaSetting   = "setting"
	MetaNumChoice = "num_choice"
	MetaPosition  = "position" // BestAnswer: 1-based designation of the truth
	MetaAnswer    = "answer"   // "A<k>" or the order as a list
	MetaVariant   = "variant"
	MetaSource    = "source"    // "released" or "built"
	MetaFillRule  = "fill_rule" // built BestAnswer cases: BestAnswerFillRule
)

// Options are the task's settings.
type Options struct {
	// Kind is "tsort" or "bestanswer". Required.
	Kind string `json:"kind"`
	// Path is a released file (textsort_16k.json, stackselect_1k.json) or a
	// directory holding them; the setting is read from each file's name.
	Path string `json:"path" hayloft:"path"`
	// Source is what to build cases from: a book as plain text (tsort) or a
	// Stack Exchange–style JSON list (bestanswer). Excludes Path.
	Source string `json:"source" hayloft:"path"`
	// Settings limits (path) or chooses (source) the length settings.
	Settings []string `json:"settings"`
	// Subset is "normal" (default) or "less", upstream's item counts.
	Subset string `json:"subset"`
	// Limit, when positive, is the number of cases per setting, in place of
	// the subset's.
	Limit int `json:"limit"`
	// Seed drives the builders' shuffles and choices.
	Seed int64 `json:"seed"`
	// Positions adds, for each BestAnswer case, the same case with the
	// truth moved to each named place: "front", "middle", "rear".
	Positions []string `json:"positions"`
	// Truncations adds, for each case, the same case fitted to each of
	// these context windows (tokens) with the model's truncation strategy:
	// the paper's truncation study (Table 10) is [2000, 4000, 8000] on
	// BestAnswer 16k. The kernel cuts the context (the answers, or the text
	// after the TSort instruction), never the instruction or the question.
	Truncations []int `json:"truncations"`
	// Perplexity (TSort) emits, for each case, 24 samples instead of one:
	// the full prompt followed by the four segments in one candidate order
	// each, for a model in loglikelihood mode to score. The scorer picks
	// the order of lowest mean-token perplexity (the paper's perplexity
	// evaluation of open-source models, Section 4.2).
	Perplexity bool `json:"perplexity"`
}

// Task streams Ada-LEval samples. It is safe for concurrent use.
type Task struct {
	opts     Options
	settings []Setting // the chosen settings, when given
	plan     func() (*plan, error)
	keep     int // bytes of released text kept after checking (keepBudget)
}

// plan is what Provision found: released files to stream, or built cases.
type plan struct {
	files []releasedFile
	ts    []tsBuilt  // per setting
	ba    [][]baCase // per setting
	enc   *tokenizer.Encoding
}

// baCase is one BestAnswer case.
type baCase struct {
	Setting    Setting
	Index      int
	QuestionID string
	Question   string
	Answers    []string
	Truth      int // index of the accepted answer in Answers
	Tags       []string
	Built      bool
}

// tsCase is one TSort case: a released prompt, or built parts.
type tsCase struct {
	Setting    Setting
	Index      int
	Prompt     string // released: the whole prompt
	Answer     []int
	BookID     string
	ParaOffset string
	// Built cases: the prompt is TSortInstruction + tsortBody(...).
	Built  bool
	Before string
	Parts  []string
	After  string
	Tokens int
	// Dropped and Skipped count, for the case's setting, the cases over
	// the token bound and the starts where a part could not be filled.
	Dropped, Skipped int
}

// New builds the task from its options.
func New(ctx context.Context, raw sdk.Options) (sdk.Task, error) {
	return newTask(raw)
}

func newTask(raw sdk.Options) (*Task, error) {
	var o Options
	if err := raw.Decode(&o); err != nil {
		return nil, err
	}
	if o.Kind != KindTSort && o.Kind != KindBestAnswer {
		return nil, sdk.Configf("kind", "want %q or %q, got %q", KindTSort, KindBestAnswer, o.Kind)
	}
	switch {
	case o.Path == "" && o.Source == "":
		return nil, sdk.Configf("path", "set path (released files) or source (a text to build from)")
	case o.Path != "" && o.Source != "":
		return nil, sdk.Configf("source", "set path or source, not both")
	}
	for field, p := range map[string]string{"path": o.Path, "source": o.Source} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return nil, sdk.Configf(field, "%v", err)
		}
	}
	if o.Subset == "" {
		o.Subset = SubsetNormal
	}
	if o.Subset != SubsetNormal && o.Subset != SubsetLess {
		return nil, sdk.Configf("subset", "want %q or %q, got %q", SubsetNormal, SubsetLess, o.Subset)
	}
	if o.Limit < 0 {
		return nil, sdk.Configf("limit", "must not be negative, got %d", o.Limit)
	}
	t := &Task{opts: o, keep: keepBudget}
	seen := map[string]bool{}
	for _, name := range o.Settings {
		s, err := ParseSetting(name)
		if err != nil {
			return nil, sdk.Configf("settings", "%v", err)
		}
		if seen[s.Name] {
			return nil, sdk.Configf("settings", "%s is listed twice", s.Name)
		}
		seen[s.Name] = true
		if o.Source != "" && o.Kind == KindTSort {
			if _, ok := tsortTable[s.Name]; !ok {
				return nil, sdk.Configf("settings", "TSort has no setting %s; the paper's are %v", s.Name, TSortSettings)
			}
		}
		t.settings = append(t.settings, s)
	}
	sortSettings(t.settings)
	for _, p := range o.Positions {
		if p != VariantFront && p != VariantMiddle && p != VariantRear {
			return nil, sdk.Configf("positions", "want front, middle or rear, got %q", p)
		}
		if o.Kind != KindBestAnswer {
			return nil, sdk.Configf("positions", "position variants are for bestanswer")
		}
	}
	if o.Perplexity && o.Kind != KindTSort {
		return nil, sdk.Configf("perplexity", "perplexity mode is for tsort")
	}
	if o.Perplexity && len(o.Truncations) > 0 {
		return nil, sdk.Configf("truncations", "a truncated candidate's perplexity says nothing of the order: set truncations or perplexity, not both")
	}
	seenWindow := map[int]bool{}
	for _, w := range o.Truncations {
		if w <= 0 || seenWindow[w] {
			return nil, sdk.Configf("truncations", "want distinct positive token counts, got %v", o.Truncations)
		}
		seenWindow[w] = true
	}
	t.plan = sync.OnceValues(t.provision)
	return t, nil
}

// Provision reads and checks every input before the first sample, so bad
// input fails the run before anything is written.
func (t *Task) Provision(ctx context.Context) error {
	_, err := t.plan()
	return err
}

func (t *Task) wanted(s Setting) bool {
	if len(t.settings) == 0 {
		return true
	}
	for _, w := range t.settings {
		if w.Name == s.Name {
			return true
		}
	}
	return false
}

func (t *Task) perSetting(s Setting) int {
	if t.opts.Limit > 0 {
		return t.opts.Limit
	}
	return subsetSize(t.opts.Subset, s)
}

func (t *Task) provision() (*plan, error) {
	o := t.opts
	if o.Source != "" {
		enc, err := tokenizer.Get(Tokenizer)
		if err != nil {
			return nil, err
		}
		if o.Kind == KindTSort {
			return t.buildTSort(enc)
		}
		return t.buildBestAnswer(enc)
	}
	paths, err := findReleased(o.Kind, o.Path)
	if err != nil {
		return nil, sdk.Configf("path", "%v", err)
	}
	p := &plan{}
	kept := 0
	for _, path := range paths {
		s, ok := settingOfFile(path)
		if !ok {
			return nil, sdk.Configf("path", "%s: no setting such as _16k in the file name", path)
		}
		if !t.wanted(s) {
			continue
		}
		f := releasedFile{Path: path, Setting: s}
		var err error
		if o.Kind == KindTSort {
			err = scanItems(path, t.perSetting(s), func(i int, it *tsortItem) (bool, error) {
				c, err := decodeTSort(it)
				c.Setting, c.Index = s, i
				if err == nil && o.Perplexity {
					_, err = perplexitySamples(c)
				}
				f.N, f.ts = i+1, append(f.ts, c)
				kept += len(c.Prompt)
				return true, err
			})
		} else {
			err = scanItems(path, t.perSetting(s), func(i int, it *bestAnswerItem) (bool, error) {
				c, err := decodeBestAnswer(it)
				c.Setting, c.Index = s, i
				f.N, f.ba = i+1, append(f.ba, c)
				kept += len(c.Question)
				for _, a := range c.Answers {
					kept += len(a)
				}
				return true, err
			})
		}
		if err != nil {
			return nil, sdk.Configf("path", "%v", err)
		}
		if kept > t.keep {
			// Too much to hold: Samples reads this file again.
			f.ts, f.ba = nil, nil
		}
		p.files = append(p.files, f)
	}
	if len(p.files) == 0 {
		return nil, sdk.Configf("settings", "no released file under %s has the settings %v", o.Path, o.Settings)
	}
	sortFiles(p.files)
	return p, nil
}

func sortFiles(fs []releasedFile) {
	slices.SortStableFunc(fs, func(a, b releasedFile) int { return a.Setting.Tokens - b.Setting.Tokens })
}

// CountSamples is the number of cases times the variants of each.
func (t *Task) CountSamples(ctx context.Context, req *sdk.SamplesRequest) (int, error) {
	p, err := t.plan()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range p.files {
		n += f.N
	}
	for _, b := range p.ts {
		n += len(b.cases)
	}
	for _, cs := range p.ba {
		n += len(cs)
	}
	per := 1 + len(t.opts.Positions) + len(t.opts.Truncations)
	if t.opts.Perplexity {
		per = len(candidates)
	}
	return req.Limited(n * per), nil
}

// Samples streams the cases setting by setting, smallest first; each
// BestAnswer case is followed by its position variants.
func (t *Task) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		p, err := t.plan()
		if err != nil {
			yield(nil, fmt.Errorf("adaleval: %w", err))
			return
		}
		limit := 0
		if req != nil {
			limit = req.Limit
		}
		sent := 0
		emit := func(s *sdk.Sample) bool {
			if limit > 0 && sent >= limit {
				return false
			}
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return false
			}
			sent++
			return yield(s, nil)
		}
		emitAll := func(ss []*sdk.Sample) bool {
			for _, s := range ss {
				if !emit(s) {
					return false
				}
			}
			return true
		}
		emitBA := func(c baCase) bool { return emitAll(t.bestAnswerSamples(c)) }
		emitTS := func(c tsCase) bool {
			if t.opts.Perplexity {
				ss, err := perplexitySamples(c)
				if err != nil {
					yield(nil, fmt.Errorf("adaleval: %w", err))
					return false
				}
				return emitAll(ss)
			}
			return emitAll(t.truncated(tsortSample(c)))
		}
		for _, f := range p.files {
			more, err := t.streamFile(f, emitTS, emitBA)
			if err != nil {
				yield(nil, fmt.Errorf("adaleval: %w", err))
				return
			}
			if !more {
				return
			}
		}
		for _, b := range p.ts {
			for _, c := range b.cases {
				if !emitTS(b.render(c)) {
					return
				}
			}
		}
		for _, cs := range p.ba {
			for _, c := range cs {
				if !emitBA(c) {
					return
				}
			}
		}
	}
}

// streamFile emits one released file's samples, from memory or read again
// item by item. It reports false when the consumer stopped, and an error
// when the file no longer reads as Provision checked it.
func (t *Task) streamFile(f releasedFile, emitTS func(tsCase) bool, emitBA func(baCase) bool) (bool, error) {
	switch {
	case f.ts != nil:
		for _, c := range f.ts {
			if !emitTS(c) {
				return false, nil
			}
		}
		return true, nil
	case f.ba != nil:
		for _, c := range f.ba {
			if !emitBA(c) {
				return false, nil
			}
		}
		return true, nil
	}
	stop := false
	var err error
	if t.opts.Kind == KindTSort {
		err = scanItems(f.Path, f.N, func(i int, it *tsortItem) (bool, error) {
			c, err := decodeTSort(it)
			c.Setting, c.Index = f.Setting, i
			stop = err == nil && !emitTS(c)
			return !stop, err
		})
	} else {
		err = scanItems(f.Path, f.N, func(i int, it *bestAnswerItem) (bool, error) {
			c, err := decodeBestAnswer(it)
			c.Setting, c.Index = f.Setting, i
			stop = err == nil && !emitBA(c)
			return !stop, err
		})
	}
	return !stop, err
}

func commonMeta(kind string, s Setting, built bool) map[string]any {
	src := "released"
	if built {
		src = "built"
	}
	return map[string]any{
		MetaKind:         kind,
		MetaSetting:      s.Name,
		"setting_tokens": s.Tokens,
		MetaSource:       src,
		MetaVariant:      VariantOriginal,
		// The paper runs API models at temperature 0; the model block sets
		// it, this records the intent.
		"temperature": 0.0,
	}
}

// tsortSample renders one TSort case. The instruction is the template and
// the rest of the prompt the context, so truncation never cuts the
// instruction; the rendered prompt is the released one byte for byte.
func tsortSample(c tsCase) *sdk.Sample {
	prompt := c.Prompt
	tmpl := sdk.ContextSlot
	ctxText := prompt
	if len(prompt) >= len(TSortInstruction) && prompt[:len(TSortInstruction)] == TSortInstruction {
		tmpl = TSortInstruction + sdk.ContextSlot
		ctxText = prompt[len(TSortInstruction):]
	}
	meta := commonMeta(KindTSort, c.Setting, c.Built)
	meta[MetaNumChoice] = 4
	meta[MetaAnswer] = append([]int(nil), c.Answer...)
	meta["case"] = c.Index
	if c.BookID != "" {
		meta["book_id"] = c.BookID
	}
	if c.ParaOffset != "" {
		meta["para_offset"] = c.ParaOffset
	}
	if c.Built {
		meta["setting_dropped_over_bound"] = c.Dropped
		meta["setting_skipped_starts"] = c.Skipped
	}
	s := &sdk.Sample{
		ID:       fmt.Sprintf("tsort-%s-%d", c.Setting.Name, c.Index),
		Context:  ctxText,
		Messages: []sdk.Message{{Role: "user", Content: tmpl}},
		Choices:  Orderings(),
		Targets:  []string{FormatOrder(c.Answer)},
		Depth:    -1,
		Subtask:  KindTSort,
		Metadata: meta,
	}
	if c.Tokens > 0 {
		// An upper bound (each paragraph counted alone) unless it was over
		// the setting's bound and counted whole.
		meta["tokens_at_most"] = c.Tokens
	}
	return s
}

// bestAnswerSamples renders a BestAnswer case and its position variants.
func (t *Task) bestAnswerSamples(c baCase) []*sdk.Sample {
	out := []*sdk.Sample{bestAnswerSample(c, VariantOriginal, c.Answers, c.Truth)}
	n := len(c.Answers)
	for _, v := range t.opts.Positions {
		pos := 0
		switch v {
		case VariantMiddle:
			pos = (n+1)/2 - 1
		case VariantRear:
			pos = n - 1
		}
		out = append(out, bestAnswerSample(c, v, moveTo(c.Answers, c.Truth, pos), pos))
	}
	return append(out, t.truncated(out[0])[1:]...)
}

// TruncatedPrefix begins the names of truncation-study variants.
const TruncatedPrefix = "truncated-"

// VariantTruncated names the variant of a case fitted to a window of n
// tokens: "truncated-2k", "truncated-2500".
func VariantTruncated(n int) string {
	if n%1000 == 0 {
		return fmt.Sprintf("%s%dk", TruncatedPrefix, n/1000)
	}
	return fmt.Sprintf("%s%d", TruncatedPrefix, n)
}

// truncated returns s followed by its truncation-study variants.
func (t *Task) truncated(s *sdk.Sample) []*sdk.Sample {
	out := []*sdk.Sample{s}
	for _, w := range t.opts.Truncations {
		v := s.Clone()
		v.Window = w
		v.ID = s.ID + "-" + VariantTruncated(w)
		v.Metadata[MetaVariant] = VariantTruncated(w)
		v.Metadata["window"] = w
		out = append(out, v)
	}
	return out
}

// moveTo returns answers with the one at from moved to to, the others in
// their order.
func moveTo(answers []string, from, to int) []string {
	rest := make([]string, 0, len(answers))
	rest = append(rest, answers[:from]...)
	rest = append(rest, answers[from+1:]...)
	out := make([]string, 0, len(answers))
	out = append(out, rest[:to]...)
	out = append(out, answers[from])
	return append(out, rest[to:]...)
}

func bestAnswerSample(c baCase, variant string, answers []string, truth int) *sdk.Sample {
	n := len(answers)
	answer := "A" + strconv.Itoa(truth+1)
	meta := commonMeta(KindBestAnswer, c.Setting, c.Built)
	meta[MetaNumChoice] = n
	meta[MetaPosition] = truth + 1
	meta[MetaAnswer] = answer
	meta[MetaVariant] = variant
	meta["case"] = c.Index
	meta["question_id"] = c.QuestionID
	meta["tags"] = append([]string{}, c.Tags...)
	if c.Built {
		meta[MetaFillRule] = BestAnswerFillRule
	}
	id := fmt.Sprintf("bestanswer-%s-%d", c.Setting.Name, c.Index)
	if variant != VariantOriginal {
		id += "-" + variant
	}
	return &sdk.Sample{
		ID:       id,
		Context:  BestAnswerAnswers(answers),
		Question: c.Question,
		Messages: []sdk.Message{{Role: "user", Content: bestAnswerTemplate}},
		Choices:  designations(n),
		Targets:  []string{answer},
		Depth:    depth(truth, n),
		Subtask:  KindBestAnswer,
		Metadata: meta,
	}
}

// depth is the relative position of the accepted answer among the answers.
func depth(truth, n int) float64 {
	if n <= 1 {
		return 0
	}
	return float64(truth) / float64(n-1)
}

// rng is the builders' deterministic source for a seed and a stream name.
func rng(seed int64, stream string) *rand.Rand {
	h := uint64(14695981039346656037)
	for i := range len(stream) {
		h ^= uint64(stream[i])
		h *= 1099511628211
	}
	return rand.New(rand.NewPCG(uint64(seed), h))
}
