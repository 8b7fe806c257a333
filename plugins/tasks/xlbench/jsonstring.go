package xlbench

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeString decodes a JSON string literal, quotes included, exactly as
// encoding/json decodes it into a string (escapes, surrogate pairs, U+FFFD
// for a lone surrogate or a byte that is not UTF-8), into a string
// allocated once at its decoded length. encoding/json decodes into a
// scratch buffer and copies that into the string: for a document of a
// megabyte, a megabyte of garbage per document, which the collector lets
// pile up to the size of everything live before it runs.
func decodeString(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", fmt.Errorf("not a JSON string")
	}
	body := raw[1 : len(raw)-1]
	n, err := unquote(body, nil)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(n)
	unquote(body, &b)
	return b.String(), nil
}

var replacement = []byte(string(utf8.RuneError))

// unquote walks the inside of a JSON string literal, writes its decoded
// bytes to b (none when b is nil: a count) and returns their number.
func unquote(s []byte, b *strings.Builder) (int, error) {
	var enc [utf8.UTFMax]byte
	n := 0
	emit := func(p []byte) {
		n += len(p)
		if b != nil {
			b.Write(p)
		}
	}
	start := 0 // of the run of plain text not yet emitted
	flush := func(i int) {
		if i > start {
			emit(s[start:i])
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			flush(i)
			if i+1 >= len(s) {
				return 0, fmt.Errorf("string ends inside an escape")
			}
			var r rune
			size := 2
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				r = rune(e)
			case 'b':
				r = '\b'
			case 'f':
				r = '\f'
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			case 'u':
				r = hex4(s[i+2:])
				if r < 0 {
					return 0, fmt.Errorf(`invalid \u escape at byte %d`, i+1)
				}
				size = 6
				if utf16.IsSurrogate(r) {
					// A pair decodes to one rune; a lone half is U+FFFD
					// and what follows it is read on its own.
					if s2 := s[i+6:]; len(s2) >= 2 && s2[0] == '\\' && s2[1] == 'u' {
						if dec := utf16.DecodeRune(r, hex4(s2[2:])); dec != utf8.RuneError {
							r, size = dec, 12
							break
						}
					}
					r = utf8.RuneError
				}
			default:
				return 0, fmt.Errorf("invalid escape %q at byte %d", s[i:i+2], i+1)
			}
			emit(enc[:utf8.EncodeRune(enc[:], r)])
			i += size
			start = i
		case c == '"':
			return 0, fmt.Errorf("unescaped quote at byte %d", i+1)
		case c < ' ':
			return 0, fmt.Errorf("control character %q in string at byte %d", c, i+1)
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				flush(i)
				emit(replacement)
				start = i + 1
			}
			i += size
		}
	}
	flush(len(s))
	return n, nil
}

// hex4 is the value of four hex digits at the start of s, or -1.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
