package openai

import (
	"strconv"

	"github.com/hayloft/hayloft/sdk/jsonstr"
)

// appendParams appends the members of r that follow its messages, as
// json.Marshal(r) writes them (struct order, omitempty) without the braces:
// `"prompt":…,"temperature":0.2,…`. Every request's body has them, and
// encoding/json's reflection over the struct cost more than the rest of
// the body's encoding. ok is false for a float JSON cannot hold (NaN,
// ±Inf): the caller then asks json.Marshal, which gives the error.
func appendParams(b []byte, r *request) ([]byte, bool) {
	start := len(b)
	key := func(name string) {
		if len(b) > start {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), name...), `":`...)
	}
	ok := true
	float := func(name string, f *float64) {
		if f != nil && ok {
			key(name)
			b, ok = jsonstr.AppendFloat(b, *f)
		}
	}
	if r.Prompt != nil {
		key("prompt")
		b = jsonstr.AppendQuoted(b, *r.Prompt)
	}
	float("temperature", r.Temperature)
	float("top_p", r.TopP)
	if r.MaxTokens != 0 {
		key("max_tokens")
		b = strconv.AppendInt(b, int64(r.MaxTokens), 10)
	}
	if len(r.Stop) > 0 {
		key("stop")
		for i, s := range r.Stop {
			if i == 0 {
				b = append(b, '[')
			} else {
				b = append(b, ',')
			}
			b = jsonstr.AppendQuoted(b, s)
		}
		b = append(b, ']')
	}
	if r.Seed != nil {
		key("seed")
		b = strconv.AppendInt(b, *r.Seed, 10)
	}
	if r.Echo {
		key("echo")
		b = append(b, "true"...)
	}
	if r.Logprobs != 0 {
		key("logprobs")
		b = strconv.AppendInt(b, int64(r.Logprobs), 10)
	}
	if r.IDSlot != nil {
		key("id_slot")
		b = strconv.AppendInt(b, int64(*r.IDSlot), 10)
	}
	if r.Stream {
		key("stream")
		b = append(b, "true"...)
	}
	if r.StreamOptions != nil {
		key("stream_options")
		b = strconv.AppendBool(append(b, `{"include_usage":`...), r.StreamOptions.IncludeUsage)
		b = append(b, '}')
	}
	return b, ok
}
