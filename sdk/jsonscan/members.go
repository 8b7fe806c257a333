package jsonscan

import (
	"bytes"
	"encoding/binary"
)

// Member is one member of an object, as Members hands it out. Its slices
// alias the document (Key, for a key with escapes or bytes past ASCII, a
// scratch buffer) and are valid only during the call.
type Member struct {
	RawKey []byte // the key as written, quotes included
	Key    []byte // the key decoded as encoding/json decodes keys
	Value  []byte // the raw value, validated
	// Compact: Value has no whitespace outside its strings, so
	// AppendCompact would copy it unchanged.
	Compact bool
}

// Members is Object for callers that write members out again, as they came:
// each member also has its key as written and whether its value is
// compact. Errors are Object's. (A Member is handed over by value: a
// pointer given to fn would move it to the heap, once a call.)
func Members(b []byte, fn func(m Member) error) error {
	return object(b, func(rawKey, key, value []byte) error {
		return fn(Member{RawKey: rawKey, Key: key, Value: value, Compact: compact(value)})
	})
}

// compact reports whether the validated value v has no whitespace outside
// its strings. Only arrays and objects can: they are walked from string to
// string (a search for the closing quote), the bytes between looked at one
// by one.
func compact(v []byte) bool {
	if len(v) == 0 || v[0] != '[' && v[0] != '{' || !hasLow(v) {
		return true
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			i = stringEnd(v, i) - 1
		case c <= ' ':
			return false
		}
	}
	return true
}

// hasLow reports whether v has a byte up to ' ' (whitespace, if anywhere),
// eight bytes at a time: x - 0x21 borrows into the high bit for such a
// byte, and the lowest byte flagged is always a true one.
func hasLow(v []byte) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(v); i += 8 {
		w := binary.LittleEndian.Uint64(v[i:])
		if (w-0x21*ones)&^w&highs != 0 {
			return true
		}
	}
	for ; i < len(v); i++ {
		if v[i] <= ' ' {
			return true
		}
	}
	return false
}

// AppendCompact is json.Compact for a value already validated (by Value,
// Object, Array or Members): the whitespace outside strings removed,
// everything else kept as it is. Strings are copied whole.
func AppendCompact(dst, v []byte) []byte {
	if compact(v) {
		return append(dst, v...)
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

// Elements calls fn for each element of raw, an array that Value, Object,
// Array or Members has validated, without validating it again: strings are
// skipped by a search for their closing quote, arrays and objects by
// counting brackets outside strings. It is for a caller that looks into a
// value it already has, such as a list of strings inside an object. On
// input that is not valid it ends without a panic, having handed fn some
// run of bytes.
func Elements(raw []byte, fn func(value []byte) error) error {
	i := ws(raw, 1)
	for i < len(raw) && raw[i] != ']' {
		end := skipValid(raw, i)
		if err := fn(raw[i:end]); err != nil {
			return err
		}
		i = ws(raw, end)
		if i >= len(raw) || raw[i] != ',' {
			return nil // ']'
		}
		i = ws(raw, i+1)
	}
	return nil
}

// skipValid returns the end of the validated value at v[i].
func skipValid(v []byte, i int) int {
	switch v[i] {
	case '"':
		return stringEnd(v, i)
	case '[', '{':
		depth := 0
		for ; i < len(v); i++ {
			switch v[i] {
			case '"':
				i = stringEnd(v, i) - 1
			case '[', '{':
				depth++
			case ']', '}':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(v) && v[i] != ',' && v[i] != ']' && v[i] != '}' && v[i] != ' ' && v[i] != '\t' && v[i] != '\n' && v[i] != '\r' {
		i++
	}
	return i
}
