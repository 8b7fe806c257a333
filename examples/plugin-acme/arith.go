package main

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"strconv"

	"github.com/hayloft/hayloft/sdk"
)

// arith is a task of sums hidden in filler text: small enough to read in one
// screen, real enough to show every part of a task plugin.
type arith struct {
	opts arithOptions
}

type arithOptions struct {
	Count  int    `json:"count"`
	Seed   uint64 `json:"seed"`
	Filler int    `json:"filler_sentences"`
}

func newArith(_ context.Context, raw sdk.Options) (sdk.Task, error) {
	o := arithOptions{Count: 20, Seed: 1, Filler: 50}
	if err := raw.Decode(&o); err != nil {
		return nil, err
	}
	if o.Count < 1 {
		return nil, sdk.Configf("count", "must be at least 1, got %d", o.Count)
	}
	if o.Filler < 0 {
		return nil, sdk.Configf("filler_sentences", "must not be negative")
	}
	return &arith{opts: o}, nil
}

func (t *arith) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		rng := rand.New(rand.NewPCG(t.opts.Seed, 0))
		n := t.opts.Count
		if req.Limit > 0 && req.Limit < n {
			n = req.Limit
		}
		for i := range n {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			a, b := rng.IntN(1000), rng.IntN(1000)
			pos := rng.IntN(t.opts.Filler + 1)
			var text string
			for j := 0; j <= t.opts.Filler; j++ {
				if j == pos {
					text += fmt.Sprintf("The first number is %d and the second number is %d. ", a, b)
				}
				if j < t.opts.Filler {
					text += "The barn was quiet and the hay was dry. "
				}
			}
			depth := 0.0
			if t.opts.Filler > 0 {
				depth = float64(pos) / float64(t.opts.Filler)
			}
			s := &sdk.Sample{
				ID:       strconv.Itoa(i),
				Context:  text,
				Question: "What is the sum of the first number and the second number? Answer with the number only.",
				Targets:  []string{strconv.Itoa(a + b)},
				Depth:    depth,
				Language: "en",
			}
			if !yield(s, nil) {
				return
			}
		}
	}
}
