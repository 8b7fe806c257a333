package main

import (
	"context"
	"math"
	"regexp"
	"strconv"

	"github.com/hayloft/hayloft/sdk"
)

// numeric scores 1 when the first number in the prediction equals the target
// within a tolerance; a prediction with no number is invalid, not wrong.
type numeric struct {
	tolerance float64
}

var numberRE = regexp.MustCompile(`-?\d+(?:\.\d+)?`)

func newNumeric(_ context.Context, raw sdk.Options) (sdk.Scorer, error) {
	var o struct {
		Tolerance float64 `json:"tolerance"`
	}
	if err := raw.Decode(&o); err != nil {
		return nil, err
	}
	if o.Tolerance < 0 {
		return nil, sdk.Configf("tolerance", "must not be negative")
	}
	return &numeric{tolerance: o.Tolerance}, nil
}

func (s *numeric) Score(_ context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	if len(req.Sample.Targets) == 0 {
		return nil, &sdk.RequestError{Code: sdk.CodeBadRequest, Msg: "sample " + req.Sample.ID + " has no targets"}
	}
	m := numberRE.FindString(req.Prediction)
	if m == "" {
		return &sdk.ScoreResponse{Invalid: true, Details: map[string]any{"reason": "no number in prediction"}}, nil
	}
	got, _ := strconv.ParseFloat(m, 64)
	for _, t := range req.Sample.Targets {
		want, err := strconv.ParseFloat(t, 64)
		if err == nil && math.Abs(got-want) <= s.tolerance {
			return &sdk.ScoreResponse{Value: 1, Details: map[string]any{"parsed": got}}, nil
		}
	}
	return &sdk.ScoreResponse{Value: 0, Details: map[string]any{"parsed": got}}, nil
}
