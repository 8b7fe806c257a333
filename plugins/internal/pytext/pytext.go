// Package pytext reproduces the few Python string operations that the
// reference implementations of our metrics and benchmarks rely on
// (str.split, str.strip, str.lower, str.isspace), where Go's standard
// library differs at the edges: Python splits on the ASCII information
// separators U+001C–U+001F, and lowercases İ and a word-final Σ by Unicode's
// special casing. Numbers that must match sacrebleu, rouge and the
// Counting-Stars generator depend on those edges.
package pytext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsSpace reports whether r is whitespace for Python's str.split() and
// str.strip(); unlike unicode.IsSpace it includes U+001C..U+001F.
func IsSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0,
		0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return 0x2000 <= r && r <= 0x200a
}

// Fields is Python's str.split() with no argument. ASCII bytes are
// classified without decoding, which is most text.
func Fields(s string) []string {
	// strings.Fields splits on the same characters except U+001C..U+001F,
	// so it serves whenever those are absent.
	if !strings.ContainsFunc(s, func(r rune) bool { return 0x1c <= r && r <= 0x1f }) {
		return strings.Fields(s)
	}
	n := 0
	in := false
	for i := 0; i < len(s); {
		sp, size := spaceAt(s, i)
		if !sp && !in {
			n++
		}
		in = !sp
		i += size
	}
	out := make([]string, 0, n)
	start := -1
	for i := 0; i < len(s); {
		sp, size := spaceAt(s, i)
		if sp {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
		i += size
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// asciiSpace marks the ASCII characters Python's str.split() splits on.
var asciiSpace = [128]bool{' ': true, '\t': true, '\n': true, '\v': true, '\f': true, '\r': true, 0x1c: true, 0x1d: true, 0x1e: true, 0x1f: true}

// IsSpaceASCII reports whether the ASCII byte c (c < utf8.RuneSelf) is one
// str.split() splits on, for a caller scanning fields byte by byte.
func IsSpaceASCII(c byte) bool { return asciiSpace[c&0x7f] }

func spaceAt(s string, i int) (bool, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiSpace[c], 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	return IsSpace(r), size
}

// Strip is Python's str.strip() with no argument.
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// RStrip is Python's str.rstrip() with no argument.
func RStrip(s string) string {
	// Most text ends in an ASCII character that is no space: nothing to
	// strip, and no rune to decode from the end.
	if n := len(s); n > 0 && s[n-1] < utf8.RuneSelf && !asciiSpace[s[n-1]] {
		return s
	}
	return strings.TrimRightFunc(s, IsSpace)
}

// Lower is Python's str.lower(): Go's per-rune mapping plus the two rules
// Python adds from SpecialCasing: İ becomes "i̇", and a capital sigma at the
// end of a word becomes final sigma ς.
func Lower(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch r {
		case 'İ':
			b.WriteString("i\u0307")
		case 'Σ':
			if finalSigma(s, i) {
				b.WriteRune('ς')
			} else {
				b.WriteRune('σ')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma is Unicode's Final_Sigma condition as CPython applies it: a
// cased letter before (skipping case-ignorable characters) and none after.
func finalSigma(s string, i int) bool {
	before := false
	for j := i; j > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:j])
		j -= size
		if caseIgnorable(r) {
			continue
		}
		before = cased(r)
		break
	}
	if !before {
		return false
	}
	for j := i + len("Σ"); j < len(s); {
		r, size := utf8.DecodeRuneInString(s[j:])
		j += size
		if caseIgnorable(r) {
			continue
		}
		return !cased(r)
	}
	return true
}

func cased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', '^', '`', 0xb7, 0x2019, 0x2024, 0x2027:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// NextField returns the bounds of the first field of s at or after byte i,
// as Python's str.split() finds them, or start == end == len(s) when there
// is none. It lets a caller walk the fields of a buffer without building
// a []string.
func NextField(s []byte, i int) (start, end int) {
	// The ASCII test is inline: this runs once per byte of every segment.
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if !asciiSpace[c] {
				break
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if !IsSpace(r) {
			break
		}
		i += size
	}
	start = i
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiSpace[c] {
				break
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if IsSpace(r) {
			break
		}
		i += size
	}
	return start, i
}
