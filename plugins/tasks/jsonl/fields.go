package jsonl

import (
	"encoding/json"
	"errors"

	"github.com/hayloft/hayloft/sdk/jsonscan"
)

// A line is split into its fields by jsonscan, which validates as
// encoding/json does, and its string values are decoded by it: the same
// results as json.Unmarshal into a map of raw values and then into each
// value's type, for a tenth of the CPU. Anything the fast path does not
// cover (a line that is not an object, a value that is not text) takes
// encoding/json's path as before, so every result and error message stays
// what it was.

// fields is line's members, each value raw and aliasing line (a fresh
// buffer per line); a later duplicate key wins, as in json.Unmarshal.
func fields(line []byte) (map[string]json.RawMessage, error) {
	rec := make(map[string]json.RawMessage, 8)
	err := jsonscan.Object(line, func(k, v []byte) error {
		rec[string(k)] = v
		return nil
	})
	if err == nil {
		return rec, nil
	}
	// encoding/json's verdict and words: `null` is an empty record, and a
	// broken line is reported as before.
	rec = nil
	return rec, json.Unmarshal(line, &rec)
}

// text is raw decoded when it is a JSON string.
func text(raw []byte) (string, bool) {
	if jsonscan.KindOf(raw) != jsonscan.KindString {
		return "", false
	}
	s, err := jsonscan.String(raw)
	return s, err == nil
}

// texts is raw decoded when it is a list of JSON strings.
func texts(raw []byte) ([]string, bool) {
	if jsonscan.KindOf(raw) != jsonscan.KindArray {
		return nil, false
	}
	out := []string{}
	err := jsonscan.Array(raw, func(v []byte) error {
		s, ok := text(v)
		if !ok {
			return errNotText
		}
		out = append(out, s)
		return nil
	})
	return out, err == nil
}

// errNotText stops texts at the first value that is not a string.
var errNotText = errors.New("not a string")
