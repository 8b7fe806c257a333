package jsonscan

import "bytes"

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
// compact. Errors are Object's.
func Members(b []byte, fn func(m *Member) error) error {
	var m Member
	return object(b, func(rawKey, key, value []byte) error {
		m = Member{RawKey: rawKey, Key: key, Value: value, Compact: compact(value)}
		return fn(&m)
	})
}

// compact reports whether the validated value v has no whitespace outside
// its strings. Only arrays and objects can: they are walked from string to
// string (a search for the closing quote), the bytes between looked at one
// by one.
func compact(v []byte) bool {
	if len(v) == 0 || v[0] != '[' && v[0] != '{' {
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
