// Package rougel is the ROUGE-L scorer, registered as "rougel" and (summary
// level, one sentence per line) "rougelsum", and the ROUGE-N scorers
// "rouge1" and "rouge2" that rouge_score users expect beside them.
//
// By default it reproduces google-research's rouge_score (the `rouge-score`
// PyPI package): its tokenizer, its optional NLTK Porter stemmer, its LCS and
// summary-level union LCS, and score_multi's choice of the reference with the
// highest F. Mode "pltrdy" reproduces the `rouge` package LongBench uses, and
// "pltrdy_legacy" its 2017 version. Details carry rouge_score's field names:
// precision, recall, fmeasure, plus tokenizer; Value is fmeasure.
//
// rouge_score's tokenizer drops every non-ASCII character, so Chinese scores 0
// under it; tokenizer "char" makes each CJK character a token instead.
package rougel

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"unsafe"

	"github.com/hayloft/hayloft/plugins/internal/intern"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/jsonstr"
)

// Names the scorers are registered under.
const (
	Name    = "rougel"
	SumName = "rougelsum"
	// Name1 and Name2 are ROUGE-1 and ROUGE-2 (see NewN).
	Name1 = "rouge1"
	Name2 = "rouge2"
)

// Modes accepted by the mode option.
const (
	ModeRougeScore   = "rouge_score"
	ModePltrdy       = "pltrdy"
	ModePltrdyLegacy = "pltrdy_legacy"
)

// Options are the scorer's settings.
type Options struct {
	// Mode selects the reference implementation (ModeRougeScore by default).
	Mode string `json:"mode"`
	// Tokenizer is TokenizerDefault, TokenizerChar or TokenizerRouge155. In
	// the pltrdy modes only the default (whitespace) and char apply.
	Tokenizer string `json:"tokenizer"`
	// UseStemmer stems tokens longer than 3 characters (rouge_score only).
	UseStemmer bool `json:"use_stemmer"`
	// Alpha, when set, replaces F1 with tf-text's weighted F: alpha in [0,1]
	// weights precision, alpha < 0 is tensor2tensor's F (rouge_score only).
	Alpha *float64 `json:"alpha"`
}

// Scorer scores ROUGE-L. It is safe for concurrent use.
type Scorer struct {
	opts    Options
	summary bool
	n       int // ROUGE-N's n; 0 for ROUGE-L
	tok     tokenizer
	tokJSON []byte    // opts.Tokenizer as JSON, for ScoreDetailsJSON
	scratch sync.Pool // *scratch
}

// scratch is per-call working memory, pooled because a scorer may see
// millions of samples.
type scratch struct {
	tab      intern.Table
	toks     []string
	word     []byte
	ref, can []int32
	lcs      lcsBuf
}

// ids interns words into dst.
func (sc *scratch) ids(dst []int32, words []string) []int32 {
	for _, w := range words {
		id, _ := sc.tab.Lookup(unsafe.Slice(unsafe.StringData(w), len(w)), true)
		dst = append(dst, int32(id))
	}
	return dst
}

// tokenIDs is the ids of text's tokens, appended to dst: straight from the
// text for the default tokenizer without stemming, else through the tokens.
func (s *Scorer) tokenIDs(sc *scratch, dst []int32, text string) []int32 {
	if t, ok := s.tok.(defaultTokenizer); ok && t.stems == nil {
		return t.appendIDs(dst, text, &sc.tab, &sc.word)
	}
	sc.toks = s.tok.tokenize(sc.toks[:0], text)
	return sc.ids(dst, sc.toks)
}

// New builds the rougel scorer.
func New(ctx context.Context, opts sdk.Options) (sdk.Scorer, error) {
	return newScorer(opts, false)
}

// NewSum builds the rougelsum scorer: texts are split on newlines and scored
// with rouge_score's summary-level union LCS.
func NewSum(ctx context.Context, opts sdk.Options) (sdk.Scorer, error) {
	return newScorer(opts, true)
}

// NewN returns the factory of the ROUGE-N scorer for n-grams of n tokens:
// rouge_score's rouge1, rouge2, … Tokenizer, stemmer and mode options are
// rougel's; see compareN for the counting.
func NewN(n int) func(context.Context, sdk.Options) (sdk.Scorer, error) {
	return func(_ context.Context, opts sdk.Options) (sdk.Scorer, error) {
		return build(opts, false, n)
	}
}

func newScorer(raw sdk.Options, summary bool) (*Scorer, error) { return build(raw, summary, 0) }

