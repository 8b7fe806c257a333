// Package bleu is the BLEU scorer. Mode "sacrebleu" (the default) reproduces
// sacrebleu 2.x: tokenizers 13a, zh, char, none and intl, smoothing exp,
// floor, add-k and none, effective order, any max order, and corpus BLEU from
// summed statistics. Mode "nltk" reproduces nltk.translate.bleu_score with
// its weights and SmoothingFunction methods 0-7.
//
// Per sample, the scorer returns sentence BLEU with sacrebleu's
// sentence_bleu defaults (effective order on) in Value and Details (sacrebleu
// field names: score, counts, totals, precisions, bp, sys_len, ref_len), and
// the segment's sufficient statistics in Stats. The scorer is also an
// sdk.Aggregator: Aggregate sums the statistics into corpus BLEU, which is not
// the mean of sentence scores, and bootstraps its confidence interval by
// resampling the statistics.
//
// Scales follow the reference libraries: sacrebleu scores are 0-100, NLTK
// scores 0-1.
package bleu

import (
	"context"
	"fmt"
	"github.com/hayloft/hayloft/plugins/internal/pytext"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/jsonstr"
	"github.com/hayloft/hayloft/sdk/stats"
)

// Name is the name the scorer is registered under.
const Name = "bleu"

// Modes accepted by the mode option.
const (
	ModeSacreBLEU = "sacrebleu"
	ModeNLTK      = "nltk"
)

// Options are the scorer's settings, named after the reference libraries'
// parameters.
type Options struct {
	Mode string `json:"mode"`
	// Tokenize is the sacrebleu tokenizer; in nltk mode it also splits the
	// texts into the token lists NLTK expects (default "none": whitespace).
	// Unset in sacrebleu mode, it is "zh" for Chinese (trg_lang, else the
	// sample's language) and "13a" otherwise, as sacrebleu chooses.
	Tokenize string `json:"tokenize"`
	// TrgLang is sacrebleu's trg_lang: the language of the references.
	TrgLang   string `json:"trg_lang"`
	Lowercase bool   `json:"lowercase"`
	// SmoothMethod is exp|floor|add-k|none for sacrebleu, method0..method7
	// for nltk.
	SmoothMethod string `json:"smooth_method"`
	// SmoothValue is sacrebleu's floor/add-k value, or NLTK's epsilon for
	// method1.
	SmoothValue *float64 `json:"smooth_value"`
	// UseEffectiveOrder, when unset, is on for per-sample scores
	// (sacrebleu.sentence_bleu) and off for the corpus score
	// (sacrebleu.corpus_bleu), the libraries' own defaults.
	UseEffectiveOrder *bool `json:"use_effective_order"`
	MaxNgramOrder     int   `json:"max_ngram_order"`
	// Weights are NLTK's n-gram weights (nltk mode); their count is the max
	// order. Default: uniform over max_ngram_order (4).
	Weights []float64 `json:"weights"`
	// Force is accepted for sacrebleu compatibility; sacrebleu only uses it
	// to silence a warning about pre-tokenized input, so it changes nothing.
	Force bool `json:"force"`
	// Seed and BootstrapResamples control the aggregate's 95% interval.
	Seed               uint64 `json:"seed"`
	BootstrapResamples int    `json:"bootstrap_resamples"`
}

// Scorer computes BLEU. It is safe for concurrent use.
type Scorer struct {
	opts     Options
	tok      tokenizeFunc // nil: chosen per sample by language
	sentence sacreParams  // per-sample parameters
	corpus   sacreParams  // aggregate parameters
	method   int          // NLTK smoothing method
	epsilon  float64
	counters sync.Pool // *counter
	numbers  sync.Pool // *numCache
}

var (
	_ sdk.StatsAggregator = (*Scorer)(nil)
	_ sdk.Borrower        = (*Scorer)(nil)
)

// AggregateReadsNoDetails marks Aggregate as reading only Stats (and
// Invalid): corpus BLEU is computed from summed statistics.
func (s *Scorer) AggregateReadsNoDetails() {}

