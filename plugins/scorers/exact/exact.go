// Package exact is the exact-match scorer, registered as "exact" and
// "accuracy": 1 when the prediction equals any target after the configured
// normalisation, else 0. Options lowercase, remove_punctuation,
// remove_articles and normalize_whitespace (all off by default) together give
// SQuAD's normalize_answer.
package exact

import (
	"context"
	"fmt"

	"github.com/hayloft/hayloft/sdk"
)

// Names the scorer is registered under; both build the same scorer.
const (
	Name         = "exact"
	AccuracyName = "accuracy"
)

// Scorer is the exact-match scorer. It is safe for concurrent use.
type Scorer struct {
	norm Normalization
}

// New builds the scorer from its normalisation options.
func New(ctx context.Context, opts sdk.Options) (sdk.Scorer, error) {
	var n Normalization
	if err := opts.Decode(&n); err != nil {
		return nil, err
	}
	return &Scorer{norm: n}, nil
}

// Score is 1 when the normalised prediction equals a normalised target.
func (s *Scorer) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	if req == nil || req.Sample == nil {
		return nil, fmt.Errorf("%s: request has no sample", Name)
	}
	if len(req.Sample.Targets) == 0 {
		return nil, fmt.Errorf("%s: sample %q has no targets", Name, req.Sample.ID)
	}
	pred := s.norm.Apply(req.Prediction)
	for i, t := range req.Sample.Targets {
		if s.norm.Apply(t) == pred {
			return &sdk.ScoreResponse{Value: 1, Details: map[string]any{"match": true, "target": i}}, nil
		}
	}
	return &sdk.ScoreResponse{Value: 0, Details: map[string]any{"match": false}}, nil
}