func build(raw sdk.Options, summary bool, n int) (*Scorer, error) {
	var o Options
	if err := raw.Decode(&o); err != nil {
		return nil, err
	}
	if o.Mode == "" {
		o.Mode = ModeRougeScore
	}
	if o.Tokenizer == "" {
		o.Tokenizer = TokenizerDefault
	}
	s := &Scorer{opts: o, summary: summary, n: n}
	if n > 0 {
		// tf-text's alpha is a ROUGE-L option; rouge_score's ROUGE-N is F1.
		if o.Alpha != nil {
			return nil, sdk.Configf("alpha", "%s has no alpha: rouge_score's ROUGE-N F is the harmonic mean", s.name())
		}
		// Current pltrdy's ROUGE-N is not reproduced (no reference cases
		// to check it against); its 2017 version is.
		if o.Mode == ModePltrdy {
			return nil, sdk.Configf("mode", "%s does not offer mode %q; use %q (rouge_score) or %q", s.name(), o.Mode, ModeRougeScore, ModePltrdyLegacy)
		}
	}
	switch o.Mode {
	case ModeRougeScore:
		var stems *stemCache
		if o.UseStemmer {
			stems = newStemCache()
		}
		switch o.Tokenizer {
		case TokenizerDefault:
			s.tok = defaultTokenizer{stems: stems}
		case TokenizerChar:
			s.tok = charTokenizer{stems: stems}
		case TokenizerRouge155:
			if o.UseStemmer {
				return nil, sdk.Configf("use_stemmer", "the %s tokenizer does not stem", TokenizerRouge155)
			}
			s.tok = rouge155Tokenizer{}
		default:
			return nil, sdk.Configf("tokenizer", "unknown tokenizer %q (want %q, %q or %q)", o.Tokenizer, TokenizerDefault, TokenizerChar, TokenizerRouge155)
		}
	case ModePltrdy, ModePltrdyLegacy:
		if summary {
			return nil, sdk.Configf("mode", "%s has no %q mode: pltrdy's ROUGE-L is already summary level; use %s", SumName, o.Mode, Name)
		}
		if o.Tokenizer != TokenizerDefault && o.Tokenizer != TokenizerChar {
			return nil, sdk.Configf("tokenizer", "mode %q tokenizes on whitespace; want %q or %q, got %q", o.Mode, TokenizerDefault, TokenizerChar, o.Tokenizer)
		}
		if o.UseStemmer {
			return nil, sdk.Configf("use_stemmer", "mode %q has no stemmer", o.Mode)
		}
		if o.Alpha != nil {
			return nil, sdk.Configf("alpha", "mode %q has a fixed F formula", o.Mode)
		}
	default:
		return nil, sdk.Configf("mode", "unknown mode %q (want %q, %q or %q)", o.Mode, ModeRougeScore, ModePltrdy, ModePltrdyLegacy)
	}
	s.scratch.New = func() any { return &scratch{} }
	var err error
	if s.tokJSON, err = json.Marshal(o.Tokenizer); err != nil {
		return nil, err
	}
	return s, nil
}

// Score compares the prediction with every target and keeps the score with
// the highest F (the first on ties), as rouge_score's score_multi does.
func (s *Scorer) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	best, err := s.best(req)
	if err != nil {
		return nil, err
	}
	return &sdk.ScoreResponse{
		Value: best.Fmeasure,
		Details: map[string]any{
			"precision": best.Precision,
			"recall":    best.Recall,
			"fmeasure":  best.Fmeasure,
			// Named so reports can say how Chinese was tokenized: the
			// default tokenizer scores it 0.
			"tokenizer": s.opts.Tokenizer,
		},
	}, nil
}

// ScoreDetailsJSON is Score with its details written as json.Marshal
// writes Score's (plugin.DetailsJSONScorer), without the map: a plugin
// serves every sample this way.
func (s *Scorer) ScoreDetailsJSON(ctx context.Context, req *sdk.ScoreRequest, dst []byte) (*sdk.ScoreResponse, []byte, error) {
	return s.scoreJSON(ctx, req, dst, false)
}

// ScoreObjectJSON is ScoreDetailsJSON with the response's "invalid" and
// "value" among the details (plugin.ScoreObjectScorer): the whole score
// object `hayloft score` writes per line, so it does not merge them in.
func (s *Scorer) ScoreObjectJSON(ctx context.Context, req *sdk.ScoreRequest, dst []byte) (*sdk.ScoreResponse, []byte, error) {
	return s.scoreJSON(ctx, req, dst, true)
}

