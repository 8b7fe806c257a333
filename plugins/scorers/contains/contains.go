// Package contains is the "contains" scorer: 1 when the prediction contains
// any target after the same normalisation options as the exact scorer
// (lowercase, remove_punctuation, remove_articles, normalize_whitespace), else
// 0. It suits needle-in-a-haystack answers, where the model may wrap the
// needle in a sentence.
package contains

import (
	"context"
	"strings"

	"github.com/hayloft/hayloft/plugins/scorers/exact"
	"github.com/hayloft/hayloft/sdk"
)

// Name is the name the scorer is registered under.
const Name = "contains"

// Scorer is the containment scorer. It is safe for concurrent use.
type Scorer struct {
	norm exact.Normalization
}

// New builds the scorer from its normalisation options.
func New(ctx context.Context, opts sdk.Options) (sdk.Scorer, error) {
	var n exact.Normalization
	if err := opts.Decode(&n); err != nil {
		return nil, err
	}
	return &Scorer{norm: n}, nil
}

// Score is 1 when the normalised prediction contains a normalised target. A
// target that normalises to nothing matches only a prediction that does too:
// the empty string is inside every text, and that would make any answer
// right.
func (s *Scorer) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	return exact.MatchAny(Name, req, s.norm, func(pred, target string) bool {
		return (target == "" && pred == "") || (target != "" && strings.Contains(pred, target))
	})
}
