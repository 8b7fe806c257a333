package wasm

import (
	"bytes"
	"encoding/json"

	"github.com/hayloft/hayloft/sdk"
)

// ABIVersion is the version of the host–guest contract described in README.md.
// A module reports the version it was written for from its
// hayloft_abi_version export; the host refuses versions it does not speak.
const ABIVersion = 2

// Input is what the host sends to score: the sample, the model's prediction,
// the reference answers (the sample's Targets, repeated for convenience) and
// the scorer's free-form options from the config.
type Input struct {
	Sample     sdk.Sample      `json:"sample"`
	Prediction string          `json:"prediction"`
	References []string        `json:"references"`
	Options    json.RawMessage `json:"options,omitempty"`
}

// DecodeOptions unmarshals the config's options into v, rejecting unknown
// names so that a typo in a config never silently falls back to a default.
func (in *Input) DecodeOptions(v any) error {
	return decodeStrict(in.Options, v)
}

// Output is what score returns. Error, when set, reports that the scorer
// failed on this input; the host records it against the sample.
type Output struct {
	Value   float64        `json:"value"`
	Invalid bool           `json:"invalid,omitempty"`
	Details map[string]any `json:"details,omitempty"`
	// Stats are sufficient statistics for an aggregate export (for example
	// matched and total counts for a micro-average).
	Stats []float64 `json:"stats,omitempty"`
	Error string    `json:"error,omitempty"`
}

// Score is one sample's result as the aggregate export receives it.
type Score struct {
	Value   float64        `json:"value"`
	Invalid bool           `json:"invalid,omitempty"`
	Details map[string]any `json:"details,omitempty"`
	Stats   []float64      `json:"stats,omitempty"`
}

// AggregateInput holds every sample score of one eval, in sample order.
type AggregateInput struct {
	Scores  []Score         `json:"scores"`
	Options json.RawMessage `json:"options,omitempty"`
}

// DecodeOptions unmarshals the config's options into v, rejecting unknown names.
func (in *AggregateInput) DecodeOptions(v any) error {
	return decodeStrict(in.Options, v)
}

// AggregateOutput is the eval-level result. N and Invalid may be left nil:
// the host then counts them from the scores it sent.
type AggregateOutput struct {
	Value   float64        `json:"value"`
	N       *int           `json:"n,omitempty"`
	Invalid *int           `json:"invalid,omitempty"`
	CILow   *float64       `json:"ci_low,omitempty"`
	CIHigh  *float64       `json:"ci_high,omitempty"`
	Details map[string]any `json:"details,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// ScoreFunc scores one prediction.
type ScoreFunc func(in Input) (Output, error)

// AggregateFunc computes a corpus-level result from every sample score.
type AggregateFunc func(in AggregateInput) (AggregateOutput, error)

func decodeStrict(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
