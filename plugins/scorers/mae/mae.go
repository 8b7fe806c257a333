// Package mae is the absolute-error scorer for numeric ratings on a declared
// scale (options min and max, both required). The first number in the
// prediction is the rating; a prediction without one, or with one outside
// [min, max], is Invalid and counted apart, never scored. Value is the
// absolute error against the nearest target, so the aggregate mean is the
// MAE; lower is better.
package mae

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/stats"
)

// Name is the name the scorer is registered under.
const Name = "mae"

// Options declare the rating scale.
type Options struct {
	Min *float64 `json:"min"`
	Max *float64 `json:"max"`
}

// Scorer is the MAE scorer. It is safe for concurrent use.
type Scorer struct {
	min, max float64
}

// New builds the scorer; min and max are required and min < max.
func New(ctx context.Context, opts sdk.Options) (sdk.Scorer, error) {
	var o Options
	if err := opts.Decode(&o); err != nil {
		return nil, err
	}
	if o.Min == nil {
		return nil, sdk.Configf("min", "required: the lowest rating on the scale")
	}
	if o.Max == nil {
		return nil, sdk.Configf("max", "required: the highest rating on the scale")
	}
	if !(*o.Min < *o.Max) {
		return nil, sdk.Configf("max", "must exceed min (%v), got %v", *o.Min, *o.Max)
	}
	return &Scorer{min: *o.Min, max: *o.Max}, nil
}

// number matches a decimal number, optionally signed, with a fraction.
var number = regexp.MustCompile(`[-+]?(?:\d+(?:\.\d+)?|\.\d+)`)

// ParseRating returns the first number in text.
func ParseRating(text string) (float64, bool) {
	m := number.FindString(text)
	if m == "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(m, 64)
	return v, err == nil
}

// Score returns |rating - target| for the nearest target.
func (s *Scorer) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	if err := req.NeedTargets(Name); err != nil {
		return nil, err
	}
	sample := req.Sample
	targets := make([]float64, len(sample.Targets))
	for i, t := range sample.Targets {
		v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: sample %q: target %q is not a number", Name, sample.ID, t)
		}
		targets[i] = v
	}
	rating, ok := ParseRating(req.Prediction)
	if !ok {
		return &sdk.ScoreResponse{Invalid: true, Details: map[string]any{"reason": "no number in prediction"}}, nil
	}
	if rating < s.min || rating > s.max {
		return &sdk.ScoreResponse{Invalid: true, Details: map[string]any{
			"reason": fmt.Sprintf("rating %v outside [%v, %v]", rating, s.min, s.max), "rating": rating,
		}}, nil
	}
	best, target := math.Inf(1), 0.0
	for _, t := range targets {
		if e := math.Abs(rating - t); e < best {
			best, target = e, t
		}
	}
	return &sdk.ScoreResponse{Value: best, Details: map[string]any{
		"rating": rating, "target": target, "abs_error": best,
	}}, nil
}

// Aggregate is the mean of the valid errors, the MAE, as the kernel would
// take it, marked lower-is-better so that comparisons count a smaller
// error as the better one.
func (s *Scorer) Aggregate(ctx context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	agg := stats.AggregateMean(req.Scores, stats.DefaultSeed)
	agg.Details = map[string]any{sdk.LowerIsBetterKey: true}
	return agg, nil
}

// AggregateReadsNoDetails: Aggregate reads values only.
func (s *Scorer) AggregateReadsNoDetails() {}
