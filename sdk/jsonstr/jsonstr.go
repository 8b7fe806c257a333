// Package jsonstr decodes JSON string literals exactly as encoding/json
// decodes them into a Go string, without its scratch buffer: the readers
// of long contexts (a task's inline documents, `hayloft score` lines, the
// report's journaled requests) decode megabytes of text per record and
// cannot afford a second copy of each.
//
// The rules are encoding/json's: the escapes of RFC 8259, a \u surrogate
// pair joined into one rune, a lone surrogate and every byte that is not
// UTF-8 replaced by U+FFFD.
package jsonstr

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Decode decodes a JSON string literal, quotes included, into a string
// allocated once at its decoded length.
func Decode(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", fmt.Errorf("not a JSON string")
	}
	body := raw[1 : len(raw)-1]
	_, n, err := walk(nil, body, false)
	if err != nil {
		return "", err
	}
	b, _, _ := walk(make([]byte, 0, n), body, true)
	return unsafe.String(unsafe.SliceData(b), len(b)), nil
}

// Append appends the decoded inside of a JSON string (body: the bytes
// between the quotes) to dst.
func Append(dst, body []byte) ([]byte, error) {
	b, _, err := walk(dst, body, true)
	return b, err
}

var replacement = []byte(string(utf8.RuneError))

// walk decodes body, appending to dst when write is set and only counting
// otherwise; n is the decoded length. One walker serves both so that the
// count that sizes an allocation and the bytes written into it cannot
// disagree.
func walk(dst, s []byte, write bool) (out []byte, n int, err error) {
	var enc [utf8.UTFMax]byte
	emit := func(p []byte) {
		n += len(p)
		if write {
			dst = append(dst, p...)
		}
	}
	start := 0 // of the run of plain text not yet emitted
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if i > start {
				emit(s[start:i])
			}
			if i+1 >= len(s) {
				return dst, 0, fmt.Errorf("string ends inside an escape")
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
				r = Hex4(s[i+2:])
				if r < 0 {
					return dst, 0, fmt.Errorf(`invalid \u escape at byte %d`, i+1)
				}
				size = 6
				if utf16.IsSurrogate(r) {
					// A pair decodes to one rune; a lone half is U+FFFD
					// and what follows it is read on its own.
					if s2 := s[i+6:]; len(s2) >= 2 && s2[0] == '\\' && s2[1] == 'u' {
						if dec := utf16.DecodeRune(r, Hex4(s2[2:])); dec != utf8.RuneError {
							r, size = dec, 12
							break
						}
					}
					r = utf8.RuneError
				}
			default:
				return dst, 0, fmt.Errorf("invalid escape %q at byte %d", s[i:i+2], i+1)
			}
			emit(enc[:utf8.EncodeRune(enc[:], r)])
			i += size
			start = i
		case c == '"':
			return dst, 0, fmt.Errorf("unescaped quote at byte %d", i+1)
		case c < ' ':
			return dst, 0, fmt.Errorf("control character %q in string at byte %d", c, i+1)
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				if i > start {
					emit(s[start:i])
				}
				emit(replacement)
				start = i + 1
			}
			i += size
		}
	}
	if len(s) > start {
		emit(s[start:])
	}
	return dst, n, nil
}

// Hex4 is the value of the four hex digits at the start of s, or -1.
func Hex4(s []byte) rune {
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
