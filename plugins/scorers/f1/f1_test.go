package f1

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

func run(t *testing.T, opts map[string]any, sample *sdk.Sample, pred string) *sdk.ScoreResponse {
	t.Helper()
	s, err := New(context.Background(), sdk.MustOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: sample, Prediction: pred})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTokenF1(t *testing.T) {
	for _, tc := range []struct {
		targets []string
		pred    string
		want    float64
	}{
		// SQuAD: normalised tokens, bag overlap.
		{[]string{"the Eiffel Tower"}, "Eiffel Tower", 1},
		{[]string{"Denver Broncos"}, "the Broncos", 2 * (1.0 * 0.5) / 1.5},
		// "a" is an article and is dropped: "b x" against "b c d".
		{[]string{"a b c d"}, "a b x", 2 * (1.0 / 2 * 1.0 / 3) / (1.0/2 + 1.0/3)},
		{[]string{"x y"}, "z", 0},
		{[]string{"x y", "z"}, "z", 1},
		{[]string{"b b c"}, "b b b", 2 * (2.0 / 3 * 2.0 / 3) / (4.0 / 3)},
	} {
		r := run(t, nil, &sdk.Sample{Targets: tc.targets}, tc.pred)
		if math.Abs(r.Value-tc.want) > 1e-12 {
			t.Errorf("%q vs %q = %v, want %v", tc.pred, tc.targets, r.Value, tc.want)
		}
	}
}

func TestCharF1(t *testing.T) {
	sample := &sdk.Sample{Targets: []string{"北京天安门"}, Language: "zh"}
	r := run(t, nil, sample, "天安门，北京。")
	if r.Value != 1 || r.Details["mode"] != ModeChars {
		t.Errorf("zh sample: %v %v, want 1 in chars mode", r.Value, r.Details)
	}
	r = run(t, map[string]any{"language": "zh"}, &sdk.Sample{Targets: []string{"北京"}}, "南京")
	if math.Abs(r.Value-0.5) > 1e-12 {
		t.Errorf("language option: %v, want 0.5", r.Value)
	}
	// Token mode would see one token each and score 0.
	r = run(t, map[string]any{"mode": "tokens"}, &sdk.Sample{Targets: []string{"北京"}, Language: "zh"}, "南京")
	if r.Value != 0 {
		t.Errorf("explicit tokens mode: %v", r.Value)
	}
}

func TestChoices(t *testing.T) {
	opts := map[string]any{"mode": "choices"}
	for _, tc := range []struct {
		targets []string
		pred    string
		want    float64
		invalid bool
	}{
		{[]string{"A", "C"}, "The answer is A and C.", 1, false},
		{[]string{"AC"}, "Answer: (A)", 2 * (1 * 0.5) / 1.5, false},
		{[]string{"B"}, "A, B, D", 2 * (1.0 / 3 * 1) / (1.0/3 + 1), false},
		{[]string{"B"}, "I cannot tell.", 0, true},
		{[]string{"D"}, "ABC", 0, false},
	} {
		r := run(t, opts, &sdk.Sample{Targets: tc.targets}, tc.pred)
		if r.Invalid != tc.invalid || math.Abs(r.Value-tc.want) > 1e-12 {
			t.Errorf("%q vs %q = %v (invalid %v), want %v (invalid %v)", tc.pred, tc.targets, r.Value, r.Invalid, tc.want, tc.invalid)
		}
	}
	// Six choices allow E and F.
	r := run(t, opts, &sdk.Sample{Targets: []string{"F"}, Choices: make([]string, 6)}, "F")
	if r.Value != 1 {
		t.Errorf("sixth choice: %v", r.Value)
	}
	if got := ExtractLetters("Answer: B; also (D). The end. I", "ABCD"); got != "BD" {
		t.Errorf("ExtractLetters = %q", got)
	}
}

func TestErrors(t *testing.T) {
	var ce *sdk.ConfigError
	if _, err := New(context.Background(), sdk.MustOptions(map[string]any{"mode": "words"})); !errors.As(err, &ce) || ce.Field != "mode" {
		t.Errorf("bad mode: %v", err)
	}
	if _, err := New(context.Background(), sdk.MustOptions(map[string]any{"letters": "abc", "mode": "choices"})); !errors.As(err, &ce) || ce.Field != "letters" {
		t.Errorf("bad letters: %v", err)
	}
	s, _ := New(context.Background(), sdk.MustOptions(map[string]any{"mode": "choices"}))
	if _, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "m", Targets: []string{"none"}}, Prediction: "A"}); err == nil {
		t.Error("targets without a letter accepted")
	}
}