// BorrowsInput marks Score as keeping nothing of its request
// (sdk.Borrower): tokens are copied into the pooled counters' tables, and
// the pools hold no string of a sample.
func (s *Scorer) BorrowsInput() {}

// New builds the bleu scorer; the result also implements sdk.Aggregator.
func New(ctx context.Context, opts sdk.Options) (sdk.Scorer, error) {
	return newScorer(opts)
}

func newScorer(raw sdk.Options) (*Scorer, error) {
	var o Options
	if err := raw.Decode(&o); err != nil {
		return nil, err
	}
	if o.Mode == "" {
		o.Mode = ModeSacreBLEU
	}
	if o.MaxNgramOrder < 0 || o.MaxNgramOrder > 16 {
		return nil, sdk.Configf("max_ngram_order", "want 1..16, got %d", o.MaxNgramOrder)
	}
	if o.BootstrapResamples < 0 {
		return nil, sdk.Configf("bootstrap_resamples", "want a positive count, got %d", o.BootstrapResamples)
	}
	s := &Scorer{opts: o}
	switch o.Mode {
	case ModeSacreBLEU:
		if len(o.Weights) > 0 {
			return nil, sdk.Configf("weights", "weights apply to mode %q only", ModeNLTK)
		}
		if o.SmoothMethod == "" {
			o.SmoothMethod = SmoothExp
		}
		switch o.SmoothMethod {
		case SmoothExp, SmoothFloor, SmoothAddK, SmoothNone:
		default:
			return nil, sdk.Configf("smooth_method", "unknown smoothing %q (want exp, floor, add-k or none)", o.SmoothMethod)
		}
		value := smoothDefaults[o.SmoothMethod]
		if o.SmoothValue != nil {
			value = *o.SmoothValue
		}
		if o.MaxNgramOrder == 0 {
			o.MaxNgramOrder = 4
		}
		s.sentence = sacreParams{smoothMethod: o.SmoothMethod, smoothValue: value, effectiveOrder: true, maxOrder: o.MaxNgramOrder}
		s.corpus = s.sentence
		s.corpus.effectiveOrder = false
		if o.UseEffectiveOrder != nil {
			s.sentence.effectiveOrder = *o.UseEffectiveOrder
			s.corpus.effectiveOrder = *o.UseEffectiveOrder
		}
	case ModeNLTK:
		if o.Tokenize == "" {
			o.Tokenize = TokenizeNone
		}
		if o.UseEffectiveOrder != nil {
			return nil, sdk.Configf("use_effective_order", "applies to mode %q only", ModeSacreBLEU)
		}
		if o.SmoothMethod == "" {
			o.SmoothMethod = "method0"
		}
		m, err := strconv.Atoi(strings.TrimPrefix(o.SmoothMethod, "method"))
		if err != nil || !strings.HasPrefix(o.SmoothMethod, "method") || m < 0 || m > 7 {
			return nil, sdk.Configf("smooth_method", "unknown NLTK smoothing %q (want method0..method7)", o.SmoothMethod)
		}
		s.method = m
		s.epsilon = 0.1
		if o.SmoothValue != nil {
			s.epsilon = *o.SmoothValue
		}
		if len(o.Weights) == 0 {
			n := o.MaxNgramOrder
			if n == 0 {
				n = 4
			}
			for range n {
				o.Weights = append(o.Weights, 1/float64(n))
			}
		} else if o.MaxNgramOrder != 0 && o.MaxNgramOrder != len(o.Weights) {
			return nil, sdk.Configf("max_ngram_order", "%d disagrees with the %d weights", o.MaxNgramOrder, len(o.Weights))
		}
		o.MaxNgramOrder = len(o.Weights)
	default:
		return nil, sdk.Configf("mode", "unknown mode %q (want %q or %q)", o.Mode, ModeSacreBLEU, ModeNLTK)
	}
	if o.Tokenize == "" && o.TrgLang != "" {
		o.Tokenize = tokenizeForLang(o.TrgLang)
	}
	if o.Tokenize != "" {
		tok, ok := tokenizerFor(o.Tokenize)
		if !ok {
			return nil, sdk.Configf("tokenize", "unknown tokenizer %q (want 13a, zh, char, none or intl)", o.Tokenize)
		}
		s.tok = tok
	}
	s.opts = o
	n := o.MaxNgramOrder
	s.counters.New = func() any { return newCounter(n) }
	return s, nil
}

