package bleu

import (
	"bytes"
	"github.com/hayloft/hayloft/plugins/internal/pytext"
	"strings"
	"unicode"
	"unsafe"
)

// Tokenizer names, as sacrebleu's tokenize parameter spells them.
const (
	Tokenize13a  = "13a"
	TokenizeZh   = "zh"
	TokenizeChar = "char"
	TokenizeNone = "none"
	TokenizeIntl = "intl"
)

// tokenizeFunc turns a segment into sacrebleu's tokenized string, except
// that whitespace is left as it falls: sacrebleu's final ' '.join(split())
// is skipped because n-grams are taken over the fields anyway
// (normalizeSpace gives the exact sacrebleu string).
type tokenizeFunc func(string) string

// normalizeSpace is sacrebleu's ' '.join(line.split()).
func normalizeSpace(s string) string { return strings.Join(pytext.Fields(s), " ") }

func tokenizerFor(name string) (tokenizeFunc, bool) {
	switch name {
	case Tokenize13a:
		return tokenize13a, true
	case TokenizeZh:
		return tokenizeZh, true
	case TokenizeChar:
		return tokenizeChar, true
	case TokenizeNone:
		return func(s string) string { return s }, true
	case TokenizeIntl:
		return tokenizeIntl, true
	}
	return nil, false
}

// tokenize13a is sacrebleu's Tokenizer13a (mteval-v13a): unescape a few
// entities, join lines, pad with spaces, then the regexp rules.
func tokenize13a(line string) string {
	var sc scratch
	b := sc.tokenize13a(line)
	return unsafe.String(unsafe.SliceData(b), len(b)) // sc is never used again
}

// scratch holds the buffers of the regexp rules between calls, so that a
// pooled counter tokenizes segment after segment without allocating.
type scratch struct{ a, b []byte }

// tokenize13a is the package's tokenize13a into sc's buffers: the result is
// valid until the next call on sc.
func (sc *scratch) tokenize13a(line string) []byte {
	return sc.rules(preprocess13a(line), true)
}

// preprocess13a is Tokenizer13a's replacements before its regexp rules:
// "<skipped>" removed, line breaks joined, four entities unescaped. Most
// lines have none of '<', '\n' and '&', and are returned as they are.
func preprocess13a(line string) string {
	if strings.IndexByte(line, '<') >= 0 {
		line = strings.ReplaceAll(line, "<skipped>", "")
	}
	if strings.IndexByte(line, '\n') >= 0 {
		line = strings.ReplaceAll(line, "-\n", "")
		line = strings.ReplaceAll(line, "\n", " ")
	}
	if strings.Contains(line, "&") {
		line = strings.ReplaceAll(line, "&quot;", `"`)
		line = strings.ReplaceAll(line, "&amp;", "&")
		line = strings.ReplaceAll(line, "&lt;", "<")
		line = strings.ReplaceAll(line, "&gt;", ">")
	}
	return line
}

// regexpRules is sacrebleu's TokenizerRegexp. Its four re.sub passes are
// rewritten as byte scans; each pass consumes its match before looking for
// the next, exactly as re.sub does, which is what decides cases like "a.,b".
// Working on bytes is safe: every character the rules name is ASCII, and
// UTF-8 continuation bytes are never ASCII. Passes 2-4 jump between the
// bytes that can start a match ('.', ',' or '-') and copy the rest in bulk.
//
// pad puts a space before and after line first (13a's padding), without
// building the padded copy.
func regexpRules(line string, pad bool) string {
	var sc scratch
	b := sc.rules(line, pad)
	return unsafe.String(unsafe.SliceData(b), len(b)) // sc is never used again
}

