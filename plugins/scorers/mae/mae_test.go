package mae

import (
	"context"
	"errors"
	"testing"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/stats"
)

func TestScore(t *testing.T) {
	s, err := New(context.Background(), sdk.MustOptions(map[string]any{"min": 1, "max": 5}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		targets []string
		pred    string
		want    float64
		invalid bool
	}{
		{[]string{"4"}, "4", 0, false},
		{[]string{"4"}, "Rating: 2/5", 2, false},
		{[]string{"3.5"}, "I'd say 5.", 1.5, false},
		{[]string{"1", "5"}, "4", 1, false},
		{[]string{"4"}, "-3", 0, true},
		{[]string{"4"}, "10 out of 10", 0, true},
		{[]string{"4"}, "no idea", 0, true},
		{[]string{" 2 "}, ".5 is too low, so 2", 0, true},
	} {
		r, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{Targets: tc.targets}, Prediction: tc.pred})
		if err != nil {
			t.Fatal(err)
		}
		if r.Invalid != tc.invalid || r.Value != tc.want {
			t.Errorf("%q vs %v = %v (invalid %v), want %v (invalid %v)", tc.pred, tc.targets, r.Value, r.Invalid, tc.want, tc.invalid)
		}
	}
	if _, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "t", Targets: []string{"four"}}, Prediction: "4"}); err == nil {
		t.Error("non-numeric target accepted")
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		opts  map[string]any
		field string
	}{
		{map[string]any{"max": 5}, "min"},
		{map[string]any{"min": 1}, "max"},
		{map[string]any{"min": 5, "max": 1}, "max"},
		{map[string]any{"min": 1, "max": 5, "scale": 10}, "scale"},
	} {
		_, err := New(context.Background(), sdk.MustOptions(tc.opts))
		var ce *sdk.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%v: %v, want ConfigError on %q", tc.opts, err, tc.field)
		}
	}
}

// The aggregate is the mean of the valid errors, as the kernel's mean
// would be, and says that lower is better.
func TestAggregate(t *testing.T) {
	s, err := New(context.Background(), sdk.MustOptions(map[string]any{"min": 0, "max": 10}))
	if err != nil {
		t.Fatal(err)
	}
	scores := []*sdk.ScoreResponse{{Value: 1}, {Value: 2}, {Invalid: true}, {Value: 4.5}}
	agg, err := s.(sdk.Aggregator).Aggregate(context.Background(), &sdk.AggregateRequest{Scores: scores})
	if err != nil {
		t.Fatal(err)
	}
	mean := stats.AggregateMean(scores, stats.DefaultSeed)
	if agg.Value != 2.5 || agg.Value != mean.Value || agg.CILow != mean.CILow || agg.CIHigh != mean.CIHigh || agg.N != 4 || agg.Invalid != 1 {
		t.Errorf("aggregate %+v, want the kernel's mean %+v", agg, mean)
	}
	if !sdk.LowerIsBetter(agg.Details) {
		t.Errorf("details %v: not marked lower-is-better", agg.Details)
	}
}