// tokenizeForLang is sacrebleu's default tokenizer for a target language,
// among those implemented here.
func tokenizeForLang(lang string) string {
	if lang == "zh" || strings.HasPrefix(lang, "zh-") || strings.HasPrefix(lang, "zh_") {
		return TokenizeZh
	}
	return Tokenize13a
}

// tokens preprocesses one segment as sacrebleu's _preprocess_segment does
// (lowercase, strip trailing whitespace, tokenize) and splits it.
func (s *Scorer) tokens(tok tokenizeFunc, seg string) []string {
	if s.opts.Lowercase {
		seg = pytext.Lower(seg)
	}
	return pytext.Fields(tok(pytext.RStrip(seg)))
}

// segment preprocesses and tokenizes seg as tokens does, without the split:
// the tokenized text, valid until the next call on c.
func (s *Scorer) segment(c *counter, name string, tok tokenizeFunc, seg string) []byte {
	if s.opts.Lowercase {
		seg = pytext.Lower(seg)
	}
	seg = pytext.RStrip(seg)
	if name == Tokenize13a {
		return c.scratch.tokenize13a(seg)
	}
	out := tok(seg)
	return unsafe.Slice(unsafe.StringData(out), len(out)) // only read
}

// segmentIDs appends the unigram ids of seg, preprocessed and tokenized as
// segment does: 13a through the fused scan (fieldIDs), the other tokenizers
// through their text.
func (s *Scorer) segmentIDs(c *counter, name string, tok tokenizeFunc, seg string, add bool, dst []int32) []int32 {
	if name == Tokenize13a && len(seg) < math.MaxInt32 {
		if s.opts.Lowercase {
			seg = pytext.Lower(seg)
		}
		return c.fieldIDs(dst, preprocess13a(pytext.RStrip(seg)), add)
	}
	c.text(s.segment(c, name, tok, seg), add)
	return append(dst, c.ids[0]...)
}

// Score returns the sentence BLEU of the prediction against sample.Targets.
func (s *Scorer) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	resp, d, err := s.score(req)
	if err != nil {
		return nil, err
	}
	if !req.ForAggregate {
		// Aggregate reads only Stats: a caller that only aggregates gets
		// no details to build, encode and drop.
		resp.Details = d.details()
	}
	return resp, nil
}

// ScoreDetailsJSON is Score with the details written as json.Marshal
// would write Score's, without the map (plugin.DetailsJSONScorer): a
// plugin serves every sample this way.
func (s *Scorer) ScoreDetailsJSON(ctx context.Context, req *sdk.ScoreRequest, dst []byte) (*sdk.ScoreResponse, []byte, error) {
	return s.scoreJSON(req, dst, false)
}

// ScoreObjectJSON is ScoreDetailsJSON with the response's "invalid" and
// "value" among the details (plugin.ScoreObjectScorer): the whole score
// object `hayloft score` writes per line, so it does not merge them in.
func (s *Scorer) ScoreObjectJSON(ctx context.Context, req *sdk.ScoreRequest, dst []byte) (*sdk.ScoreResponse, []byte, error) {
	return s.scoreJSON(req, dst, true)
}

