package scoreio

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
	"unsafe"

	"github.com/hayloft/hayloft/sdk/jsonstr"
)

// The input is scanned by hand rather than through encoding/json's Decoder:
// splitting a line into its members in order, validating it on the way, is
// most of what `hayloft score` does per line besides scoring, and the
// Decoder's token API costs several times the scan. Values are decoded with
// encoding/json whenever they are not plain strings, so what they mean never
// differs from it.

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// field is one top-level member of an object, in input order: its decoded
// key, its key as it will be written, and its raw value.
type field struct {
	key     string
	keyOut  []byte
	value   []byte
	compact bool // value has no whitespace to drop
}

type scanner struct {
	b      []byte
	i      int
	spaced bool // ws skipped something: a value scanned since it was cleared is not compact
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON: "+format, args...)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
			s.spaced = true
		default:
			return
		}
	}
}

// parseObject splits one JSON object into its members, keeping their order.
// Duplicate keys are errors.
func parseObject(line []byte) ([]field, error) { return parseObjectInto(nil, line) }

// parseObjectInto is parseObject appending the members to dst.
func parseObjectInto(dst []field, line []byte) ([]field, error) {
	s := &scanner{b: line}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return nil, errors.New("want a JSON object")
	}
	fields, err := s.members(dst)
	if err != nil {
		return nil, err
	}
	s.ws()
	if s.i != len(s.b) {
		return nil, errors.New("invalid JSON: data after the object")
	}
	return fields, nil
}

// members scans the object at s.i, appending its members to fields.
func (s *scanner) members(fields []field) ([]field, error) {
	s.i++ // '{'
	first := len(fields)
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return fields, nil
	}
	for {
		s.ws()
		start := s.i
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return nil, s.errorf("want a key at offset %d", s.i)
		}
		if err := s.str(); err != nil {
			return nil, err
		}
		keyRaw := s.b[start:s.i]
		key, err := decodeString(keyRaw)
		if err != nil {
			return nil, s.errorf("key at offset %d: %v", start, err)
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return nil, s.errorf("want ':' after %q", key)
		}
		s.i++
		s.ws()
		vstart := s.i
		s.spaced = false
		if err := s.value(1); err != nil {
			return nil, fmt.Errorf("%w (in %q)", err, key)
		}
		compact := !s.spaced
		for _, f := range fields[first:] {
			if f.key == key {
				return nil, fmt.Errorf("%s: duplicate field", key)
			}
		}
		fields = append(fields, field{key: key, keyOut: keyOut(keyRaw, key), value: s.b[vstart:s.i], compact: compact})
		s.ws()
		if s.i >= len(s.b) {
			return nil, s.errorf("unexpected end of input")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return fields, nil
		default:
			return nil, s.errorf("want ',' or '}' at offset %d", s.i)
		}
	}
}

// value skips one JSON value, validating it.
func (s *scanner) value(depth int) error {
	if depth > maxDepth {
		return s.errorf("exceeded max depth")
	}
	if s.i >= len(s.b) {
		return s.errorf("unexpected end of input")
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str()
	case c == '{':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return nil
		}
		for {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != '"' {
				return s.errorf("want a key at offset %d", s.i)
			}
			if err := s.str(); err != nil {
				return err
			}
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return s.errorf("want ':' at offset %d", s.i)
			}
			s.i++
			s.ws()
			if err := s.value(depth + 1); err != nil {
				return err
			}
			s.ws()
			if s.i >= len(s.b) {
				return s.errorf("unexpected end of input")
			}
			if s.b[s.i] == '}' {
				s.i++
				return nil
			}
			if s.b[s.i] != ',' {
				return s.errorf("want ',' or '}' at offset %d", s.i)
			}
			s.i++
		}
	case c == '[':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return nil
		}
		for {
			s.ws()
			if err := s.value(depth + 1); err != nil {
				return err
			}
			s.ws()
			if s.i >= len(s.b) {
				return s.errorf("unexpected end of input")
			}
			if s.b[s.i] == ']' {
				s.i++
				return nil
			}
			if s.b[s.i] != ',' {
				return s.errorf("want ',' or ']' at offset %d", s.i)
			}
			s.i++
		}
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.errorf("unexpected %q at offset %d", s.b[s.i], s.i)
}

func (s *scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return s.errorf("unexpected %q at offset %d", s.b[s.i], s.i)
	}
	s.i += len(lit)
	return nil
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// number skips -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	start := s.i
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if s.digits() == 0 {
		return s.errorf("bad number at offset %d", start)
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return s.errorf("bad number at offset %d", start)
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return s.errorf("bad number at offset %d", start)
		}
	}
	return nil
}

