// Package exact is the exact-match scorer, registered as "exact" and
// "accuracy": 1 when the prediction equals any target after the configured
// normalisation, else 0. Options lowercase, remove_punctuation,
// remove_articles and normalize_whitespace (all off by default) together give
// SQuAD's normalize_answer.
package exact

import (
	"context"

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
	return MatchAny(Name, req, s.norm, func(pred, target string) bool { return pred == target })
}

// BorrowsInput marks Score as keeping nothing of its request
// (sdk.Borrower).
func (s *Scorer) BorrowsInput() {}

// MatchAny scores 1 when match holds between the normalised prediction and
// any normalised target (reported in Details), else 0. Scorers that differ
// only in how a prediction matches a target share it.
func MatchAny(name string, req *sdk.ScoreRequest, n Normalization, match func(pred, target string) bool) (*sdk.ScoreResponse, error) {
	if err := req.NeedTargets(name); err != nil {
		return nil, err
	}
	pred := n.Apply(req.Prediction)
	for i, t := range req.Sample.Targets {
		if match(pred, n.Apply(t)) {
			return &sdk.ScoreResponse{Value: 1, Details: map[string]any{"match": true, "target": i}}, nil
		}
	}
	return &sdk.ScoreResponse{Value: 0, Details: map[string]any{"match": false}}, nil
}
