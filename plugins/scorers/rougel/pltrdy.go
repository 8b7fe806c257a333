package rougel

import (
	"strings"

	"github.com/hayloft/hayloft/plugins/internal/pytext"
)

// This file reproduces the `rouge` package by pltrdy that LongBench calls:
// the current version (mode "pltrdy") and the 2017 version several papers'
// numbers come from (mode "pltrdy_legacy"). Both work on whitespace tokens
// of the raw text; neither lowercases.

// pltrdySentences splits text as pltrdy's Rouge.get_scores does: on ".",
// keeping pieces that are non-empty before whitespace is normalised, then
// into words on single spaces. A piece of only spaces therefore yields one
// empty word, which pltrdy counts like any other; so do we.
func pltrdySentences(text string) [][]string {
	var out [][]string
	for _, piece := range strings.Split(text, ".") {
		if piece == "" {
			continue
		}
		out = append(out, strings.Split(strings.Join(pytext.Fields(piece), " "), " "))
	}
	return out
}

// spaceCJK puts spaces around every CJK character, so that pltrdy's
// whitespace tokenisation sees each one as a word (LongBench does the same
// with jieba words).
func spaceCJK(text string) string {
	var b strings.Builder
	b.Grow(len(text) + len(text)/2)
	for _, r := range text {
		if isCJK(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// interner assigns dense ids to words.
type interner map[string]int32

func (v interner) ids(words []string) []int32 {
	out := make([]int32, len(words))
	for i, w := range words {
		id, ok := v[w]
		if !ok {
			id = int32(len(v))
			v[w] = id
		}
		out[i] = id
	}
	return out
}

// pltrdyF is pltrdy's F: 2PR/(P+R+1e-8), in its order of operations.
func pltrdyF(p, r float64) float64 {
	return 2.0 * ((p * r) / (p + r + 1e-8))
}

// pltrdyL is rouge_l_summary_level of current pltrdy/rouge: words of the LCS
// of every (reference sentence, hypothesis sentence) pair, as a set, united
// over all pairs; P and R divide its size by the number of distinct words.
// An empty side is an error in pltrdy, which LongBench turns into 0.
func pltrdyL(hyp, ref string) Score {
	hs, rs := pltrdySentences(hyp), pltrdySentences(ref)
	if len(hs) == 0 || len(rs) == 0 {
		return Score{}
	}
	v := interner{}
	hid := make([][]int32, len(hs))
	for i, s := range hs {
		hid[i] = v.ids(s)
	}
	rid := make([][]int32, len(rs))
	for i, s := range rs {
		rid[i] = v.ids(s)
	}
	n := distinct(hid)
	m := distinct(rid)
	union := map[int32]bool{}
	for _, r := range rid {
		for _, h := range hid {
			for _, i := range lcsRefIndices(r, h, lcsTable(r, h), true) {
				union[r[i]] = true
			}
		}
	}
	llcs := float64(len(union))
	rc := llcs / float64(m)
	p := llcs / float64(n)
	return Score{Precision: p, Recall: rc, Fmeasure: pltrdyF(p, rc)}
}

func distinct(sents [][]int32) int {
	seen := map[int32]bool{}
	for _, s := range sents {
		for _, t := range s {
			seen[t] = true
		}
	}
	return len(seen)
}

// pltrdyN is pltrdy's rouge_n (both versions): distinct n-grams of the
// flattened words, P and R from the size of the intersection.
func pltrdyN(hypWords, refWords []string, n int) Score {
	h, r := ngramSet(hypWords, n), ngramSet(refWords, n)
	over := 0
	for g := range h {
		if r[g] {
			over++
		}
	}
	var p, rc float64
	if len(h) > 0 {
		p = float64(over) / float64(len(h))
	}
	if len(r) > 0 {
		rc = float64(over) / float64(len(r))
	}
	return Score{Precision: p, Recall: rc, Fmeasure: pltrdyF(p, rc)}
}

func ngramSet(words []string, n int) map[string]bool {
	set := map[string]bool{}
	for i := 0; i+n <= len(words); i++ {
		// Words hold no spaces, so a space-joined key is unambiguous.
		set[strings.Join(words[i:i+n], " ")] = true
	}
	return set
}

// legacyL is the 2017 pltrdy/rouge ROUGE-L: one LCS over the whitespace
// words of each whole text, with tensor2tensor's F (beta = P/R).
func legacyL(hyp, ref string) Score {
	hw, rw := strings.Split(hyp, " "), strings.Split(ref, " ")
	if hyp == "" || ref == "" {
		return Score{}
	}
	v := interner{}
	h, r := v.ids(hw), v.ids(rw)
	l := lcsLen(r, h, nil)
	rc := float64(l) / float64(len(rw))
	p := float64(l) / float64(len(hw))
	beta := p / (rc + 1e-12)
	num := (1 + beta*beta) * rc * p
	den := rc + beta*beta*p
	return Score{Precision: p, Recall: rc, Fmeasure: num / (den + 1e-12)}
}
