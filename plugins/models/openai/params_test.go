package openai

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// appendParams must write what json.Marshal writes for the same fields.
func TestAppendParamsMatchesMarshal(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i64 := func(v int64) *int64 { return &v }
	slot := 3
	prompt := "Q: <b>&\"x\"\n\u2028 \xff"
	for name, r := range map[string]request{
		"empty":       {},
		"chat":        {Temperature: f(0), MaxTokens: 16},
		"everything":  {Prompt: &prompt, Temperature: f(0.7), TopP: f(1e-7), MaxTokens: 64, Stop: []string{"\n\n", "</s>"}, Seed: i64(-42), Echo: true, Logprobs: 1, IDSlot: &slot, Stream: true, StreamOptions: &streamOptions{IncludeUsage: true}},
		"floats":      {Temperature: f(1e21), TopP: f(math.Copysign(0, -1))},
		"empty_stop":  {Stop: []string{}},
		"stream_off":  {StreamOptions: &streamOptions{}},
		"only_prompt": {Prompt: new(string)},
	} {
		got, ok := appendParams(nil, &r)
		want, err := json.Marshal(&r)
		if !ok || err != nil || "{"+string(got)+"}" != string(want) {
			t.Errorf("%s:\n got {%s} (%v)\nwant %s (%v)", name, got, ok, want, err)
		}
	}
	if _, ok := appendParams(nil, &request{Temperature: f(math.NaN())}); ok {
		t.Error("NaN temperature encoded")
	}
}

// A whole body is json.Marshal's, whatever precedes and follows the
// messages; a NaN is json.Marshal's error.
func TestEncodeMatchesMarshal(t *testing.T) {
	for _, extra := range []string{"", `{"top_k":5}`} {
		opts := map[string]any{"base_url": "http://127.0.0.1:1/v1", "model": "m"}
		if extra != "" {
			opts["extra_body"] = map[string]any{"top_k": 5}
		}
		c, err := NewClient(t.Context(), sdk.MustOptions(opts))
		if err != nil {
			t.Fatal(err)
		}
		temp := 0.25
		for _, r := range []request{
			{Model: "m", Messages: []sdk.Message{{Role: "user", Content: "hi"}}, Temperature: &temp, MaxTokens: 8},
			{Model: "m", Messages: []sdk.Message{{Role: "user", Content: "hi"}}},
			{Messages: []sdk.Message{{Role: "user", Content: "hi"}}},
			{},
		} {
			got, err := c.encode(&r)
			want, _ := json.Marshal(&r)
			if extra != "" {
				want = []byte(`{"top_k":5` + strings.TrimPrefix(strings.Replace(string(want), "{", ",", 1), ",}"))
				if string(want) == `{"top_k":5` {
					want = []byte(`{"top_k":5}`)
				}
			}
			if err != nil || string(got) != string(want) {
				t.Errorf("extra %q, %+v:\n got %s (%v)\nwant %s", extra, r, got, err, want)
			}
		}
		nan := math.NaN()
		if _, err := c.encode(&request{Temperature: &nan}); err == nil || !strings.Contains(err.Error(), "NaN") {
			t.Errorf("NaN: err = %v, want json's", err)
		}
	}
}

// BenchmarkEncodeBody: a short chat request's body, as every Generate
// encodes it.
func BenchmarkEncodeBody(b *testing.B) {
	c, err := NewClient(b.Context(), sdk.MustOptions(map[string]any{"base_url": "http://127.0.0.1:1/v1", "model": "fake-model"}))
	if err != nil {
		b.Fatal(err)
	}
	temp := 0.0
	r := request{Model: "fake-model", Messages: []sdk.Message{{Role: "user", Content: "The barn is red. The code for door 17 is 4821. The hay is dry.\n\nWhat is the code for door 17?"}}, Temperature: &temp, MaxTokens: 16}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.encode(&r); err != nil {
			b.Fatal(err)
		}
	}
}
