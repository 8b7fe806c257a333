package bleu

import (
	"math/bits"
	"unicode/utf8"

	"github.com/hayloft/hayloft/plugins/internal/pytext"
)

// The 13a tokenizer and the field split, fused: sacrebleu's four re.sub
// passes only ever insert spaces, so the fields of their output are
// substrings of their input, and which characters stand alone can be
// decided from each one's neighbours in the input:
//
//   - rule 1 sets apart every character of its class (ASCII punctuation but
//     ' , - .);
//   - rule 4 sets apart a '-' right after a digit (nothing is ever inserted
//     between a digit and a '-', so "right after" is the same before and
//     after the other rules);
//   - rules 2 and 3 decide the '.' and ',' characters, run by run. Rule 2
//     matches the first of a run when the character before it is not a
//     digit, and then every other one (a match consumes the character it
//     spaces out, so the next one has no free left neighbour); its matches
//     thus alternate, which leaves no two characters of the run adjacent
//     once it has run. Rule 3 then matches every '.' or ',' followed by a
//     non-digit, which is every one but the last of the run (a space
//     follows each), and the last when a non-digit follows the run. A
//     character either rule matches stands alone. So the one that stays in
//     a field is the last of a run that rule 2 left alone and that a digit
//     follows: "3.5" stays whole, "a..5" is "a", ".", ".5".
//
// TestFused13aMatchesRules holds this to the pass-by-pass rewrite (itself
// held to Python's re by TestTokenizersAgainstPythonRegex) on dense random
// strings and real text.

// Byte classes for the fused scan.
const (
	cWord  = iota // part of a field
	cSpace        // ASCII whitespace for str.split()
	cAlone        // rule 1: stands alone
	cDot          // '.' or ','
	cDash         // '-'
	cHigh         // a non-ASCII byte: decoded, it may be Unicode whitespace
)

var class13a = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = cHigh
		case pytext.IsSpaceASCII(byte(c)):
			t[c] = cSpace
		case c == '.' || c == ',':
			t[c] = cDot
		case c == '-':
			t[c] = cDash
		case rule1[c]:
			t[c] = cAlone
		}
	}
	return t
}()

// appendFields13a appends to dst the start and end offsets of each field of
// sacrebleu's 13a tokenization of line, taken after its entity and
// line-break replacements (preprocess13a): the fields of
// pytext.Fields(string(rules(line, true))), which are substrings of line.
func appendFields13a(dst []int32, line string) []int32 {
	start := -1 // start of the field being scanned, or -1
	flush := func(end int) {
		if start >= 0 {
			dst = append(dst, int32(start), int32(end))
			start = -1
		}
	}
	emit := func(i int) { dst = append(dst, int32(i), int32(i+1)) }
	n := len(line)
	for i := 0; i < n; {
		c := line[i]
		switch class13a[c] {
		case cWord:
			if start < 0 {
				start = i
			}
			i = wordEnd(line, i+1)
		case cSpace:
			flush(i)
			i++
		case cAlone:
			flush(i)
			emit(i)
			i++
		case cDash:
			if i > 0 && isDigit(line[i-1]) {
				flush(i)
				emit(i)
			} else if start < 0 {
				start = i
			}
			i++
		case cDot:
			j := i + 1
			for j < n && class13a[line[j]] == cDot {
				j++
			}
			digitBefore := i > 0 && isDigit(line[i-1])
			digitAfter := j < n && isDigit(line[j])
			// Rule 2 matches run element k when k is even and no digit is
			// before the run, or k is odd and one is.
			last := j - 1
			lastMatched := ((last-i)%2 == 0) != digitBefore
			for k := i; k < j; k++ {
				if k == last && !lastMatched && digitAfter {
					if start < 0 {
						start = k // joins the digits after it
					}
					continue
				}
				flush(k)
				emit(k)
			}
			i = j
		case cHigh:
			r, size := utf8.DecodeRuneInString(line[i:])
			if pytext.IsSpace(r) {
				flush(i)
			} else if start < 0 {
				start = i
			}
			i += size
		}
	}
	flush(n)
	return dst
}

// wordEnd returns the end of the run of cWord bytes ([0-9A-Za-z']) that
// goes on at line[i], eight bytes at a time: a byte-by-byte loop pays a
// mispredicted exit per word, at every word's own length.
func wordEnd(line string, i int) int {
	for ; i+8 <= len(line); i += 8 {
		if m := nonWord(le64(line[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(line) && class13a[line[i]] == cWord {
		i++
	}
	return i
}

// nonWord flags (the high bit of each byte) the bytes of w, eight bytes
// little-endian, that are not cWord: ASCII whitespace, rule 1's class, '.',
// ',', '-' and non-ASCII bytes. Each byte is range-checked on its own 7 low
// bits (SWAR): for x < 0x80, x + 0x80 - lo has its high bit set exactly
// when x >= lo, and x + 0x7f - hi exactly when x > hi, with no carry into
// the next byte.
func nonWord(w uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	x := w &^ highs
	in := func(lo, hi uint64) uint64 { return (x + (0x80-lo)*ones) &^ (x + (0x7f-hi)*ones) }
	return (w | in(0x09, 0x0d) | in(0x1c, 0x26) | in(0x28, 0x2f) | in(0x3a, 0x40) | in(0x5b, 0x60) | in(0x7b, 0x7e)) & highs
}

// le64 is the little-endian word at the start of s (one load).
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
