package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hayloft/hayloft/sdk/wasm"
)

// options are the scorer's settings, passed by the host from the config's
// options object.
type options struct {
	// MinLength drops shorter words (in runes) from the reference's content
	// words; single Han characters are always kept.
	MinLength int `json:"min_length"`
	// Stopwords are added to the built-in English list.
	Stopwords []string `json:"stopwords"`
}

// stopwords are function words that say nothing about whether an answer
// covers its reference.
var stopwords = setOf(strings.Fields(`a an and are as at be been but by can could did do does
for from had has have he her his how i if in into is it its me my no not of on or our she so
than that the their them then there these they this those to was we were what when where which
who why will with would you your`))

func setOf(words []string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[strings.ToLower(w)] = true
	}
	return m
}

// score is the share of a reference's distinct content words that occur in
// the prediction, best over the references. Stats carry the matched and total
// counts of that reference so aggregate can micro-average.
func score(in wasm.Input) (wasm.Output, error) {
	opts := options{MinLength: 2}
	if err := in.DecodeOptions(&opts); err != nil {
		return wasm.Output{}, fmt.Errorf("options: %w", err)
	}
	stop := stopwords
	if len(opts.Stopwords) > 0 {
		stop = setOf(opts.Stopwords)
		for w := range stopwords {
			stop[w] = true
		}
	}
	refs := in.References
	if len(refs) == 0 {
		refs = in.Sample.Targets
	}
	predicted := newWordSet(words(in.Prediction))
	var best wasm.Output
	bestRatio := -1.0
	for i, ref := range refs {
		content := contentWords(ref, stop, opts.MinLength)
		if len(content) == 0 {
			continue
		}
		// One backing array: found from the front, missing from the back.
		split := make([]string, len(content))
		nf, nm := 0, len(content)
		for _, w := range content {
			if predicted.has(w) {
				split[nf] = w
				nf++
			} else {
				nm--
				split[nm] = w
			}
		}
		missing := split[nf:]
		slices.Reverse(missing) // back in reference order
		ratio := float64(nf) / float64(len(content))
		if ratio > bestRatio {
			bestRatio = ratio
			best = wasm.Output{
				Value:   ratio,
				Details: map[string]any{"reference": i, "found": split[:nf:nf], "missing": missing},
				Stats:   []float64{float64(nf), float64(len(content))},
			}
		}
	}
	if bestRatio < 0 {
		return wasm.Output{Invalid: true, Details: map[string]any{"reason": "no reference has content words"}}, nil
	}
	return best, nil
}

// aggregate is the micro-average: all matched words over all reference
// words, so long references weigh more than in the mean of sample values. Its
// 95% interval is a percentile bootstrap over samples, seeded so that a run
// can be repeated exactly.
func aggregate(in wasm.AggregateInput) (wasm.AggregateOutput, error) {
	var counts [][2]float64
	invalid := 0
	for i, s := range in.Scores {
		if s.Invalid {
			invalid++
			continue
		}
		if len(s.Stats) != 2 {
			return wasm.AggregateOutput{}, fmt.Errorf("score %d: want 2 stats, got %d", i, len(s.Stats))
		}
		counts = append(counts, [2]float64{s.Stats[0], s.Stats[1]})
	}
	n := len(counts)
	value, found, total := microAverage(counts)
	low, high := bootstrap(counts, value)
	return wasm.AggregateOutput{
		Value: value, N: &n, Invalid: &invalid, CILow: &low, CIHigh: &high,
		Details: map[string]any{"found": found, "total": total},
	}, nil
}

func microAverage(counts [][2]float64) (value, found, total float64) {
	for _, c := range counts {
		found += c[0]
		total += c[1]
	}
	if total > 0 {
		value = found / total
	}
	return value, found, total
}

const (
	bootstrapRounds = 1000
	bootstrapSeed   = 20240601
)

