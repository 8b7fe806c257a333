// Package jsonscan walks JSON documents without decoding them: the members
// of an object and the elements of an array come back as raw bytes, each
// validated on the way exactly as encoding/json validates a document before
// decoding it. Plugins that read one known shape per record (a task's JSONL
// line, a model server's answer) use it instead of encoding/json's reflective
// decoder, which scans every document twice (checkValid, then decode) and
// allocates for every value, wanted or not; they decode the values they want
// with package jsonstr or strconv and leave the rest untouched.
//
// What is valid is encoding/json's rule: RFC 8259 JSON, any bytes from 0x20
// up inside strings (invalid UTF-8 included: decoding replaces it), nesting
// up to 10,000 levels.
package jsonscan

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hayloft/hayloft/sdk/jsonstr"
)

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// ErrSyntax is what every validation error wraps.
var ErrSyntax = errors.New("invalid JSON")

func syntaxf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrSyntax}, args...)...)
}

// Kind is the kind of a raw value, from its first byte.
type Kind byte

const (
	KindInvalid Kind = iota
	KindNull
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

// KindOf is the kind of raw, a value as Object and Array hand out.
func KindOf(raw []byte) Kind {
	if len(raw) == 0 {
		return KindInvalid
	}
	switch c := raw[0]; {
	case c == 'n':
		return KindNull
	case c == 't' || c == 'f':
		return KindBool
	case c == '"':
		return KindString
	case c == '[':
		return KindArray
	case c == '{':
		return KindObject
	case c == '-' || '0' <= c && c <= '9':
		return KindNumber
	}
	return KindInvalid
}

// Value returns the length of the JSON value at the start of b (no leading
// whitespace), validated.
func Value(b []byte) (int, error) {
	return value(b, 0, 1)
}

// Valid reports whether b is one JSON value with only whitespace around it,
// as encoding/json.Valid does.
func Valid(b []byte) bool {
	i := ws(b, 0)
	n, err := value(b, i, 1)
	return err == nil && ws(b, n) == len(b)
}

// Object calls fn for each member of the object that is b (whitespace
// around it allowed), in order, duplicates included: key decoded as
// encoding/json decodes keys, value raw. Both alias b or a scratch buffer
// and are valid only during the call. The whole of b is validated, and an
// error may come after fn has seen members: on any error the caller drops
// what fn made of them. fn's own error stops the walk and is returned.
func Object(b []byte, fn func(key, value []byte) error) error {
	return object(b, func(_, key, value []byte) error { return fn(key, value) })
}

// object is Object handing fn each key as written too (Members).
func object(b []byte, fn func(rawKey, key, value []byte) error) error {
	i := ws(b, 0)
	if i >= len(b) || b[i] != '{' {
		if n, err := value(b, i, 1); err != nil || ws(b, n) != len(b) {
			return syntaxf("not a JSON value")
		}
		return syntaxf("not an object")
	}
	end, err := members(b, i, 1, fn)
	if err != nil {
		return err
	}
	if ws(b, end) != len(b) {
		return syntaxf("data after the object at offset %d", end)
	}
	return nil
}

// Array calls fn for each element of the array that is b (whitespace around
// it allowed), as Object does for members.
func Array(b []byte, fn func(value []byte) error) error {
	i := ws(b, 0)
	if i >= len(b) || b[i] != '[' {
		return syntaxf("not an array")
	}
	end, err := elements(b, i, 1, fn)
	if err != nil {
		return err
	}
	if ws(b, end) != len(b) {
		return syntaxf("data after the array at offset %d", end)
	}
	return nil
}

func ws(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value returns the end of the value starting at b[i].
func value(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, syntaxf("unexpected end of input")
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := str(b, i)
		return end, err
	case c == '{':
		return members(b, i, depth, nil)
	case c == '[':
		return elements(b, i, depth, nil)
	case c == '-' || '0' <= c && c <= '9':
		return number(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, syntaxf("unexpected %q at offset %d", b[i], i)
}

// members scans the object at b[i] ('{'), handing each member to fn when
// fn is set (its key as written, quotes included, then decoded), and
// returns the object's end.
func members(b []byte, i, depth int, fn func(rawKey, key, value []byte) error) (int, error) {
	if depth > maxDepth {
		return i, syntaxf("exceeded max depth")
	}
	i = ws(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	var scratch []byte
	for {
		if i >= len(b) || b[i] != '"' {
			return i, syntaxf("want a key at offset %d", i)
		}
		kstart := i
		kend, plain, err := str(b, i)
		if err != nil {
			return kend, err
		}
		key := b[i+1 : kend-1]
		if !plain && fn != nil {
			// Escapes or bytes past ASCII: decode as encoding/json would
			// (invalid UTF-8 becomes U+FFFD). str has validated it.
			scratch, _ = jsonstr.Append(scratch[:0], key)
			key = scratch
		}
		i = ws(b, kend)
		if i >= len(b) || b[i] != ':' {
			return i, syntaxf("want ':' at offset %d", i)
		}
		vstart := ws(b, i+1)
		vend, err := value(b, vstart, depth+1)
		if err != nil {
			if depth == 1 {
				// Name the member at the top, where a reader looks.
				err = fmt.Errorf("%w (in %q)", err, key)
			}
			return vend, err
		}
		if fn != nil {
			if err := fn(b[kstart:kend], key, b[vstart:vend]); err != nil {
				return vend, err
			}
		}
		var done bool
		if i, done, err = next(b, vend, '}'); done || err != nil {
			return i, err
		}
	}
}

// elements is members for the array at b[i] ('[').
func elements(b []byte, i, depth int, fn func(value []byte) error) (int, error) {
	if depth > maxDepth {
		return i, syntaxf("exceeded max depth")
	}
	i = ws(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		vend, err := value(b, i, depth+1)
		if err != nil {
			return vend, err
		}
		if fn != nil {
			if err := fn(b[i:vend]); err != nil {
				return vend, err
			}
		}
		var done bool
		if i, done, err = next(b, vend, ']'); done || err != nil {
			return i, err
		}
	}
}

func literal(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, syntaxf("unexpected %q at offset %d", b[i], i)
	}
	return i + len(lit), nil
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// number returns the end of -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return i, syntaxf("bad number at offset %d", start)
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, syntaxf("bad number at offset %d", start)
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, syntaxf("bad number at offset %d", start)
		}
		i = j
	}
	return i, nil
}

// stop marks the bytes a string scan must look at: the closing quote, an
// escape, and the control characters JSON forbids in strings. Bytes past
// ASCII are text to the scan; str notes them for plain as it goes.
var stop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// str returns the end of the string at b[i] ('"'); plain: it has neither
// escapes nor bytes past ASCII, so its inside is its decoded text.
func str(b []byte, i int) (end int, plain bool, err error) {
	start := i
	plain = true
	i++
	for i < len(b) {
		// Most of a document is the inside of strings: skip the text a
		// word at a time, then byte by byte up to the byte that stops.
		var high uint64
		for {
			var h uint64
			i, h = skipText(b, i)
			high |= h
			end := min(i+8, len(b))
			for i < end && !stop[b[i]] {
				high |= uint64(b[i])
				i++
			}
			if i < end || end == len(b) {
				break // at a stop byte, or at the end
			}
			// The word's flag was a false alarm: go on a word at a time.
		}
		if high&0x8080808080808080 != 0 {
			plain = false
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, plain, nil
		case c == '\\':
			plain = false
			if i+1 >= len(b) {
				return i, false, syntaxf("unterminated string at offset %d", start)
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if jsonstr.Hex4(b[i+2:]) < 0 {
					return i, false, syntaxf("bad escape at offset %d", i)
				}
				i += 6
			default:
				return i, false, syntaxf("bad escape at offset %d", i)
			}
		default: // c < 0x20
			return i, false, syntaxf("control character in string at offset %d", i)
		}
	}
	return i, false, syntaxf("unterminated string at offset %d", start)
}

// skipText returns the index of the first 8-byte word at or after b[i]
// that may hold a byte stop marks ('"', '\\' or one below 0x20), a word at
// a time (SWAR), and the high bits of the bytes it skipped: for each byte
// x, x^'"' and x^'\\' are zero and x-0x20 borrows exactly for those bytes;
// the usual has-zero-byte test flags them (and may flag more after a true
// one, which only ends the skip early).
func skipText(b []byte, i int) (int, uint64) {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	var high uint64
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		q := w ^ ('"' * ones)
		bs := w ^ ('\\' * ones)
		if ((q-ones)&^q|(bs-ones)&^bs|(w-0x20*ones)&^w)&highs != 0 {
			return i, high
		}
		high |= w
	}
	return i, high
}

