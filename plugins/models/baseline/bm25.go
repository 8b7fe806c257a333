package baseline

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// BM25 parameters, the usual defaults (Robertson and Zaragoza).
const (
	k1 = 1.2
	b  = 0.75
)

// BestSentence returns the sentence of text that best matches question under
// BM25, with document frequencies taken over the sentences of text itself.
// Ties go to the earliest sentence, so with no match at all the answer is
// the first sentence. Terms are lowercase runs of letters and digits, and
// single CJK characters; sentences end at . ! ? 。！？ and newlines.
//
// Only the question's terms are counted: one pass over the text, one map
// lookup per token, no per-sentence maps. That keeps a 128K-token context
// in a few milliseconds.
func BestSentence(text, question string) string {
	terms := map[string]int{}
	scanTokens(question, func(tok []byte) {
		if _, ok := terms[string(tok)]; !ok {
			terms[string(tok)] = len(terms)
		}
	}, nil)
	q := len(terms)

	type span struct{ start, end, length int }
	var (
		sents []span
		tf    []int32 // q counts per sentence
		cur   = span{}
		curTF = make([]int32, q)
	)
	flush := func(end int) {
		if cur.length > 0 {
			cur.end = end
			sents = append(sents, cur)
			tf = append(tf, curTF...)
		}
		clear(curTF)
		cur = span{start: end}
	}
	scanTokens(text, func(tok []byte) {
		cur.length++
		if i, ok := terms[string(tok)]; ok {
			curTF[i]++
		}
	}, flush)
	flush(len(text))
	if len(sents) == 0 {
		return ""
	}

	n := float64(len(sents))
	total := 0
	for _, s := range sents {
		total += s.length
	}
	avgdl := float64(total) / n
	idf := make([]float64, q)
	for t := range q {
		df := 0
		for i := range sents {
			if tf[i*q+t] > 0 {
				df++
			}
		}
		// Lucene's variant: never negative, so a term in most sentences
		// still counts a little instead of penalising them.
		idf[t] = math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
	}
	best, bestScore := 0, -1.0
	for i, s := range sents {
		norm := k1 * (1 - b + b*float64(s.length)/avgdl)
		score := 0.0
		for t := range q {
			if f := float64(tf[i*q+t]); f > 0 {
				score += idf[t] * f * (k1 + 1) / (f + norm)
			}
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return strings.TrimSpace(text[sents[best].start:sents[best].end])
}

// scanTokens calls tok for each lowercased term of text and, when end is
// not nil, end(offset) just after each sentence terminator. The token
// slice is reused between calls.
func scanTokens(text string, tok func([]byte), end func(int)) {
	buf := make([]byte, 0, 64)
	emit := func() {
		if len(buf) > 0 {
			tok(buf)
			buf = buf[:0]
		}
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
				buf = append(buf, c)
			case 'A' <= c && c <= 'Z':
				buf = append(buf, c+'a'-'A')
			default:
				emit()
				if end != nil && isTerminator(text, i) {
					end(i + 1)
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '。' || r == '！' || r == '？':
			emit()
			if end != nil {
				end(i + size)
			}
		case isCJK(r):
			emit()
			buf = utf8.AppendRune(buf, r)
			emit()
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
		default:
			emit()
		}
		i += size
	}
	emit()
}

// isTerminator reports whether the ASCII byte at text[i] ends a sentence. A
// period followed by a letter or digit ("3.14", "e.g", "example.com") does
// not.
func isTerminator(text string, i int) bool {
	switch text[i] {
	case '!', '?', '\n':
		return true
	case '.':
		if i+1 < len(text) {
			c := text[i+1]
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
				return false
			}
		}
		return true
	}
	return false
}

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}
