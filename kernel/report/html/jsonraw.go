package html

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/hayloft/hayloft/sdk/jsonstr"
)

// The sample blocks of a report are JSON written by hand: a journaled
// request is already JSON, so its messages are copied from it as they are,
// cut where a message is too long, instead of decoded into strings and
// encoded again (which is most of the time a 200,000-sample report takes).
// The values the page reads are the ones encoding/json would give; the
// tests compare the two.

// rawMessage is one message of a journaled request: the bodies of its role
// and content string literals, still escaped.
type rawMessage struct {
	role, content []byte
}

// parseRequest finds the messages and params of a journaled request,
// {"messages": [{"role": …, "content": …}, …], "params": …}, without
// decoding their strings. ok is false for anything else (a key spelled with
// another case or an escape, a null where a string belongs): the caller then
// decodes the request with encoding/json, which accepts those.
func parseRequest(b []byte) (msgs []rawMessage, params []byte, ok bool) {
	s := scanner{b: b}
	if !s.expect('{') {
		return nil, nil, false
	}
	if s.peek() == '}' {
		return nil, nil, true
	}
	for {
		key, ok := s.key()
		if !ok {
			return nil, nil, false
		}
		switch {
		case string(key) == "messages":
			if msgs, ok = s.messages(); !ok {
				return nil, nil, false
			}
		case string(key) == "params":
			start := s.skipSpace()
			if !s.skipValue() {
				return nil, nil, false
			}
			params = b[start:s.i]
		case bytes.EqualFold(key, []byte("messages")) || bytes.EqualFold(key, []byte("params")):
			return nil, nil, false
		default:
			if !s.skipValue() {
				return nil, nil, false
			}
		}
		switch s.next() {
		case ',':
		case '}':
			return msgs, params, s.skipSpace() == len(b)
		default:
			return nil, nil, false
		}
	}
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) skipSpace() int {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return s.i
		}
	}
	return s.i
}

func (s *scanner) peek() byte {
	if s.skipSpace() == len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) next() byte {
	c := s.peek()
	if c != 0 {
		s.i++
	}
	return c
}

func (s *scanner) expect(c byte) bool { return s.next() == c }

// str reads a string literal and returns its body, still escaped.
func (s *scanner) str() ([]byte, bool) {
	if !s.expect('"') {
		return nil, false
	}
	start := s.i
	for {
		j := bytes.IndexByte(s.b[s.i:], '"')
		if j < 0 {
			return nil, false
		}
		end := s.i + j
		s.i = end + 1
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		k := end
		for k > start && s.b[k-1] == '\\' {
			k--
		}
		if (end-k)%2 == 0 {
			return s.b[start:end], true
		}
	}
}

// key reads an object key and its colon; a key holding an escape is not
// one parseRequest knows.
func (s *scanner) key() ([]byte, bool) {
	k, ok := s.str()
	if !ok || bytes.IndexByte(k, '\\') >= 0 || !s.expect(':') {
		return nil, false
	}
	return k, true
}

func (s *scanner) skipValue() bool {
	switch c := s.peek(); c {
	case '"':
		_, ok := s.str()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	case 0:
		return false
	default:
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}

func (s *scanner) messages() ([]rawMessage, bool) {
	if s.peek() == 'n' {
		if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
			s.i += 4
			return nil, true
		}
		return nil, false
	}
	if !s.expect('[') {
		return nil, false
	}
	msgs := []rawMessage{}
	if s.peek() == ']' {
		s.i++
		return msgs, true
	}
	for {
		if !s.expect('{') {
			return nil, false
		}
		var m rawMessage
		if s.peek() != '}' {
			for {
				key, ok := s.key()
				if !ok {
					return nil, false
				}
				switch {
				case string(key) == "role":
					if m.role, ok = s.str(); !ok {
						return nil, false
					}
				case string(key) == "content":
					if m.content, ok = s.str(); !ok {
						return nil, false
					}
				case bytes.EqualFold(key, []byte("role")) || bytes.EqualFold(key, []byte("content")):
					return nil, false
				default:
					if !s.skipValue() {
						return nil, false
					}
				}
				if s.peek() == ',' {
					s.i++
					continue
				}
				break
			}
		}
		if !s.expect('}') {
			return nil, false
		}
		msgs = append(msgs, m)
		switch s.next() {
		case ',':
		case ']':
			return msgs, true
		default:
			return nil, false
		}
	}
}