// bootstrap returns the 2.5th and 97.5th percentiles of the micro-average
// over resamples of counts; with fewer than two samples there is no spread
// to measure and both ends are the value itself.
func bootstrap(counts [][2]float64, value float64) (low, high float64) {
	if len(counts) < 2 {
		return value, value
	}
	rng := rand.New(rand.NewPCG(bootstrapSeed, uint64(len(counts))))
	vals := make([]float64, bootstrapRounds)
	sample := make([][2]float64, len(counts))
	for r := range vals {
		for i := range sample {
			sample[i] = counts[rng.IntN(len(counts))]
		}
		vals[r], _, _ = microAverage(sample)
	}
	slices.Sort(vals)
	return vals[bootstrapRounds*25/1000], vals[bootstrapRounds*975/1000-1]
}

// words lowercases text and splits it into words: runs of letters and
// digits, except that each Han character is a word of its own, since Chinese
// is written without spaces. The words share the memory of one lowercased
// copy of text: as WebAssembly, each allocation and function call costs far
// more than natively, so the common ASCII case is handled inline.
func words(text string) []string {
	if text == "" {
		return nil
	}
	lower := toLower(text)
	// A guess at the number of words that spares most regrowth.
	out := make([]string, 0, len(lower)/6+1)
	start := -1 // start of the current word, -1 between words
	for i := 0; i < len(lower); {
		c := lower[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
				if start < 0 {
					start = i
				}
			} else if start >= 0 {
				out = append(out, lower[start:i])
				start = -1
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(lower[i:])
		switch {
		case isHan(r):
			if start >= 0 {
				out = append(out, lower[start:i])
				start = -1
			}
			out = append(out, lower[i:i+n])
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if start < 0 {
				start = i
			}
		default:
			if start >= 0 {
				out = append(out, lower[start:i])
				start = -1
			}
		}
		i += n
	}
	if start >= 0 {
		out = append(out, lower[start:])
	}
	return out
}

// toLower is strings.ToLower with a fast path for ASCII text.
func toLower(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.ToLower(s)
		}
	}
	// In place in a copy: a call per byte (strings.Builder.WriteByte, as
	// strings.ToLower does) costs more than the copy.
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// isHan reports whether r is a Han character; no Han character lies below
// U+2E80, which spares ASCII and Latin text the table search.
func isHan(r rune) bool {
	return r >= 0x2E80 && unicode.Is(unicode.Han, r)
}

// contentWords returns the distinct words of text that are neither stopwords
// nor shorter than minLength runes, in order of first appearance.
func contentWords(text string, stop map[string]bool, minLength int) []string {
	ws := words(text)
	seen := wordSet{list: make([]string, 0, len(ws))}
	for _, w := range ws {
		first, _ := utf8.DecodeRuneInString(w)
		short := utf8.RuneCountInString(w) < minLength && !isHan(first)
		if short || stop[w] {
			continue
		}
		seen.add(w)
	}
	return seen.list
}

// wordSet is a set of words that keeps their order. While small it is
// searched by a scan, which costs less than hashing as WebAssembly; past
// smallSet words a map indexes it.
type wordSet struct {
	list  []string
	index map[string]bool
}

const smallSet = 32

// newWordSet returns the set of words, which may repeat: they are only
// looked up, so repeats cost a scan nothing but time.
func newWordSet(words []string) *wordSet {
	s := &wordSet{list: words}
	if len(words) > smallSet {
		s.index = make(map[string]bool, len(words))
		for _, w := range words {
			s.index[w] = true
		}
	}
	return s
}

// add adds w unless the set holds it.
func (s *wordSet) add(w string) {
	if s.has(w) {
		return
	}
	s.list = append(s.list, w)
	switch {
	case s.index != nil:
		s.index[w] = true
	case len(s.list) > smallSet:
		s.index = make(map[string]bool, 2*len(s.list))
		for _, v := range s.list {
			s.index[v] = true
		}
	}
}

func (s *wordSet) has(w string) bool {
	if s.index != nil {
		return s.index[w]
	}
	return slices.Contains(s.list, w)
}
