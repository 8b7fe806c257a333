package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"

	"github.com/zclconf/go-cty/cty"

	"github.com/hayloft/hayloft/sdk"
)

// encodeOptions renders option values as a JSON object. Keys come out sorted
// and numbers in a canonical form, so equal configs give byte-equal options
// (they are part of the response cache key).
func encodeOptions(opts map[string]any) (sdk.Options, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Option values are data, not HTML: keep "<" readable in the journal.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(opts); err != nil {
		return nil, err
	}
	return sdk.Options(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// ctyToJSON converts an evaluated HCL value to a value encoding/json renders
// faithfully: integers stay integers (a float64 would turn 2^53+1 into a
// different number), lists, tuples and sets become arrays, maps and objects
// become objects.
func ctyToJSON(v cty.Value) (any, error) {
	if !v.IsWhollyKnown() {
		return nil, fmt.Errorf("value is not known")
	}
	if v.IsNull() {
		return nil, nil
	}
	v, _ = v.Unmark()
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString(), nil
	case t == cty.Bool:
		return v.True(), nil
	case t == cty.Number:
		return numberJSON(v.AsBigFloat())
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			j, err := ctyToJSON(ev)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", len(out), err)
			}
			out = append(out, j)
		}
		return out, nil
	case t.IsMapType() || t.IsObjectType():
		out := make(map[string]any, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			j, err := ctyToJSON(ev)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k.AsString(), err)
			}
			out[k.AsString()] = j
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %s cannot be an option value", t.FriendlyName())
}

func numberJSON(f *big.Float) (json.Number, error) {
	if f.IsInf() {
		return "", fmt.Errorf("infinity cannot be an option value")
	}
	if f.IsInt() {
		if i, acc := f.Int64(); acc == big.Exact {
			return json.Number(strconv.FormatInt(i, 10)), nil
		}
		return json.Number(f.Text('f', 0)), nil
	}
	// encoding/json's float64 form is the canonical one plugins see when they
	// re-encode, so options hash the same either way.
	x, _ := f.Float64()
	b, err := json.Marshal(x)
	return json.Number(b), err
}
