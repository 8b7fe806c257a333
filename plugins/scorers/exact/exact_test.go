package exact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

func TestNormalization(t *testing.T) {
	for _, tc := range []struct {
		n        Normalization
		in, want string
	}{
		{Normalization{}, " The Cat! ", " The Cat! "},
		{Normalization{Lowercase: true}, "The CAT", "the cat"},
		{Normalization{RemovePunctuation: true}, "don't, stop!", "dont stop"},
		{Normalization{NormalizeWhitespace: true}, "  a \t b\n", "a b"},
		{Normalization{RemoveArticles: true}, "a cat and an apple, the end; The", "  cat and   apple,   end; The"},
		{Normalization{RemoveArticles: true}, "theatre another a_b", "theatre another a_b"},
		// SQuAD's normalize_answer, all steps in order.
		{SQuAD, "The  Eiffel-Tower!", "eiffeltower"},
		{SQuAD, "An apple a day", "apple day"},
		{SQuAD, "Théâtre  du Soleil.", "théâtre du soleil"},
	} {
		if got := tc.n.Apply(tc.in); got != tc.want {
			t.Errorf("%+v.Apply(%q) = %q, want %q", tc.n, tc.in, got, tc.want)
		}
	}
}

func scoreOf(t *testing.T, opts map[string]any, targets []string, pred string) float64 {
	t.Helper()
	s, err := New(context.Background(), sdk.MustOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "e", Targets: targets}, Prediction: pred})
	if err != nil {
		t.Fatal(err)
	}
	return r.Value
}

func TestScore(t *testing.T) {
	squad := map[string]any{"lowercase": true, "remove_punctuation": true, "remove_articles": true, "normalize_whitespace": true}
	for _, tc := range []struct {
		opts    map[string]any
		targets []string
		pred    string
		want    float64
	}{
		{nil, []string{"Paris"}, "Paris", 1},
		{nil, []string{"Paris"}, "paris", 0},
		{nil, []string{"Paris"}, "Paris ", 0},
		{map[string]any{"lowercase": true}, []string{"Paris"}, "PARIS", 1},
		{squad, []string{"the Eiffel Tower"}, "Eiffel tower.", 1},
		{squad, []string{"London", "Paris"}, "paris", 1},
		{squad, []string{"London", "Rome"}, "paris", 0},
	} {
		if got := scoreOf(t, tc.opts, tc.targets, tc.pred); got != tc.want {
			t.Errorf("%v %q vs %q = %v, want %v", tc.opts, tc.pred, tc.targets, got, tc.want)
		}
	}
}

// With lowercase on, exact match ignores case on either side.
func TestCaseSymmetry(t *testing.T) {
	opts := map[string]any{"lowercase": true}
	for _, pair := range [][2]string{{"Answer", "aNSWER"}, {"ΣΟΦΙΑ", "σοφια"}, {"x", "X"}} {
		a := scoreOf(t, opts, []string{pair[0]}, pair[1])
		b := scoreOf(t, opts, []string{pair[1]}, pair[0])
		if a != b || a != 1 {
			t.Errorf("%q/%q: %v vs %v", pair[0], pair[1], a, b)
		}
	}
}

func TestErrors(t *testing.T) {
	_, err := New(context.Background(), sdk.MustOptions(map[string]any{"ignore_case": true}))
	var ce *sdk.ConfigError
	if !errors.As(err, &ce) || ce.Field != "ignore_case" {
		t.Errorf("unknown option: %v", err)
	}
	s, _ := New(context.Background(), nil)
	_, err = s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "n1"}})
	if err == nil || !strings.Contains(err.Error(), `sample "n1" has no targets`) {
		t.Errorf("no targets: %v", err)
	}
}

// exact claims sdk.Borrower: CheckScorer holds it to keeping nothing of
// its requests, with each normalisation.
func TestBorrowsInput(t *testing.T) {
	squad := map[string]any{"lowercase": true, "remove_punctuation": true, "remove_articles": true, "normalize_whitespace": true}
	for _, opts := range []map[string]any{nil, squad} {
		ref, err := New(context.Background(), sdk.MustOptions(opts))
		if err != nil {
			t.Fatal(err)
		}
		var cases []sdktest.ScorerCase
		for i, pred := range []string{"Paris", "paris.", "The Eiffel Tower", "  an apple ", ""} {
			req := &sdk.ScoreRequest{Sample: &sdk.Sample{ID: fmt.Sprint("s", i), Targets: []string{"Paris", "the Eiffel tower", "apple"}}, Prediction: pred}
			want, err := ref.Score(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, sdktest.ScorerCase{Name: req.Sample.ID, Req: req, Want: want.Value})
		}
		s, err := New(context.Background(), sdk.MustOptions(opts))
		if err != nil {
			t.Fatal(err)
		}
		sdktest.CheckScorer(t, s, cases)
	}
}
