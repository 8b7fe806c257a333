package bleu

import (
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
			i++
			for i < n && class13a[line[i]] == cWord {
				i++
			}
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
