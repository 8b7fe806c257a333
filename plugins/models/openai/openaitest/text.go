package openaitest

import (
	"crypto/sha256"
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenSpans splits text the way the fake model tokenizes: each run of
// letters or digits is a token, except that CJK characters are one token
// each, and every other non-space character is a token of its own. Spans
// are byte offsets [start, end).
func tokenSpans(text string) [][2]int {
	var spans [][2]int
	start := -1
	for i, r := range text {
		switch {
		case isCJK(r):
			if start >= 0 {
				spans = append(spans, [2]int{start, i})
				start = -1
			}
			spans = append(spans, [2]int{i, i + utf8.RuneLen(r)})
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if start < 0 {
				start = i
			}
		default:
			if start >= 0 {
				spans = append(spans, [2]int{start, i})
				start = -1
			}
			if !unicode.IsSpace(r) {
				spans = append(spans, [2]int{i, i + utf8.RuneLen(r)})
			}
		}
	}
	if start >= 0 {
		spans = append(spans, [2]int{start, len(text)})
	}
	return spans
}

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// Tokens are the ids the fake tokenizer gives text: one per token span, the
// token's FNV hash modulo 100,000. Usage counts and /tokenize agree with it.
func Tokens(text string) []int {
	spans := tokenSpans(text)
	ids := make([]int, len(spans))
	for i, sp := range spans {
		ids[i] = int(hash64(text[sp[0]:sp[1]]) % 100000)
	}
	return ids
}

// CountTokens is len(Tokens(text)) without building the ids.
func CountTokens(text string) int { return len(tokenSpans(text)) }

// TokenLogprob is the log-probability the fake model assigns a token in an
// echoed prompt: a value in (-10, 0) fixed by the token's text.
func TokenLogprob(token string) float64 {
	return -10 * float64(hash64(token)%9973+1) / 9974
}

func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// Vector is the unit-length embedding the fake gives text: Gaussian
// components drawn from a generator seeded by the text's SHA-256, so equal
// texts embed equally and different texts almost orthogonally.
func Vector(text string, dim int) []float32 {
	sum := sha256.Sum256([]byte(text))
	rng := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
	v := make([]float32, dim)
	var norm float64
	for i := range v {
		x := rng.NormFloat64()
		v[i] = float32(x)
		norm += x * x
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

// DefaultAnswer answers from the last user message: its last line is taken
// as the question, and the answer is the last sentence before it sharing the
// most words (four letters or more, or single CJK characters) with the
// question. With nothing shared it answers "I don't know." Deterministic and
// crude, which is the point: a needle whose sentence repeats the question's
// words is found, as a real model would find it.
func DefaultAnswer(req ChatRequest) string {
	var msg string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" || req.Messages[i].Role == "" {
			msg = req.Messages[i].Content
			break
		}
	}
	msg = strings.TrimSpace(msg)
	body, question := msg, ""
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		body, question = msg[:i], msg[i+1:]
	} else {
		sents := sentences(msg)
		if len(sents) < 2 {
			return "I don't know."
		}
		question = sents[len(sents)-1]
		body = strings.Join(sents[:len(sents)-1], " ")
	}
	qwords := words(question)
	best, bestN := "", 0
	for _, s := range sentences(body) {
		n := 0
		for w := range words(s) {
			if qwords[w] {
				n++
			}
		}
		if n > 0 && n >= bestN {
			best, bestN = s, n
		}
	}
	if best == "" {
		return "I don't know."
	}
	return best
}

func sentences(text string) []string {
	var out []string
	start := 0
	for i, r := range text {
		switch r {
		case '.', '!', '?', '\n', '。', '！', '？':
			if s := strings.TrimSpace(text[start : i+utf8.RuneLen(r)]); s != "" {
				out = append(out, s)
			}
			start = i + utf8.RuneLen(r)
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

func words(text string) map[string]bool {
	out := map[string]bool{}
	for _, sp := range tokenSpans(text) {
		w := strings.ToLower(text[sp[0]:sp[1]])
		r, _ := utf8.DecodeRuneInString(w)
		if isCJK(r) || (len(w) >= 4 && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			out[w] = true
		}
	}
	return out
}
