package plugin

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/hayloft/hayloft/sdk/jsonscan"
	"github.com/hayloft/hayloft/sdk/jsonstr"
)

// appendJSONMap appends json.Marshal(m)'s exact bytes for maps of the value
// types scorers' details are made of (numbers, strings, bools, nil, and
// slices and maps of them). ok is false for anything else, or a value
// json.Marshal would reject (NaN, ±Inf): the caller then uses json.Marshal,
// which also gives the error. Every score of every sample crosses the plugin
// boundary with its details, and reflection was most of what that cost.
func appendJSONMap(b []byte, m map[string]any) ([]byte, bool) {
	var keyBuf [16]string
	keys := keyBuf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // json.Marshal sorts keys bytewise too
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendJSONString(b, k); !ok {
			return b, false
		}
		b = append(b, ':')
		if b, ok = appendJSONValue(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func appendJSONValue(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, v), true
	case float64:
		return AppendJSONFloat(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case string:
		return appendJSONString(b, v)
	case []float64:
		return appendJSONArray(b, v, AppendJSONFloat)
	case []any:
		return appendJSONArray(b, v, appendJSONValue)
	case map[string]any:
		if v == nil {
			return append(b, "null"...), true
		}
		return appendJSONMap(b, v)
	}
	return b, false
}

// appendJSONArray is a slice as json.Marshal writes it (nil is null), each
// element by elem.
func appendJSONArray[T any](b []byte, v []T, elem func([]byte, T) ([]byte, bool)) ([]byte, bool) {
	if v == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, e := range v {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = elem(b, e); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// AppendJSONFloat appends json.Marshal(f)'s bytes; ok is false for NaN
// and ±Inf, which JSON cannot hold.
//
// Deprecated: use jsonstr.AppendFloat, which this calls; it stays for
// plugins written against it.
func AppendJSONFloat(b []byte, f float64) ([]byte, bool) {
	return jsonstr.AppendFloat(b, f)
}

// appendJSONString quotes s when no character of it needs escaping, as in
// almost every detail key and value; ok is false otherwise (control
// characters, quotes, backslashes, the HTML characters json.Marshal
// escapes, U+2028/U+2029, invalid UTF-8), and json.Marshal takes over.
func appendJSONString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// decodeJSONMap is json.Unmarshal(b, &m) for an object, its scalar members
// decoded by hand (sdk/jsonscan) and the others by encoding/json one by
// one, which gives what decoding the whole would. ok is false for anything
// that is not a valid object: the caller then uses json.Unmarshal, which
// also gives the error. The kernel decodes every score's details, and the
// reflective decoder's double scan was most of what that cost.
func decodeJSONMap(b []byte) (map[string]any, bool) {
	m := make(map[string]any, 4)
	err := jsonscan.Object(b, func(k, v []byte) error {
		var x any
		switch jsonscan.KindOf(v) {
		case jsonscan.KindNull:
		case jsonscan.KindBool:
			x = v[0] == 't'
		case jsonscan.KindString:
			s, err := jsonscan.String(v)
			if err != nil {
				return err
			}
			x = s
		case jsonscan.KindNumber:
			// As json: a float64, and an error for one out of range.
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				return err
			}
			x = f
		default:
			if err := json.Unmarshal(v, &x); err != nil {
				return err
			}
		}
		m[string(k)] = x
		return nil
	})
	return m, err == nil
}
