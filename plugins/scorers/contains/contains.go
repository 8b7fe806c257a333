// Package contains is the "contains" scorer: 1 when the prediction contains
// any target after the same normalisation options as the exact scorer
// (lowercase, remove_punctuation, remove_articles, normalize_whitespace), else
// 0. It suits needle-in-a-haystack answers, where the model may wrap the
// needle in a sentence.
package contains

import (
	"context"
	"fmt"
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
	if req == nil || req.Sample == nil {
		return nil, fmt.Errorf("%s: request has no sample", Name)
	}
	if len(req.Sample.Targets) == 0 {
		return nil, fmt.Errorf("%s: sample %q has no targets", Name, req.Sample.ID)
	}
	pred := s.norm.Apply(req.Prediction)
	for i, t := range req.Sample.Targets {
		nt := s.norm.Apply(t)
		if (nt == "" && pred == "") || (nt != "" && strings.Contains(pred, nt)) {
			return &sdk.ScoreResponse{Value: 1, Details: map[string]any{"match": true, "target": i}}, nil
		}
	}
	return &sdk.ScoreResponse{Value: 0, Details: map[string]any{"match": false}}, nil
}