// scoreJSON is ScoreDetailsJSON, or with object ScoreObjectJSON. For
// sacrebleu up to max order 4 (the default) the details are written while
// the counter still holds the result's lists, so a sample allocates only
// its response and statistics (leanScore): score's sentenceScore is three
// times the size, fresh memory a plugin pays a page fault per 4 KiB for.
func (s *Scorer) scoreJSON(req *sdk.ScoreRequest, dst []byte, object bool) (*sdk.ScoreResponse, []byte, error) {
	if s.opts.Mode == ModeNLTK || s.opts.MaxNgramOrder > maxPackedOrder {
		resp, d, err := s.score(req)
		if err != nil || req.ForAggregate {
			return resp, nil, err
		}
		return s.appendJSON(resp, d, dst, object)
	}
	c, err := s.countSacre(req)
	if err != nil {
		return nil, nil, err
	}
	defer s.putCounter(c)
	n := s.opts.MaxNgramOrder
	one := new(leanScore)
	st := c.sacreStats(one.stats[: 2+2*n : 2+2*n])
	res := computeInto(c.lists[:3*n], st, s.sentence)
	one.resp = sdk.ScoreResponse{Value: res.Score, Stats: st}
	if req.ForAggregate {
		return &one.resp, nil, nil
	}
	out, ok := appendDetails(s, dst, res, &one.resp, object)
	if !ok {
		// A value JSON cannot hold, to fail as json.Marshal does: the
		// map's lists are the counter's, which goes back to the pool.
		res.Counts, res.Totals, res.Precisions = slices.Clone(res.Counts), slices.Clone(res.Totals), slices.Clone(res.Precisions)
		one.resp.Details = res.details()
		return &one.resp, nil, nil
	}
	return &one.resp, out, nil
}

// leanScore is what scoreJSON allocates for one sample.
type leanScore struct {
	resp  sdk.ScoreResponse
	stats [2 + 2*maxPackedOrder]float64
}

// appendJSON appends d's details to dst, with resp's own fields when
// object is set; a value JSON cannot hold leaves the JSON nil and the
// details in resp.Details, to fail as json.Marshal does, as for Score.
func (s *Scorer) appendJSON(resp *sdk.ScoreResponse, d detailer, dst []byte, object bool) (*sdk.ScoreResponse, []byte, error) {
	if out, ok := appendDetails(s, dst, d, resp, object); ok {
		return resp, out, nil
	}
	resp.Details = d.details()
	return resp, nil, nil
}

// appendDetails appends d's details to dst (a fresh buffer when nil),
// with resp's own fields when object is set, through s's pooled numCache;
// ok is false for a value JSON cannot hold. Generic so that the lean path
// passes its result as it is: as a detailer it would be copied to the heap,
// an allocation a sample.
func appendDetails[D detailer](s *Scorer, dst []byte, d D, resp *sdk.ScoreResponse, object bool) ([]byte, bool) {
	if dst == nil {
		dst = make([]byte, 0, 256) // one allocation: sacrebleu's details are about 200 bytes
	}
	var own *sdk.ScoreResponse
	if object {
		own = resp
	}
	nums := s.numCache()
	out, ok := d.appendDetails(dst, own, nums)
	s.numbers.Put(nums)
	return out, ok
}

// numCache is a numCache from the pool, or a fresh one; the caller
// hands it back to s.numbers.
func (s *Scorer) numCache() *numCache {
	if c, ok := s.numbers.Get().(*numCache); ok {
		return c
	}
	return new(numCache)
}

// detailer is the per-sample result of either mode.
type detailer interface {
	details() map[string]any
	// appendDetails appends json.Marshal(details())'s bytes, or with
	// resp, of details() with resp's "invalid" and "value" added; ok is
	// false for a value JSON cannot hold. nums, if not nil, keeps the
	// text of numbers written before.
	appendDetails(b []byte, resp *sdk.ScoreResponse, nums *numCache) ([]byte, bool)
}

