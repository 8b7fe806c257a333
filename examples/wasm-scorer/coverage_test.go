package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/wasm"
)

func TestWords(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"The quick, BROWN fox!", []string{"the", "quick", "brown", "fox"}},
		{"Route 66 — ok", []string{"route", "66", "ok"}},
		{"宝玉来了", []string{"宝", "玉", "来", "了"}},
		{"GPT4o和Claude", []string{"gpt4o", "和", "claude"}},
		{"", nil},
	}
	for _, tc := range cases {
		if got := words(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("words(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestScore(t *testing.T) {
	cases := []struct {
		name    string
		in      wasm.Input
		want    float64
		invalid bool
		missing []string
	}{
		{name: "half", in: wasm.Input{Prediction: "red fox", References: []string{"the red dog and the fox ran"}},
			want: 0.5, missing: []string{"dog", "ran"}},
		{name: "repeats count once", in: wasm.Input{Prediction: "fox", References: []string{"fox fox fox"}}, want: 1},
		{name: "short words dropped", in: wasm.Input{Prediction: "x", References: []string{"x marks"}}, want: 0, missing: []string{"marks"}},
		{name: "targets when no references", in: wasm.Input{Prediction: "owl", Sample: sampleWithTargets("owl")}, want: 1},
		{name: "nothing to cover", in: wasm.Input{Prediction: "a", References: []string{"a the of"}}, invalid: true},
		{name: "options", in: wasm.Input{Prediction: "ox", References: []string{"ox"}, Options: json.RawMessage(`{"min_length":3}`)}, invalid: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := score(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.Invalid != tc.invalid || (!tc.invalid && got.Value != tc.want) {
				t.Fatalf("got %+v, want value %v invalid %v", got, tc.want, tc.invalid)
			}
			if tc.missing != nil && !reflect.DeepEqual(got.Details["missing"], tc.missing) {
				t.Errorf("missing %v, want %v", got.Details["missing"], tc.missing)
			}
		})
	}
	if _, err := score(wasm.Input{Options: json.RawMessage(`{"min_len":1}`)}); err == nil {
		t.Error("an unknown option was accepted")
	}
}

func TestAggregate(t *testing.T) {
	out, err := aggregate(wasm.AggregateInput{Scores: []wasm.Score{
		{Value: 0.5, Stats: []float64{1, 2}},
		{Invalid: true},
		{Value: 0.75, Stats: []float64{3, 4}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Value != 4.0/6 || *out.N != 2 || *out.Invalid != 1 {
		t.Errorf("got value %v n %v invalid %v", out.Value, *out.N, *out.Invalid)
	}
	// Resamples of two samples give 1/2, 3/4 or 4/6: the interval lies
	// within them and brackets the value.
	if *out.CILow < 0.5 || *out.CIHigh > 0.75 || *out.CILow > out.Value || *out.CIHigh < out.Value {
		t.Errorf("interval [%v, %v] around %v", *out.CILow, *out.CIHigh, out.Value)
	}
	again, _ := aggregate(wasm.AggregateInput{Scores: []wasm.Score{
		{Value: 0.5, Stats: []float64{1, 2}},
		{Invalid: true},
		{Value: 0.75, Stats: []float64{3, 4}},
	}})
	if *again.CILow != *out.CILow || *again.CIHigh != *out.CIHigh {
		t.Error("the bootstrap is not reproducible")
	}
	one, _ := aggregate(wasm.AggregateInput{Scores: []wasm.Score{{Value: 0.5, Stats: []float64{1, 2}}}})
	if *one.CILow != 0.5 || *one.CIHigh != 0.5 {
		t.Errorf("one sample: interval [%v, %v], want the value", *one.CILow, *one.CIHigh)
	}
	if _, err := aggregate(wasm.AggregateInput{Scores: []wasm.Score{{Value: 1}}}); err == nil {
		t.Error("a score without stats was accepted")
	}
}

func TestRegistered(t *testing.T) {
	if wasm.Registered() == nil {
		t.Fatal("init did not register the score function")
	}
}

func sampleWithTargets(targets ...string) (s sdk.Sample) {
	s.Targets = targets
	return s
}