// scoreJSON writes the details, with the response's own fields when
// object is set, in json.Marshal's key order.
func (s *Scorer) scoreJSON(ctx context.Context, req *sdk.ScoreRequest, dst []byte, object bool) (*sdk.ScoreResponse, []byte, error) {
	best, err := s.best(req)
	if err != nil {
		return nil, nil, err
	}
	resp := &sdk.ScoreResponse{Value: best.Fmeasure}
	if dst == nil {
		dst = make([]byte, 0, 128) // one allocation: the details are under 100 bytes
	}
	b := append(dst, `{"fmeasure":`...)
	b, ok1 := jsonstr.AppendFloat(b, best.Fmeasure)
	if object {
		b = append(b, `,"invalid":false`...)
	}
	b = append(b, `,"precision":`...)
	b, ok2 := jsonstr.AppendFloat(b, best.Precision)
	b = append(b, `,"recall":`...)
	b, ok3 := jsonstr.AppendFloat(b, best.Recall)
	if !ok1 || !ok2 || !ok3 {
		full, err := s.Score(ctx, req) // json.Marshal's error, as for Score
		return full, nil, err
	}
	b = append(b, `,"tokenizer":`...)
	b = append(b, s.tokJSON...)
	if object {
		b = append(b, `,"value":`...)
		b, _ = jsonstr.AppendFloat(b, resp.Value) // Fmeasure, written above
	}
	return resp, append(b, '}'), nil
}

// best is the score of the target with the highest F.
func (s *Scorer) best(req *sdk.ScoreRequest) (Score, error) {
	if err := req.NeedTargets(s.name()); err != nil {
		return Score{}, err
	}
	best := Score{Fmeasure: -1}
	for _, t := range req.Sample.Targets {
		sc := s.compare(t, req.Prediction)
		if sc.Fmeasure > best.Fmeasure {
			best = sc
		}
	}
	return best, nil
}

func (s *Scorer) name() string {
	if s.n > 0 {
		return fmt.Sprintf("rouge%d", s.n)
	}
	if s.summary {
		return SumName
	}
	return Name
}

// compare scores one (target, prediction) pair, in rouge_score's argument
// order.
func (s *Scorer) compare(target, prediction string) Score {
	if s.n > 0 {
		return s.compareN(target, prediction)
	}
	switch s.opts.Mode {
	case ModePltrdy, ModePltrdyLegacy:
		if s.opts.Tokenizer == TokenizerChar {
			target, prediction = spaceCJK(target), spaceCJK(prediction)
		}
		if s.opts.Mode == ModePltrdy {
			return pltrdyL(prediction, target)
		}
		return legacyL(prediction, target)
	}
	sc := s.scratch.Get().(*scratch)
	defer s.put(sc)
	if s.summary {
		return s.withAlpha(summaryLevel(s.sentences(sc, target), s.sentences(sc, prediction)))
	}
	sc.ref = s.tokenIDs(sc, sc.ref[:0], target)
	sc.can = s.tokenIDs(sc, sc.can[:0], prediction)
	ref, can := sc.ref, sc.can
	if len(ref) == 0 || len(can) == 0 {
		return Score{}
	}
	l := lcsLen(ref, can, &sc.lcs)
	p := float64(l) / float64(len(can))
	r := float64(l) / float64(len(ref))
	return s.withAlpha(Score{Precision: p, Recall: r, Fmeasure: fmeasure(p, r)})
}

func (s *Scorer) withAlpha(sc Score) Score {
	if s.opts.Alpha != nil {
		sc.Fmeasure = weightedF(sc.Precision, sc.Recall, *s.opts.Alpha)
	}
	return sc
}

// sentences splits text on newlines, dropping empty lines, and tokenizes
// each line, as rouge_score does for rougeLsum.
func (s *Scorer) sentences(sc *scratch, text string) [][]int32 {
	var out [][]int32
	start := 0
	for i := 0; i <= len(text); i++ {
		if i < len(text) && text[i] != '\n' {
			continue
		}
		if line := text[start:i]; line != "" {
			out = append(out, s.tokenIDs(sc, nil, line))
		}
		start = i + 1
	}
	return out
}

func (s *Scorer) put(sc *scratch) {
	// A huge vocabulary from one long document is not worth keeping.
	if sc.tab.Bytes() > 4<<20 {
		sc.tab = intern.Table{}
	} else {
		sc.tab.Reset()
	}
	s.scratch.Put(sc)
}