// score is Score without the details: the response, and what its details
// are made from.
func (s *Scorer) score(req *sdk.ScoreRequest) (*sdk.ScoreResponse, detailer, error) {
	if err := req.NeedTargets(Name); err != nil {
		return nil, nil, err
	}
	name, tok := s.opts.Tokenize, s.tok
	if tok == nil {
		name = tokenizeForLang(req.Sample.Language)
		tok, _ = tokenizerFor(name)
	}
	c := s.counters.Get().(*counter)
	defer s.putCounter(c)
	if s.opts.Mode == ModeNLTK {
		hyp := s.tokens(tok, req.Prediction)
		refs := make([][]string, len(req.Sample.Targets))
		for i, t := range req.Sample.Targets {
			refs[i] = s.tokens(tok, t)
		}
		st := c.stats(hyp, refs)
		// NLTK's modified precision is sacrebleu's clipped count over the
		// hypothesis count, with the denominator at least 1 per segment;
		// its closest reference length breaks ties the same way.
		n := s.opts.MaxNgramOrder
		for i := 2 + n; i < 2+2*n; i++ {
			st[i] = max(st[i], 1)
		}
		res, err := nltkFromStats(st, s.opts.Weights, s.method, s.epsilon, refs, hyp)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: sample %q: %w", Name, req.Sample.ID, err)
		}
		return &sdk.ScoreResponse{Value: res.Score, Stats: st}, res, nil
	}
	s.segmentsIDs(c, name, tok, req)
	if s.opts.MaxNgramOrder > maxPackedOrder {
		st := c.sacreStats(nil)
		res := compute(st, s.sentence)
		return &sdk.ScoreResponse{Value: res.Score, Stats: st}, res, nil
	}
	// The response, its statistics and the result's lists in one
	// allocation, the result handed on by pointer.
	one := new(sentenceScore)
	n := s.opts.MaxNgramOrder
	st := c.sacreStats(one.nums[: 2+2*n : 2+2*n])
	one.res = computeInto(one.nums[2+2*n:], st, s.sentence)
	one.resp = sdk.ScoreResponse{Value: one.res.Score, Stats: st}
	return &one.resp, &one.res, nil
}

// segmentsIDs tokenizes req's references and prediction into c's id
// lists (sacrebleu): each segment is tokenized into the counter's buffers
// and its fields interned straight from them, one segment at a time.
func (s *Scorer) segmentsIDs(c *counter, name string, tok tokenizeFunc, req *sdk.ScoreRequest) {
	c.vocab.Reset()
	c.refIDs, c.refEnd = c.refIDs[:0], c.refEnd[:0]
	for _, t := range req.Sample.Targets {
		c.refIDs = s.segmentIDs(c, name, tok, t, true, c.refIDs)
		c.refEnd = append(c.refEnd, len(c.refIDs))
	}
	c.hypIDs = s.segmentIDs(c, name, tok, req.Prediction, false, c.hypIDs[:0])
}

// countSacre is a counter holding req's segments as ids (segmentsIDs),
// for sacrebleu mode; the caller puts it back (putCounter).
func (s *Scorer) countSacre(req *sdk.ScoreRequest) (*counter, error) {
	if err := req.NeedTargets(Name); err != nil {
		return nil, err
	}
	name, tok := s.opts.Tokenize, s.tok
	if tok == nil {
		name = tokenizeForLang(req.Sample.Language)
		tok, _ = tokenizerFor(name)
	}
	c := s.counters.Get().(*counter)
	s.segmentsIDs(c, name, tok, req)
	return c, nil
}

// sentenceScore is what score returns for one sacrebleu sample of max
// order up to 4, allocated together.
type sentenceScore struct {
	resp sdk.ScoreResponse
	res  Result
	nums [2 + 5*maxPackedOrder]float64 // statistics, then counts, totals, precisions
}

// corpusResult is the corpus score and details of summed statistics.
func (s *Scorer) corpusResult(sum []float64) (float64, map[string]any, error) {
	if s.opts.Mode == ModeNLTK {
		res, err := nltkFromStats(sum, s.opts.Weights, s.method, s.epsilon, nil, nil)
		return res.Score, res.details(), err
	}
	res := compute(sum, s.corpus)
	return res.Score, res.details(), nil
}