// str skips a string starting at its opening quote.
func (s *scanner) str() error {
	start := s.i
	s.i++
	for s.i < len(s.b) {
		// Most of a line is the inside of strings: skip the plain bytes
		// eight at a time, then one by one up to the byte that stops.
		for {
			s.i = skipPlain(s.b, s.i)
			end := min(s.i+8, len(s.b))
			for s.i < end && !strStop[s.b[s.i]] {
				s.i++
			}
			if s.i < end || end == len(s.b) {
				break // at a stop byte, or at the end
			}
			// The word's flag was a false alarm: go on a word at a time.
		}
		if s.i >= len(s.b) {
			break
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return nil
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return s.errorf("unterminated string at offset %d", start)
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return s.errorf("bad escape at offset %d", s.i)
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return s.errorf("bad escape at offset %d", s.i)
					}
				}
				s.i += 6
			default:
				return s.errorf("bad escape at offset %d", s.i)
			}
		case c < 0x20:
			return s.errorf("control character in string at offset %d", s.i)
		default:
			s.i++
		}
	}
	return s.errorf("unterminated string at offset %d", start)
}

// skipPlain returns the index of the first 8-byte word at or after b[i]
// that may hold a byte strStop marks ('"', '\\' or one below 0x20), a word
// at a time (SWAR): for each byte x, x^'"' and x^'\\' are zero and x-0x20
// borrows exactly for those bytes; the usual has-zero-byte test flags them
// (and may flag more, which only ends the skip early).
func skipPlain(b []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		q := w ^ ('"' * ones)
		bs := w ^ ('\\' * ones)
		if ((q-ones)&^q|(bs-ones)&^bs|(w-0x20*ones)&^w)&highs != 0 {
			return i
		}
	}
	return i
}

// strStop marks the bytes a string scan must look at: the closing quote,
// an escape, and the control characters JSON forbids in strings.
var strStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// decodeString decodes a validated JSON string (quotes included) as
// encoding/json does. Plain strings share the line's memory; strings with
// escapes or invalid UTF-8 (which encoding/json replaces by U+FFFD) are
// unquoted by encoding/json's rules (sdk/jsonstr).
func decodeString(raw []byte) (string, error) {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return unsafeString(inner), nil
	}
	if b, err := jsonstr.Append(make([]byte, 0, len(inner)+2*utf8.UTFMax), inner); err == nil {
		return unsafeString(b), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// keyOut is the key as json.Marshal writes it: the raw key when it holds
// only characters that encoder leaves alone, else re-encoded.
func keyOut(raw []byte, key string) []byte {
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c >= 0x7f || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(key)
			return b
		}
	}
	return raw
}

// appendCompact is json.Compact for a value already validated: the
// whitespace outside strings removed, everything else kept as it is.
// Strings are copied whole.
func appendCompact(dst, v []byte) []byte {
	if len(v) > 0 && v[0] == '"' {
		return append(dst, v...) // a string is all inside
	}
	if !hasSpace(v) {
		return append(dst, v...) // numbers, and what a plugin wrote compact
	}
	for i := 0; i < len(v); {
		switch c := v[i]; c {
		case '"':
			end := stringEnd(v, i)
			dst = append(dst, v[i:end]...)
			i = end
		case ' ', '\t', '\n', '\r':
			i++
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
}

// hasSpace reports whether v has a byte that may be whitespace to drop:
// any byte up to ' ' (inside a valid string only the space itself can be).
func hasSpace(v []byte) bool {
	for _, c := range v {
		if c <= ' ' {
			return true
		}
	}
	return false
}

// stringEnd returns the index just past the validated string that opens
// at v[i]: the first quote after it that is not escaped (preceded by an
// even number of backslashes).
func stringEnd(v []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(v[j:], '"')
		if k < 0 {
			return len(v) // not reached for validated input
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && v[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// unsafeString is b as a string without a copy. Every input line is a
// buffer of its own that nothing writes after it is read, so the strings
// decoded from it (predictions, references: most of its bytes) can share
// its memory instead of copying it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// stringList decodes a validated JSON list of strings; ok is false for
// anything else (other values), which the caller leaves to encoding/json.
func stringList(raw []byte) (list []string, ok bool) {
	s := &scanner{b: raw, i: 1}
	list = []string{}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		return list, true
	}
	for {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return nil, false
		}
		start := s.i
		if s.str() != nil {
			return nil, false
		}
		str, err := decodeString(s.b[start:s.i])
		if err != nil {
			return nil, false
		}
		list = append(list, str)
		s.ws()
		if s.i >= len(s.b) {
			return nil, false
		}
		switch s.b[s.i] {
		case ']':
			return list, true
		case ',':
			s.i++
		default:
			return nil, false
		}
	}
}