// rules is regexpRules into sc's buffers: the result is valid until the
// next call on sc.
func (sc *scratch) rules(line string, pad bool) []byte {
	// Rule 1: space out ASCII punctuation except ' , - . (a space, which
	// the class also holds, is left single: only the field split sees it).
	// The buffer is sized for the worst case (every byte spaced out) and
	// written by index: an append per byte was most of this pass.
	b := slicesGrow(sc.a[:0], 3*len(line)+2)
	b = b[:cap(b)]
	n := 0
	if pad {
		b[n] = ' '
		n++
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c != ' ' && rule1[c] {
			b[n], b[n+1], b[n+2] = ' ', c, ' '
			n += 3
		} else {
			b[n] = c
			n++
		}
	}
	if pad {
		b[n] = ' '
		n++
	}
	b = b[:n]
	// Rule 2: ([^0-9])([.,]) -> "\1 \2 ". Matches are found at their
	// second character; i is the first byte not yet copied, and from the
	// first position a match's second character may take (its first must
	// not have been consumed by the previous match).
	b2 := slicesGrow(sc.b[:0], len(b)+len(b)/4+16)
	i, from := 0, 1
	dc := newDotComma(b)
	for {
		j := dc.next(from)
		if j < 0 {
			break
		}
		if isDigit(b[j-1]) {
			from = j + 1 // b[j] may still open a match with b[j+1]
			continue
		}
		b2 = append(b2, b[i:j]...)
		b2 = append(b2, ' ', b[j], ' ')
		i, from = j+1, j+2
	}
	b2 = append(b2, b[i:]...)
	// Rule 3: ([.,])([^0-9]) -> " \1 \2".
	b3 := slicesGrow(b[:0], len(b2)+len(b2)/4+16)
	i = 0
	dc = newDotComma(b2)
	for {
		j := dc.next(i)
		if j < 0 || j+1 >= len(b2) {
			break
		}
		if isDigit(b2[j+1]) {
			b3 = append(b3, b2[i:j+1]...)
			i = j + 1
			continue
		}
		b3 = append(b3, b2[i:j]...)
		b3 = append(b3, ' ', b2[j], ' ', b2[j+1])
		i = j + 2
	}
	b3 = append(b3, b2[i:]...)
	// Rule 4: ([0-9])(-) -> "\1 \2 ".
	b4 := slicesGrow(b2[:0], len(b3)+len(b3)/4+16)
	i = 0
	for {
		k := bytes.IndexByte(b3[i:], '-')
		if k < 0 {
			break
		}
		j := i + k
		if j > i && isDigit(b3[j-1]) {
			b4 = append(b4, b3[i:j]...)
			b4 = append(b4, ' ', '-', ' ')
		} else {
			b4 = append(b4, b3[i:j+1]...)
		}
		i = j + 1
	}
	b4 = append(b4, b3[i:]...)
	sc.a, sc.b = b3, b4 // kept, grown, for the next call
	return b4
}

// dotComma finds the '.' and ',' of a buffer that is not written while it
// is searched, in increasing order: it keeps the next of each, found with
// IndexByte (vectorised), so a pass over the buffer looks at each byte about
// twice instead of through a byte-at-a-time IndexAny per match.
type dotComma struct {
	b          []byte
	dot, comma int // next position of each at or after the last from, or -1
}

func newDotComma(b []byte) dotComma {
	return dotComma{b: b, dot: indexFrom(b, '.', 0), comma: indexFrom(b, ',', 0)}
}

// next returns the index of the first '.' or ',' at or after from (which
// never decreases between calls), or -1.
func (d *dotComma) next(from int) int {
	if d.dot >= 0 && d.dot < from {
		d.dot = indexFrom(d.b, '.', from)
	}
	if d.comma >= 0 && d.comma < from {
		d.comma = indexFrom(d.b, ',', from)
	}
	switch {
	case d.dot < 0:
		return d.comma
	case d.comma < 0:
		return d.dot
	}
	return min(d.dot, d.comma)
}

// indexFrom is the index of c in b at or after from, or -1.
func indexFrom(b []byte, c byte, from int) int {
	if from >= len(b) {
		return -1
	}
	if k := bytes.IndexByte(b[from:], c); k >= 0 {
		return from + k
	}
	return -1
}

