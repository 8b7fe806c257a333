package bleu

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// This file reproduces nltk.translate.bleu_score (NLTK >= 3.7): modified
// precision, closest reference length, brevity penalty, sentence_bleu and
// corpus_bleu, and Chen & Cherry's SmoothingFunction methods 0-7 with NLTK's
// defaults (epsilon 0.1, alpha 5, k 5). Scores are on the 0-1 scale.

// frac is an unnormalised fraction, as NLTK keeps its precisions
// (Fraction(..., _normalize=False)): smoothing looks at the raw numerator.
type frac struct{ num, den float64 }

func (f frac) value() float64 { return f.num / f.den }

func ngramCounts(toks []string, n int) map[string]int {
	m := map[string]int{}
	for i := 0; i+n <= len(toks); i++ {
		// NUL cannot be typed into a token by any tokenizer here, so the
		// joined key is unambiguous.
		m[strings.Join(toks[i:i+n], "\x00")]++
	}
	return m
}

// modifiedPrecision is NLTK's modified_precision: hypothesis n-gram counts
// clipped by their maximum count in any reference; the denominator is at
// least 1.
func modifiedPrecision(refs [][]string, hyp []string, n int) frac {
	counts := ngramCounts(hyp, n)
	maxRef := map[string]int{}
	for _, ref := range refs {
		rc := ngramCounts(ref, n)
		for g := range counts {
			maxRef[g] = max(maxRef[g], rc[g])
		}
	}
	num, den := 0, 0
	for g, c := range counts {
		num += min(c, maxRef[g])
		den += c
	}
	return frac{float64(num), float64(max(1, den))}
}

// nltkClosestRefLen is NLTK's closest_ref_length: min by (|r-h|, r).
func nltkClosestRefLen(refs [][]string, hypLen int) int {
	best, bestDiff := 0, -1
	for _, r := range refs {
		d := len(r) - hypLen
		if d < 0 {
			d = -d
		}
		if bestDiff < 0 || d < bestDiff || (d == bestDiff && len(r) < best) {
			best, bestDiff = len(r), d
		}
	}
	return best
}

// brevityPenalty is NLTK's brevity_penalty.
func brevityPenalty(closestRefLen, hypLen float64) float64 {
	switch {
	case hypLen > closestRefLen:
		return 1
	case hypLen == 0:
		return 0
	}
	return math.Exp(1 - closestRefLen/hypLen)
}

// Smoothing constants of NLTK's SmoothingFunction().
const (
	nltkAlpha = 5.0
	nltkK     = 5.0
)

// smoothing applies SmoothingFunction().method<m> to pn. refs and hyp are the
// last segment's, as NLTK's corpus_bleu passes them (methods 5 and 6 use
// them); hypLen is the corpus hypothesis length.
func smoothing(m int, epsilon float64, pn []frac, refs [][]string, hyp []string, hypLen float64) ([]float64, error) {
	out := make([]float64, len(pn))
	for i, p := range pn {
		out[i] = p.value()
	}
	switch m {
	case 0:
		for i, p := range pn {
			if p.num == 0 {
				// NLTK substitutes sys.float_info.min so that the log is
				// finite and the score vanishes.
				out[i] = 2.2250738585072014e-308
			}
		}
	case 1:
		for i, p := range pn {
			if p.num == 0 {
				out[i] = (p.num + epsilon) / p.den
			}
		}
	case 2:
		for i, p := range pn {
			if i != 0 {
				out[i] = (p.num + 1) / (p.den + 1)
			}
		}
	case 3:
		inc := 1.0
		for i, p := range pn {
			if p.num == 0 {
				out[i] = 1 / (math.Pow(2, inc) * p.den)
				inc++
			}
		}
	case 4:
		method4(out, pn, hypLen)
	case 5:
		method5(out, refs, hyp)
	case 6:
		if len(out) < 3 || out[2] == 0 {
			return nil, errors.New("smoothing method6 needs a non-zero trigram precision")
		}
		for i := 2; i < len(out); i++ {
			pi0 := 0.0
			if out[i-2] != 0 {
				pi0 = out[i-1] * out[i-1] / out[i-2]
			}
			l := float64(max(0, len(hyp)-i))
			out[i] = (pn[i].num + nltkAlpha*pi0) / (l + nltkAlpha)
		}
	case 7:
		method4(out, pn, hypLen)
		method5(out, refs, hyp)
	default:
		return nil, fmt.Errorf("unknown smoothing method%d", m)
	}
	return out, nil
}

func method4(out []float64, pn []frac, hypLen float64) {
	inc := 1.0
	for i, p := range pn {
		if p.num == 0 && hypLen > 1 {
			num := 1 / (math.Pow(2, inc) * nltkK / math.Log(hypLen))
			out[i] = num / p.den
			inc++
		}
	}
}

// method5 averages each precision with its neighbours. The "next" value of
// the last order is always the 5-gram precision, whatever the number of
// weights: that is what NLTK computes.
func method5(out []float64, refs [][]string, hyp []string) {
	plus := append(append([]float64(nil), out...), modifiedPrecision(refs, hyp, 5).value())
	prev := out[0] + 1
	for i := range out {
		out[i] = (prev + out[i] + plus[i+1]) / 3
		prev = out[i]
	}
}

// nltkResult is one NLTK computation.
type nltkResult struct {
	Score      float64
	Precisions []float64 // after smoothing
	BP         float64
	HypLen     float64
	RefLen     float64
}

// nltkFromStats is the tail of corpus_bleu: brevity penalty, smoothing and
// the weighted geometric mean. refs and hyp feed smoothing methods 5 and 6
// only; nil makes those methods an error.
func nltkFromStats(stats []float64, weights []float64, method int, epsilon float64, refs [][]string, hyp []string) (nltkResult, error) {
	n := (len(stats) - 2) / 2
	res := nltkResult{HypLen: stats[0], RefLen: stats[1]}
	res.BP = brevityPenalty(res.RefLen, res.HypLen)
	pn := make([]frac, n)
	for i := range pn {
		pn[i] = frac{stats[2+i], stats[2+n+i]}
	}
	res.Precisions = make([]float64, n)
	for i, p := range pn {
		res.Precisions[i] = p.value()
	}
	if n == 0 || pn[0].num == 0 {
		return res, nil // NLTK returns 0 outright without unigram matches
	}
	if (method == 5 || method == 6 || method == 7) && hyp == nil {
		return res, fmt.Errorf("smoothing method%d needs the segments themselves and cannot aggregate from statistics", method)
	}
	sm, err := smoothing(method, epsilon, pn, refs, hyp, res.HypLen)
	if err != nil {
		return res, err
	}
	res.Precisions = sm
	var s float64
	for i, w := range weights {
		if i < len(sm) && sm[i] > 0 {
			s += w * math.Log(sm[i])
		}
	}
	res.Score = res.BP * math.Exp(s)
	return res, nil
}
