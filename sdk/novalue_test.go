package sdk_test

import (
	"encoding/json"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

func TestAggregateHasValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		agg  *sdk.AggregateResponse
		has  bool
		json string
	}{
		{"a value", &sdk.AggregateResponse{Value: 0.5, N: 4, CILow: 0.25, CIHigh: 0.75},
			true, `{"value":0.5,"n":4,"invalid":0,"ci_low":0.25,"ci_high":0.75}`},
		{"a zero value is a value", &sdk.AggregateResponse{N: 4},
			true, `{"value":0,"n":4,"invalid":0,"ci_low":0,"ci_high":0}`},
		{"failed (no count)", &sdk.AggregateResponse{Details: map[string]any{"error": "boom"}},
			false, `{"value":null,"n":0,"invalid":0,"ci_low":null,"ci_high":null,"details":{"error":"boom"}}`},
		{"declined", &sdk.AggregateResponse{N: 4, Invalid: 1, Details: sdk.WithoutValue(nil, "two languages")},
			false, `{"value":null,"n":4,"invalid":1,"ci_low":null,"ci_high":null,"details":{"no_value":"two languages"}}`},
		{"nil", nil, false, `null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.agg.HasValue(); got != tc.has {
				t.Errorf("HasValue = %v, want %v", got, tc.has)
			}
			raw, err := json.Marshal(tc.agg)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != tc.json {
				t.Errorf("JSON\n got %s\nwant %s", raw, tc.json)
			}
			if tc.agg == nil {
				return
			}
			// Read back (a plugin's JSON, a journal's details): the counts
			// and the reason survive, the nulls read as zero.
			var back sdk.AggregateResponse
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			if back.HasValue() != tc.has || back.N != tc.agg.N || back.Invalid != tc.agg.Invalid {
				t.Errorf("read back %+v", back)
			}
		})
	}
}
