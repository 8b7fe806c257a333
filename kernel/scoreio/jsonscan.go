package scoreio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
	"unsafe"

	"github.com/hayloft/hayloft/sdk/jsonscan"
	"github.com/hayloft/hayloft/sdk/jsonstr"
)

// The input is walked with sdk/jsonscan rather than encoding/json's
// Decoder: splitting a line into its members in order, validating it on the
// way, is most of what `hayloft score` does per line besides scoring, and
// the Decoder's token API costs several times the scan. Values are decoded
// with encoding/json whenever they are not plain strings, so what they mean
// never differs from it.

// field is one top-level member of an object, in input order: its decoded
// key, its key as it will be written, and its raw value.
type field struct {
	key     string
	keyOut  []byte
	value   []byte
	compact bool // value has no whitespace to drop
}

// parseObject splits one JSON object into its members, keeping their order.
// Duplicate keys are errors.
func parseObject(line []byte) ([]field, error) { return parseObjectInto(nil, line) }

// parseObjectInto is parseObject appending the members to dst.
func parseObjectInto(dst []field, line []byte) ([]field, error) {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n') {
		i++
	}
	if i == len(line) || line[i] != '{' {
		return nil, errors.New("want a JSON object")
	}
	first := len(dst)
	err := jsonscan.Members(line, func(m jsonscan.Member) error {
		key := keyString(m)
		for _, f := range dst[first:] {
			if f.key == key {
				return fmt.Errorf("%s: duplicate field", key)
			}
		}
		dst = append(dst, field{key: key, keyOut: keyOut(m.RawKey, key), value: m.Value, compact: m.Compact})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return dst, nil
}

// keyString is m's decoded key as a string: the line's own bytes when the
// key is written as it decodes (no escapes, no invalid UTF-8), else a copy.
func keyString(m jsonscan.Member) string {
	if inner := m.RawKey[1 : len(m.RawKey)-1]; bytes.Equal(inner, m.Key) {
		return unsafeString(inner)
	}
	return string(m.Key)
}

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

// unsafeString is b as a string without a copy. Every input line is a
// buffer of its own that nothing writes after it is read, so the strings
// decoded from it (predictions, references: most of its bytes) can share
// its memory instead of copying it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// errNotString ends stringList's walk at an element that is not a string.
var errNotString = errors.New("not a string")

// stringList decodes a validated JSON list of strings; ok is false for
// anything else (other values), which the caller leaves to encoding/json.
func stringList(raw []byte) (list []string, ok bool) {
	list = []string{}
	err := jsonscan.Elements(raw, func(v []byte) error {
		if jsonscan.KindOf(v) != jsonscan.KindString {
			return errNotString
		}
		s, err := decodeString(v)
		if err != nil {
			return err
		}
		list = append(list, s)
		return nil
	})
	return list, err == nil
}