func slicesGrow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, 0, n)
	}
	return b
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// rule1 is the class [\{-\~\[-\` -\&\(-\+\:-\@\/].
var rule1 = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = ('{' <= c && c <= '~') || ('[' <= c && c <= '`') || (' ' <= c && c <= '&') ||
			('(' <= c && c <= '+') || (':' <= c && c <= '@') || c == '/'
	}
	return t
}()

// zhRanges are sacrebleu's _UCODE_RANGES for TokenizerZh. Two of its Python
// literals are five hex digits after \u, which Python reads as four digits
// and a character: ('\u20000', '\u2a6d6') compares as U+2001..U+2A6D and
// ('\u2f800', '\u2fa1d') as U+2F81..U+2FA1. sacrebleu's scores depend on
// that, so it is kept: U+2001..U+2A6D covers general punctuation, arrows,
// maths operators and more.
var zhRanges = [][2]rune{
	{0x3400, 0x4db5},
	{0x4e00, 0x9fa5},
	{0x9fa6, 0x9fbb},
	{0xf900, 0xfa2d},
	{0xfa30, 0xfa6a},
	{0xfa70, 0xfad9},
	{0x2001, 0x2a6d},
	{0x2f81, 0x2fa1},
	{0xff00, 0xffef},
	{0x2e80, 0x2eff},
	{0x3000, 0x303f},
	{0x31c0, 0x31ef},
	{0x2f00, 0x2fdf},
	{0x2ff0, 0x2fff},
	{0x3100, 0x312f},
	{0x31a0, 0x31bf},
	{0xfe10, 0xfe1f},
	{0xfe30, 0xfe4f},
	{0x2600, 0x26ff},
	{0x2700, 0x27bf},
	{0x3200, 0x32ff},
	{0x3300, 0x33ff},
}

func isZhChar(r rune) bool {
	if r < 0x2001 {
		return false
	}
	for _, rg := range zhRanges {
		if rg[0] <= r && r <= rg[1] {
			return true
		}
	}
	return false
}

// tokenizeZh is sacrebleu's TokenizerZh: strip, space out every character
// in zhRanges, then the regexp rules (without 13a's padding).
func tokenizeZh(line string) string {
	line = pytext.Strip(line)
	var b strings.Builder
	b.Grow(len(line) + len(line)/2)
	for _, r := range line {
		if isZhChar(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
		} else {
			b.WriteRune(r)
		}
	}
	return regexpRules(b.String(), false)
}

// tokenizeChar is sacrebleu's TokenizerChar: every character is a token.
func tokenizeChar(line string) string {
	var b strings.Builder
	b.Grow(2 * len(line))
	for i, r := range line {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// tokenizeIntl is sacrebleu's TokenizerV14International (mteval-v14
// --international-tokenization), on Go's Unicode tables:
// (\P{N})(\p{P}) -> "\1 \2 ", then (\p{P})(\P{N}) -> " \1 \2", then
// (\p{S}) -> " \1 ".
func tokenizeIntl(line string) string {
	rs := []rune(line)
	out := make([]rune, 0, len(rs)+len(rs)/2)
	for i := 0; i < len(rs); {
		if i+1 < len(rs) && !unicode.IsNumber(rs[i]) && unicode.IsPunct(rs[i+1]) {
			out = append(out, rs[i], ' ', rs[i+1], ' ')
			i += 2
			continue
		}
		out = append(out, rs[i])
		i++
	}
	rs, out = out, make([]rune, 0, len(out)+len(out)/2)
	for i := 0; i < len(rs); {
		if i+1 < len(rs) && unicode.IsPunct(rs[i]) && !unicode.IsNumber(rs[i+1]) {
			out = append(out, ' ', rs[i], ' ', rs[i+1])
			i += 2
			continue
		}
		out = append(out, rs[i])
		i++
	}
	var b strings.Builder
	b.Grow(len(out) + 8)
	for _, r := range out {
		if unicode.IsSymbol(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}
