package rougel

import (
	"encoding/binary"
	"strings"
)

// compareN scores ROUGE-N for one (target, prediction) pair.
//
// In rouge_score mode it is rouge_score's _score_ngrams: both texts go
// through the scorer's tokenizer (and stemmer), n-grams are counted with
// multiplicity, the overlap is clipped (each n-gram counts min(target,
// prediction) times), P = overlap / prediction n-grams, R = overlap /
// target n-grams (each 0 when there are none) and F is the harmonic mean.
// In pltrdy_legacy mode it is the 2017 pltrdy/rouge: distinct n-grams of the
// space-separated words, F = 2PR/(P+R+1e-8).
func (s *Scorer) compareN(target, prediction string) Score {
	if s.opts.Mode == ModePltrdyLegacy {
		if s.opts.Tokenizer == TokenizerChar {
			target, prediction = spaceCJK(target), spaceCJK(prediction)
		}
		if target == "" || prediction == "" {
			return Score{}
		}
		return pltrdyN(strings.Split(prediction, " "), strings.Split(target, " "), s.n)
	}
	sc := s.scratch.Get().(*scratch)
	defer s.put(sc)
	sc.ref = s.tokenIDs(sc, sc.ref[:0], target)
	ref := ngramCounts(sc.ref, s.n)
	sc.can = s.tokenIDs(sc, sc.can[:0], prediction)
	can := ngramCounts(sc.can, s.n)
	refTotal, canTotal, overlap := 0, 0, 0
	for g, c := range ref {
		refTotal += c
		overlap += min(c, can[g])
	}
	for _, c := range can {
		canTotal += c
	}
	p := float64(overlap) / float64(max(canTotal, 1))
	r := float64(overlap) / float64(max(refTotal, 1))
	return Score{Precision: p, Recall: r, Fmeasure: fmeasure(p, r)}
}

// ngramCounts counts the n-grams of ids. A key is the n ids' bytes, so
// n-grams of any length share one map type.
func ngramCounts(ids []int32, n int) map[string]int {
	counts := map[string]int{}
	key := make([]byte, 4*n)
	for i := 0; i+n <= len(ids); i++ {
		for j, id := range ids[i : i+n] {
			binary.LittleEndian.PutUint32(key[4*j:], uint32(id))
		}
		counts[string(key)]++
	}
	return counts
}
