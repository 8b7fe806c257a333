package rougel

import (
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/hayloft/hayloft/plugins/internal/intern"
)

// Tokenizer names accepted by the tokenizer option.
const (
	TokenizerDefault  = "default"  // rouge_score: lowercase, [a-z0-9]+ runs
	TokenizerChar     = "char"     // each CJK character a token, other words whole
	TokenizerRouge155 = "rouge155" // ROUGE-1.5.5 compatible, as tf-text's tests use
)

// tokenizer turns text into tokens. Implementations are safe for concurrent
// use.
type tokenizer interface {
	tokenize(dst []string, text string) []string
}

// defaultTokenizer is rouge_score's tokenize.tokenize: lowercase, replace
// every run of characters outside [a-z0-9] by a space, split, and (with a
// stemmer) stem tokens longer than 3 characters. Everything non-ASCII is
// dropped, CJK included; that is the reference behaviour, not an accident.
type defaultTokenizer struct {
	stems *stemCache // nil: no stemming
}

func (t defaultTokenizer) tokenize(dst []string, text string) []string {
	start := -1
	var buf []byte // only for tokens that need lowercasing
	flush := func(end int) {
		if start < 0 {
			return
		}
		tok := text[start:end]
		if buf != nil {
			tok = string(buf)
			buf = nil
		}
		if t.stems != nil && len(tok) > 3 {
			tok = t.stems.stem(tok)
		}
		dst = append(dst, tok)
		start = -1
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
				if buf != nil {
					buf = append(buf, c)
				} else if start < 0 {
					start = i
				}
			case 'A' <= c && c <= 'Z':
				if start < 0 {
					start = i
				}
				if buf == nil {
					buf = append(make([]byte, 0, 16), text[start:i]...)
				}
				buf = append(buf, c+('a'-'A'))
			default:
				flush(i)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		// Python's str.lower maps two non-ASCII letters into [a-z]: the
		// Kelvin sign to k and dotted capital I to i (plus a combining dot,
		// which is then a separator).
		var low byte
		switch r {
		case '\u212a':
			low = 'k'
		case '\u0130':
			low = 'i'
		}
		if low != 0 {
			if start < 0 {
				start = i
			}
			if buf == nil {
				buf = append(make([]byte, 0, 16), text[start:i]...)
			}
			buf = append(buf, low)
			if r == '\u0130' {
				flush(i + size)
			}
		} else {
			flush(i)
		}
		i += size
	}
	flush(len(text))
	return dst
}

// appendIDs is tokenize, without a stemmer, straight to token ids: each
// token is lowercased into word (reused) and interned in tab, so no string
// is made per token. Every ROUGE-L score of the default configuration goes
// through here, two texts per pair. It must agree with tokenize exactly
// (TestDefaultTokenizerIDs).
//
// A token of ASCII letters and digits between separators is taken in one
// scan, interned straight from text when it has no capital (most tokens)
// and from its lowercase copy in word when it has; the rest of the text
// goes through appendIDsSlow from the first token that meets one of the two
// non-ASCII letters str.lower maps into [a-z]. Both ways intern with
// Table.Intern.
func (t defaultTokenizer) appendIDs(dst []int32, text string, tab *intern.Table, word *[]byte) []int32 {
	for i := 0; i < len(text); {
		c := text[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(text[i:])
			if r == '\u212a' || r == '\u0130' {
				return t.appendIDsSlow(dst, text[i:], tab, word)
			}
			i += size
			continue
		}
		if asciiToken[c] == 0 {
			i++
			continue
		}
		start, upper := i, byte(0)
		for ; i < len(text); i++ {
			c := text[i]
			l := tokenByte[c]
			if l == 0 {
				break
			}
			upper |= l ^ c // nonzero once a capital was lowered
		}
		if i < len(text) && text[i] >= utf8.RuneSelf {
			if r, _ := utf8.DecodeRuneInString(text[i:]); r == '\u212a' || r == '\u0130' {
				return t.appendIDsSlow(dst, text[start:], tab, word)
			}
		}
		tok := text[start:i]
		if upper != 0 {
			w := (*word)[:0]
			for k := 0; k < len(tok); k++ {
				w = append(w, asciiToken[tok[k]])
			}
			*word = w
			tok = unsafe.String(unsafe.SliceData(w), len(w))
		}
		id, _ := tab.Intern(unsafe.Slice(unsafe.StringData(tok), len(tok)), true)
		dst = append(dst, int32(id))
	}
	return dst
}

