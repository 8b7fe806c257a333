package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"

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
	predicted := map[string]bool{}
	for _, w := range words(in.Prediction) {
		predicted[w] = true
	}
	best := wasm.Output{Invalid: true, Details: map[string]any{"reason": "no reference has content words"}}
	bestRatio := -1.0
	for i, ref := range refs {
		content := contentWords(ref, stop, opts.MinLength)
		if len(content) == 0 {
			continue
		}
		found, missing := []string{}, []string{}
		for _, w := range content {
			if predicted[w] {
				found = append(found, w)
			} else {
				missing = append(missing, w)
			}
		}
		ratio := float64(len(found)) / float64(len(content))
		if ratio > bestRatio {
			bestRatio = ratio
			best = wasm.Output{
				Value:   ratio,
				Details: map[string]any{"reference": i, "found": found, "missing": missing},
				Stats:   []float64{float64(len(found)), float64(len(content))},
			}
		}
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
// is written without spaces.
func words(text string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.Is(unicode.Han, r):
			flush()
			out = append(out, string(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur.WriteRune(r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// contentWords returns the distinct words of text that are neither stopwords
// nor shorter than minLength runes, in order of first appearance.
func contentWords(text string, stop map[string]bool, minLength int) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range words(text) {
		short := len([]rune(w)) < minLength && !unicode.Is(unicode.Han, []rune(w)[0])
		if stop[w] || short || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}