// rawRun is a stretch of an escaped string body: one escape, or the text
// up to the next one.
type rawRun struct {
	start, end int  // in body
	first      int  // index of its first character in the decoded string
	ascii      bool // text of one byte per character
}

// rawRuns splits an escaped string body into runs, appended to runs, and
// counts the characters it decodes to, as encoding/json decodes it (a
// surrogate pair is one character, a lone surrogate or an invalid byte one
// U+FFFD).
func rawRuns(body []byte, runs []rawRun) (int, []rawRun) {
	n, i := 0, 0
	for i < len(body) {
		if body[i] != '\\' {
			// A run without escapes, counted at once.
			end := len(body)
			if j := bytes.IndexByte(body[i:], '\\'); j >= 0 {
				end = i + j
			}
			c := utf8.RuneCount(body[i:end])
			runs = append(runs, rawRun{start: i, end: end, first: n, ascii: c == end-i})
			n += c
			i = end
			continue
		}
		w := 2
		if i+6 <= len(body) && body[i+1] == 'u' {
			w = 6
			r := jsonstr.Hex4(body[i+2 : i+6])
			if j := i + 6; r >= 0xD800 && r < 0xDC00 && j+6 <= len(body) && body[j] == '\\' && body[j+1] == 'u' {
				if r2 := jsonstr.Hex4(body[j+2 : j+6]); r2 >= 0xDC00 && r2 < 0xE000 {
					w = 12
				}
			}
		}
		runs = append(runs, rawRun{start: i, end: i + w, first: n})
		n++
		i += w
	}
	return n, runs
}

// rawOffset is the byte offset in body of character k of n, given body's
// runs (rawRuns).
func rawOffset(body []byte, runs []rawRun, n, k int) int {
	if k >= n {
		return len(body)
	}
	// The last run starting at or before character k holds it.
	lo, hi := 0, len(runs)
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; runs[mid].first <= k {
			lo = mid
		} else {
			hi = mid
		}
	}
	r := runs[lo]
	if r.ascii {
		return r.start + k - r.first
	}
	i := r.start
	for c := r.first; c < k && i < r.end; c++ {
		_, size := utf8.DecodeRune(body[i:r.end])
		i += size
	}
	return i
}

// appendElided appends body (an escaped string body) as elide would cut
// its decoded string, still escaped, and how many characters it left out.
func appendElided(b, body []byte, max int) ([]byte, int) {
	if max <= 0 || len(body) <= max {
		return append(b, body...), 0
	}
	var buf [64]rawRun
	n, runs := rawRuns(body, buf[:0])
	if n <= max {
		return append(b, body...), 0
	}
	half := max / 2
	left := n - 2*half
	b = append(b, body[:rawOffset(body, runs, n, half)]...)
	b = appendElisionMarker(b, left)
	return append(b, body[rawOffset(body, runs, n, n-half):]...), left
}

// appendElisionMarker appends elisionMarker(left) as a string body, as
// appendStringBody escapes it, without building the string.
func appendElisionMarker(b []byte, left int) []byte {
	b = appendStringBody(b, elisionHead)
	b = strconv.AppendInt(b, int64(left), 10)
	return appendStringBody(b, elisionTail)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendStringBody(b, s)
	return append(b, '"')
}

func appendStringBody(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}

// appendFloat appends f as encoding/json writes a float64; NaN and
// infinities, which JSON cannot hold, as null.
func appendFloat(b []byte, f float64) []byte {
	if out, ok := jsonstr.AppendFloat(b, f); ok {
		return out
	}
	return append(b, "null"...)
}
