// Package stats holds the aggregation helpers scorers and the kernel share:
// the mean of sample values and a seeded percentile bootstrap, so every
// eval-level number comes with its sample count, invalid count and a 95%
// confidence interval that is the same on every run with the same seed.
package stats

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/hayloft/hayloft/sdk"
)

// DefaultResamples is the bootstrap resample count used when a caller passes 0.
const DefaultResamples = 1000

// Mean returns the arithmetic mean of values, or 0 for no values: an eval
// with nothing valid to average must still encode as JSON, which NaN cannot.
func Mean(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	// Summing in float64 left to right matches numpy/statistics closely
	// enough for means of a few million values in [0, 100].
	var s float64
	for _, v := range values {
		s += v
	}
	return s / float64(len(values))
}

// Bootstrap returns the 2.5th and 97.5th percentiles of stat over resamples
// bootstrap draws of n indices (with replacement) from 0..n-1. The draws come
// from a PCG generator seeded with seed, so the interval is reproducible.
// idx is reused between calls: stat must not keep it. resamples <= 0 means
// DefaultResamples; n <= 0 gives (0, 0).
func Bootstrap(n int, resamples int, seed uint64, stat func(idx []int) float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 0
	}
	if resamples <= 0 {
		resamples = DefaultResamples
	}
	// The second PCG word is a fixed odd constant so that seed alone picks
	// the stream; any constant works, it only has to never change.
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	idx := make([]int, n)
	vals := make([]float64, resamples)
	for r := range vals {
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		vals[r] = stat(idx)
	}
	slices.Sort(vals)
	return Percentile(vals, 2.5), Percentile(vals, 97.5)
}

// Percentile returns the p-th percentile (0..100) of sorted values with
// linear interpolation between closest ranks (numpy's default method), the
// usual definition of the percentile bootstrap interval. Empty input gives 0.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := p / 100 * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	if i < 0 {
		return sorted[0]
	}
	frac := pos - float64(i)
	return sorted[i] + frac*(sorted[i+1]-sorted[i])
}

// AggregateMean is the aggregate of a scorer without its own Aggregator: the
// mean of the valid values with a seeded 95% bootstrap interval over them.
// N counts every score given (nil entries count as invalid), Invalid those
// the scorer could not interpret; they are left out of the mean rather than
// scored 0.
func AggregateMean(scores []*sdk.ScoreResponse, seed uint64) *sdk.AggregateResponse {
	valid := make([]float64, 0, len(scores))
	invalid := 0
	for _, s := range scores {
		if s == nil || s.Invalid {
			invalid++
			continue
		}
		valid = append(valid, s.Value)
	}
	lo, hi := Bootstrap(len(valid), DefaultResamples, seed, func(idx []int) float64 {
		var sum float64
		for _, i := range idx {
			sum += valid[i]
		}
		return sum / float64(len(idx))
	})
	return &sdk.AggregateResponse{
		Value:   Mean(valid),
		N:       len(scores),
		Invalid: invalid,
		CILow:   lo,
		CIHigh:  hi,
	}
}

// DefaultSeed seeds the bootstrap interval of every aggregate the kernel
// computes, so `hayloft run` and `hayloft score --aggregate` agree on the
// same scores, and two runs agree with each other.
const DefaultSeed uint64 = 0

// Aggregate is a scorer's eval-level metric: its own corpus-level
// aggregation when it has one (corpus BLEU), else AggregateMean. A remote
// scorer always has an Aggregate method and answers sdk.ErrUnsupported when
// the component behind it has none, which also falls back to the mean.
func Aggregate(ctx context.Context, sc sdk.Scorer, scores []*sdk.ScoreResponse, seed uint64) (*sdk.AggregateResponse, error) {
	if a, ok := sc.(sdk.Aggregator); ok {
		resp, err := a.Aggregate(ctx, &sdk.AggregateRequest{Scores: scores})
		if err == nil {
			return resp, nil
		}
		if !errors.Is(err, sdk.ErrUnsupported) {
			return nil, err
		}
	}
	return AggregateMean(scores, seed), nil
}
