package embed

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// HashingName is the embedder's name in configs.
const HashingName = "hashing"

// Hashing defaults: 1024 dimensions, word uni- and bigrams, character
// trigrams.
const (
	DefaultHashingDim = 1024
	DefaultWordNgrams = 2
	DefaultCharNgrams = 3
)

// Hashing is an offline embedder in the manner of scikit-learn's
// HashingVectorizer followed by a TfidfTransformer: features are hashed
// into Dim buckets, counted, and (through Weights) weighted by inverse
// document frequency.
//
// Features are the word n-grams for n = 1..Words and the character n-grams
// of length Chars (0: none) inside each word padded with one space on
// either side, so "cat" gives " ca", "cat", "at ". Words are the maximal
// runs of letters and digits, lowercased; each CJK character is a word of
// its own (see Terms). Each feature kind hashes in its own namespace
// (FNV-1a), so the word "the" and the trigram "the" are different features.
//
// Embed returns, for each text, its bucket counts with sublinear scaling
// (1 + ln count) at unit length: term frequencies, still unweighted.
// Weights fits IDF on a document's chunks; the retriever applies it to the
// chunks and to the question alike, so the question is weighted by the
// rarity of its terms in the document being searched. Buckets of question
// terms absent from the document get the largest IDF, which changes the
// question's length but not the ranking, as the chunks are zero there.
// Deterministic: the same text always gives the same vector.
type Hashing struct {
	dim, words, chars int
}

// NewHashing returns a hashing embedder; dim must be positive, words at
// least 1, chars 0 (no character n-grams) or more.
func NewHashing(dim, words, chars int) (*Hashing, error) {
	if dim <= 0 || words < 1 || chars < 0 {
		return nil, fmt.Errorf("hashing: want dim > 0, words >= 1, chars >= 0; got dim=%d words=%d chars=%d", dim, words, chars)
	}
	return &Hashing{dim: dim, words: words, chars: chars}, nil
}

// ParseHashing reads the parameters after "hashing:" in an embedder string:
// comma-separated dim=N, words=N, chars=N, any of which may be left out.
func ParseHashing(s string) (*Hashing, error) {
	vals := map[string]int{"dim": DefaultHashingDim, "words": DefaultWordNgrams, "chars": DefaultCharNgrams}
	if s != "" {
		for _, kv := range strings.Split(s, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if _, known := vals[k]; !ok || !known {
				return nil, fmt.Errorf("hashing parameter %q: want dim=N, words=N or chars=N", kv)
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("hashing parameter %q: %w", kv, err)
			}
			vals[k] = n
		}
	}
	return NewHashing(vals["dim"], vals["words"], vals["chars"])
}

// Identity spells out every parameter, so changing one never reuses
// another setting's vectors.
func (h *Hashing) Identity() string {
	return fmt.Sprintf("%s:dim=%d,words=%d,chars=%d", HashingName, h.dim, h.words, h.chars)
}

// Dim is the number of buckets.
func (h *Hashing) Dim() int { return h.dim }

// Embed hashes each text; large calls are spread over the available cores.
func (h *Hashing) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	workers := min(runtime.GOMAXPROCS(0), len(texts))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(texts); i += workers {
				if ctx.Err() != nil {
					return
				}
				out[i] = h.vector(texts[i])
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Feature namespaces: word n-grams use n, character n-grams this.
const charSpace = 0xff

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func fnvByte(h uint64, b byte) uint64 {
	h ^= uint64(b)
	return h * fnvPrime
}

// bucket maps a hash to [0, dim) by its high bits (Lemire's multiply-shift
// reduction), a multiplication where f % dim would be a division.
func bucket(f, dim uint64) uint64 {
	hi, _ := bits.Mul64(f, dim)
	return hi
}

func (h *Hashing) vector(text string) []float32 {
	v := make([]float32, h.dim)
	dim := uint64(h.dim)
	// ring holds the last h.words words for the n-grams ending at each word.
	ring := make([]string, h.words)
	n := 0
	var runes []rune
	Terms(text, func(w string) {
		ring[n%h.words] = w
		n++
		for size := 1; size <= min(h.words, n); size++ {
			f := fnvByte(fnvOffset, byte(size))
			for j := n - size; j < n; j++ {
				if j > n-size {
					f = fnvByte(f, ' ')
				}
				f = fnvString(f, ring[j%h.words])
			}
			v[bucket(f, dim)]++
		}
		if h.chars > 0 {
			runes = h.charGrams(v, w, runes)
		}
	})
	for i, c := range v {
		if c > 0 {
			v[i] = 1 + float32(math.Log(float64(c)))
		}
	}
	Normalize(v)
	return v
}

// charGrams counts the character n-grams of " w ". runes is scratch space,
// returned for reuse.
func (h *Hashing) charGrams(v []float32, w string, runes []rune) []rune {
	dim := uint64(h.dim)
	padded := len(w) + 2
	ascii := true
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		// Bytes are characters: hash " w " windows without building it.
		at := func(i int) byte {
			if i == 0 || i == padded-1 {
				return ' '
			}
			return w[i-1]
		}
		for i := 0; i+h.chars <= padded; i++ {
			f := fnvByte(fnvOffset, charSpace)
			for j := i; j < i+h.chars; j++ {
				f = fnvByte(f, at(j))
			}
			v[bucket(f, dim)]++
		}
		return runes
	}
	runes = append(runes[:0], ' ')
	runes = append(runes, []rune(w)...)
	runes = append(runes, ' ')
	var buf [utf8.UTFMax]byte
	for i := 0; i+h.chars <= len(runes); i++ {
		f := fnvByte(fnvOffset, charSpace)
		for _, r := range runes[i : i+h.chars] {
			k := utf8.EncodeRune(buf[:], r)
			for _, b := range buf[:k] {
				f = fnvByte(f, b)
			}
		}
		v[bucket(f, dim)]++
	}
	return runes
}

// Weights returns smoothed inverse document frequencies over docs, per
// bucket: ln((1+N)/(1+df)) + 1, where df is the number of docs with the
// bucket non-zero (scikit-learn's smooth_idf). Every weight is at least 1,
// so no feature is dropped.
func (h *Hashing) Weights(docs [][]float32) []float32 {
	df := make([]int, h.dim)
	for _, d := range docs {
		for i, x := range d {
			if x != 0 {
				df[i]++
			}
		}
	}
	w := make([]float32, h.dim)
	n := float64(len(docs))
	for i, c := range df {
		w[i] = float32(math.Log((1+n)/(1+float64(c))) + 1)
	}
	return w
}

// Terms calls fn with each term of text in order: maximal runs of letters
// and digits, lowercased, with every CJK character (Han, Hiragana, Katakana,
// Hangul) a term of its own, since those scripts do not separate words by
// spaces. BM25 and the hashing embedder share it.
func Terms(text string, fn func(term string)) {
	start := -1
	emit := func(end int) {
		w := text[start:end]
		if hasUpper(w) {
			w = strings.ToLower(w)
		}
		fn(w)
		start = -1
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
				if start < 0 {
					start = i
				}
			} else if start >= 0 {
				emit(i)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case IsCJK(r):
			if start >= 0 {
				emit(i)
			}
			start = i
			emit(i + size)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if start < 0 {
				start = i
			}
		default:
			if start >= 0 {
				emit(i)
			}
		}
		i += size
	}
	if start >= 0 {
		emit(len(text))
	}
}

// hasUpper reports whether w might change when lowercased; most words
// do not, and skipping ToLower for them saves its scan.
func hasUpper(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// IsCJK reports whether r belongs to a script written without spaces
// between words.
func IsCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}