// corpusScore is corpusResult without the details, for the bootstrap.
func (s *Scorer) corpusScore(sum []float64) (float64, error) {
	if s.opts.Mode == ModeNLTK {
		res, err := nltkFromStats(sum, s.opts.Weights, s.method, s.epsilon, nil, nil)
		return res.Score, err
	}
	return compute(sum, s.corpus).Score, nil
}

func (s *Scorer) putCounter(c *counter) {
	if c.vocab.Len() > 1<<16 || cap(c.scratch.a) > 1<<20 {
		return // let an outsized one go rather than pin its memory
	}
	s.counters.Put(c)
}

// appendDetails is detailer's.
func (r nltkResult) appendDetails(b []byte, resp *sdk.ScoreResponse, nums *numCache) ([]byte, bool) {
	return appendFields(b, resp, nums, []jsonField{
		{`"bp":`, []float64{r.BP}, false, "", false},
		{`"hyp_len":`, []float64{r.HypLen}, false, "", false},
		{`"precisions":`, r.Precisions, true, "", false},
		{`"ref_len":`, []float64{r.RefLen}, false, "", false},
		{`"score":`, []float64{r.Score}, false, "", true},
	})
}

// jsonField is a key (quoted, with its colon) and a number or a list of
// numbers, for appendFields; or, with raw set, that literal as the value.
type jsonField struct {
	key  string
	nums []float64
	list bool
	raw  string
	// unique: the number is this sample's own (a score), which would
	// only push others out of the numCache.
	unique bool
}

// appendFields appends an object of fields given in json.Marshal's key
// order, numbers written as json.Marshal writes them (jsonstr.AppendFloat);
// a nil list is null. With resp, its "invalid" and "value" are merged in,
// in key order, in place of any field of the same name: the object
// json.Marshal writes of the details map with those two set. nums, if not
// nil, writes the numbers that are not whole.
func appendFields(b []byte, resp *sdk.ScoreResponse, nums *numCache, fields []jsonField) ([]byte, bool) {
	var own [2]jsonField
	nOwn := 0
	if resp != nil {
		own[0] = jsonField{key: `"invalid":`, raw: "false"}
		if resp.Invalid {
			own[0].raw = "true"
		}
		own[1] = jsonField{key: `"value":`, nums: []float64{resp.Value}, unique: true}
		nOwn = 2
	}
	var written [8]writtenNum // single numbers written so far
	nWritten := 0
	b = append(b, '{')
	first, next := true, 0
	for i := 0; i < len(fields) || next < nOwn; {
		var f jsonField
		switch {
		case next == nOwn:
			f = fields[i]
			i++
		case i == len(fields) || fieldName(own[next]) <= fieldName(fields[i]):
			if i < len(fields) && fieldName(own[next]) == fieldName(fields[i]) {
				i++ // the response's own field wins
			}
			f = own[next]
			next++
		default:
			f = fields[i]
			i++
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, f.key...)
		if f.raw != "" {
			b = append(b, f.raw...)
			continue
		}
		if f.list && f.nums == nil {
			b = append(b, "null"...)
			continue
		}
		if f.list {
			b = append(b, '[')
		}
		if !f.list && len(f.nums) == 1 {
			// A number already written (the score is the value) is
			// copied rather than formatted again.
			v := math.Float64bits(f.nums[0])
			if k := slices.IndexFunc(written[:nWritten], func(w writtenNum) bool { return w.bits == v }); k >= 0 {
				b = append(b, b[written[k].start:written[k].end]...)
				continue
			}
			start := len(b)
			cache := nums
			if f.unique {
				cache = nil
			}
			var ok bool
			if b, ok = cache.appendFloat(b, f.nums[0]); !ok {
				return b, false
			}
			if nWritten < len(written) {
				written[nWritten] = writtenNum{v, start, len(b)}
				nWritten++
			}
			continue
		}
		for j, v := range f.nums {
			if j > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = nums.appendFloat(b, v); !ok {
				return b, false
			}
		}
		if f.list {
			b = append(b, ']')
		}
	}
	return append(b, '}'), true
}

