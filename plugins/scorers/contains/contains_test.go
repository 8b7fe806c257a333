package contains

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

func TestScore(t *testing.T) {
	squad := map[string]any{"lowercase": true, "remove_punctuation": true, "remove_articles": true, "normalize_whitespace": true}
	for _, tc := range []struct {
		opts    map[string]any
		targets []string
		pred    string
		want    float64
	}{
		{nil, []string{"42"}, "The answer is 42.", 1},
		{nil, []string{"Paris"}, "the capital is paris", 0},
		{map[string]any{"lowercase": true}, []string{"Paris"}, "the capital is PARIS", 1},
		{squad, []string{"the magic number is 7"}, "I think: Magic number is   7!", 1},
		{nil, []string{"cat", "dog"}, "a hot dog", 1},
		{nil, []string{"cat", "dog"}, "a bird", 0},
		{squad, []string{"the"}, "anything at all", 0},
		{squad, []string{"the"}, "a", 1},
	} {
		s, err := New(context.Background(), sdk.MustOptions(tc.opts))
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{Targets: tc.targets}, Prediction: tc.pred})
		if err != nil {
			t.Fatal(err)
		}
		if r.Value != tc.want {
			t.Errorf("%v: %q in %q = %v, want %v", tc.opts, tc.targets, tc.pred, r.Value, tc.want)
		}
	}
}

func TestErrors(t *testing.T) {
	_, err := New(context.Background(), sdk.MustOptions(map[string]any{"lowercase": "yes"}))
	var ce *sdk.ConfigError
	if !errors.As(err, &ce) || ce.Field != "lowercase" {
		t.Errorf("bad type: %v", err)
	}
	s, _ := New(context.Background(), nil)
	if _, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "c"}}); err == nil || !strings.Contains(err.Error(), "no targets") {
		t.Errorf("no targets: %v", err)
	}
}
