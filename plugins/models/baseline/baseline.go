// Package baseline is the "baseline" model: answers computed from the
// sample itself, without any language model, so a benchmark has a floor to
// compare against and the quickstart runs without a GPU.
//
// Mode "extractive" (the default) answers with the context sentence that
// best matches the question under BM25, which is enough to find a needle in
// a haystack. Mode "random" picks one of the sample's choices uniformly, the
// chance level of a multiple-choice task.
package baseline

import (
	"context"
	"hash/fnv"
	"math/rand/v2"

	"github.com/hayloft/hayloft/sdk"
)

// Name is the model's registered name.
const Name = "baseline"

// Options are the settings of a "baseline" model block.
type Options struct {
	// Mode is "extractive" (default) or "random".
	Mode string `json:"mode"`
	// Seed makes random answers reproducible; each sample's draw depends on
	// the seed and its ID only.
	Seed int64 `json:"seed"`
}

// Model is the "baseline" model. It is stateless and safe for concurrent use.
type Model struct {
	random bool
	seed   uint64
}

// New is the sdk.ModelFactory of "baseline".
func New(ctx context.Context, opts sdk.Options) (sdk.Model, error) {
	var o Options
	if err := opts.Decode(&o); err != nil {
		return nil, err
	}
	m := &Model{seed: uint64(o.Seed)}
	switch o.Mode {
	case "", "extractive":
	case "random":
		m.random = true
	default:
		return nil, sdk.Configf("mode", "want \"extractive\" or \"random\", got %q", o.Mode)
	}
	return m, nil
}

// Generate answers from req.Sample.
// ReadsSample: the baselines answer from the sample's structure (its
// context, question and choices), not from the rendered messages.
func (m *Model) ReadsSample() bool { return true }

func (m *Model) Generate(ctx context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	if req.Sample == nil {
		return nil, &sdk.RequestError{Code: sdk.CodeBadRequest, Msg: "baseline: the request carries no sample to answer from"}
	}
	s := req.Sample
	if m.random {
		if len(s.Choices) == 0 {
			return nil, &sdk.RequestError{Code: sdk.CodeBadRequest, Msg: "baseline: random mode needs choices, and sample " + s.ID + " has none"}
		}
		return &sdk.GenerateResponse{Text: s.Choices[m.pick(s.ID, len(s.Choices))], FinishReason: "stop"}, nil
	}
	return &sdk.GenerateResponse{Text: BestSentence(s.Context, s.Question), FinishReason: "stop"}, nil
}

// pick draws from a generator seeded by the seed and the sample ID, so the
// answer never depends on the order or concurrency of calls.
func (m *Model) pick(id string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(id))
	return rand.New(rand.NewPCG(m.seed, h.Sum64())).IntN(n)
}