// numCache keeps the JSON text of recently written numbers that are not
// whole, by their bits: a score's precisions are ratios of small counts
// (100·3/7 is the same number in many segments), and writing a float's
// shortest digits is most of what the details cost. Its text for a number
// is jsonstr.AppendFloat's, so the output is the same either way. Direct
// mapped, an entry a cache line; a Scorer pools them, one per goroutine in
// use. On the bench file's 47,000 fractional numbers (13,400 distinct,
// 10,000 of them scores, which appendFields does not cache) it formats
// 19,700 instead of 47,000.
type numCache struct {
	entries [numCacheSize]numEntry
}

type numEntry struct {
	bits uint64
	size uint8 // 0: empty
	text [maxNumText]byte
}

const (
	numCacheBits = 12
	numCacheSize = 1 << numCacheBits
	maxNumText   = 23 // longer texts (a few exponents) are not kept
)

// appendFloat is jsonstr.AppendFloat through c; a nil c writes directly.
func (c *numCache) appendFloat(b []byte, f float64) ([]byte, bool) {
	if c == nil || f == math.Trunc(f) {
		// Whole numbers have AppendFloat's fast path; infinities too.
		return jsonstr.AppendFloat(b, f)
	}
	v := math.Float64bits(f)
	e := &c.entries[(v*fibonacci)>>(64-numCacheBits)]
	if e.bits == v && e.size != 0 {
		return append(b, e.text[:e.size]...), true
	}
	start := len(b)
	b, ok := jsonstr.AppendFloat(b, f)
	if ok && len(b)-start <= maxNumText {
		e.bits = v
		e.size = uint8(copy(e.text[:], b[start:]))
	}
	return b, ok
}

// writtenNum is a number appendFields wrote, as its bits and where.
type writtenNum struct {
	bits       uint64
	start, end int
}

// fieldName is a jsonField's key without its quotes and colon.
func fieldName(f jsonField) string { return f.key[1 : len(f.key)-2] }

func (r nltkResult) details() map[string]any {
	return map[string]any{
		"score":      r.Score,
		"precisions": r.Precisions,
		"bp":         r.BP,
		"hyp_len":    r.HypLen,
		"ref_len":    r.RefLen,
	}
}

// Aggregate is corpus BLEU: the segments' statistics summed, then one BLEU
// computation. Its 95% interval resamples segments (their statistics) with
// replacement. Scores without statistics are counted as invalid.
func (s *Scorer) Aggregate(ctx context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	width := 2 + 2*s.opts.MaxNgramOrder
	var rows [][]float64
	invalid := 0
	for i, sc := range req.Scores {
		if sc == nil || sc.Invalid || len(sc.Stats) == 0 {
			invalid++
			continue
		}
		if len(sc.Stats) != width {
			return nil, fmt.Errorf("%s: score %d has %d statistics, want %d (scored with a different max_ngram_order?)", Name, i, len(sc.Stats), width)
		}
		rows = append(rows, sc.Stats)
	}
	sum := make([]float64, width)
	corpus := func(idx []int) (float64, map[string]any, error) {
		clear(sum)
		for _, i := range idx {
			for j, v := range rows[i] {
				sum[j] += v
			}
		}
		return s.corpusResult(sum)
	}
	all := make([]int, len(rows))
	for i := range all {
		all[i] = i
	}
	value, details, err := corpus(all)
	if err != nil {
		return nil, fmt.Errorf("%s: aggregate: %w", Name, err)
	}
	lo, hi, ok := bootstrapSums(rows, s.opts.BootstrapResamples, s.opts.Seed, func(sum []float64) float64 {
		v, _ := s.corpusScore(sum) // the full corpus succeeded, so resamples do too
		return v
	})
	if !ok {
		lo, hi = stats.Bootstrap(len(rows), s.opts.BootstrapResamples, s.opts.Seed, func(idx []int) float64 {
			v, _, _ := corpus(idx)
			return v
		})
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