// String decodes raw, a string value, as encoding/json decodes it into a Go
// string (one allocation; none for "").
func String(raw []byte) (string, error) {
	if len(raw) == 2 && raw[0] == '"' && raw[1] == '"' {
		return "", nil
	}
	return jsonstr.Decode(raw)
}

// Int is raw, a number value, as encoding/json decodes it into an int64:
// ok only for an integer literal in range (encoding/json refuses 1.0 and
// 1e3 for an integer field).
func Int(raw []byte) (n int64, ok bool) {
	neg := len(raw) > 0 && raw[0] == '-'
	d := raw
	if neg {
		d = raw[1:]
	}
	if len(d) == 0 || len(d) > 19 {
		return 0, false // 19 digits hold every int64; more may not
	}
	var u uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return -int64(u), true
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}

// next reads what follows a member or element ending at b[end]: a comma
// (i is then at the next one) or the closing byte (done, i past it).
func next(b []byte, end int, closing byte) (i int, done bool, err error) {
	i = ws(b, end)
	switch {
	case i >= len(b):
		return i, false, syntaxf("unexpected end of input")
	case b[i] == ',':
		return ws(b, i+1), false, nil
	case b[i] == closing:
		return i + 1, true, nil
	}
	return i, false, syntaxf("want ',' or %q at offset %d", closing, i)
}