// appendIDsSlow is appendIDs a byte at a time, for text with a Kelvin sign
// or a dotted capital I, which str.lower turns into letters of a token.
func (defaultTokenizer) appendIDsSlow(dst []int32, text string, tab *intern.Table, word *[]byte) []int32 {
	w := (*word)[:0]
	emit := func() {
		if len(w) > 0 {
			id, _ := tab.Intern(w, true)
			dst = append(dst, int32(id))
			w = w[:0]
		}
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if l := asciiToken[c]; l != 0 {
				w = append(w, l)
			} else {
				emit()
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch r { // as in tokenize: the two letters str.lower maps into [a-z]
		case '\u212a':
			w = append(w, 'k')
		case '\u0130':
			w = append(w, 'i')
			emit() // its combining dot separates
		default:
			emit()
		}
		i += size
	}
	emit()
	*word = w
	return dst
}

// asciiToken maps the ASCII bytes of tokens to their lowercase ([a-z0-9])
// and every other ASCII byte to 0 (a separator).
var asciiToken = func() (t [utf8.RuneSelf]byte) {
	for c := byte('a'); c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = c, c
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c
	}
	return t
}()

// tokenByte is asciiToken over every byte value, 0 for bytes from 0x80
// (which end an ASCII token as separators do), so that the scan of a token
// looks each byte up once.
var tokenByte = func() (t [256]byte) {
	copy(t[:], asciiToken[:])
	return t
}()

// charTokenizer is for Chinese and Japanese text, which the default
// tokenizer drops entirely: each Han, Hiragana, Katakana or Hangul character
// is a token; runs of other letters and digits are lowercased words (stemmed
// like the default tokenizer when they are ASCII); the rest separates.
type charTokenizer struct {
	stems *stemCache
}

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

func (t charTokenizer) tokenize(dst []string, text string) []string {
	var word strings.Builder
	ascii := true
	flush := func() {
		if word.Len() == 0 {
			return
		}
		tok := word.String()
		if ascii && t.stems != nil && len(tok) > 3 {
			tok = t.stems.stem(tok)
		}
		dst = append(dst, tok)
		word.Reset()
		ascii = true
	}
	for i, r := range text {
		switch {
		case isCJK(r):
			flush()
			dst = append(dst, text[i:i+utf8.RuneLen(r)])
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if r >= utf8.RuneSelf {
				ascii = false
			}
			word.WriteRune(unicode.ToLower(r))
		default:
			flush()
		}
	}
	flush()
	return dst
}

// rouge155Tokenizer reproduces the tokenisation tf-text's ROUGE-L tests use
// to compare with ROUGE-1.5.5: "-" is split off, everything outside
// [A-Za-z0-9-] becomes a space, and only tokens starting with [a-z0-9] are
// kept. There is no lowercasing, so capitalised words are dropped.
type rouge155Tokenizer struct{}

func (rouge155Tokenizer) tokenize(dst []string, text string) []string {
	keep := func(tok string) {
		if tok == "" {
			return
		}
		if c := tok[0]; ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
			dst = append(dst, tok)
		}
	}
	start := -1
	for i := 0; i < len(text); i++ {
		c := text[i]
		alnum := ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
		if alnum {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			keep(text[start:i])
			start = -1
		}
		// "-" is a token of its own, and is then dropped by the filter.
	}
	if start >= 0 {
		keep(text[start:])
	}
	return dst
}
