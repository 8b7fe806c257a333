package calibrate

import (
	"context"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
)

// Against the engine paced in real time: three streamed requests, none
// served from the prefix cache, every token asked for generated, and both
// rates measured. The rates themselves depend on the machine's load; what
// holds whatever the load is that prefill, many tokens a step, is measured
// faster than decode, one token a step.
func TestMeasure(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{Engine: &openaitest.EngineConfig{RealTime: true, StepSeconds: 0.004, TokenSeconds: 1.0 / 20000}})
	defer srv.Close()
	res, err := Measure(context.Background(), srv.BaseURL(), Options{Model: "fake-model", ShortWords: 64, LongWords: 2048, DecodeTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Requests != 3 || srv.Requests("/v1/chat/completions") != 3 {
		t.Errorf("%d requests counted, the server saw %d; want 3", res.Requests, srv.Requests("/v1/chat/completions"))
	}
	queries, hits, _, _ := srv.Engine()
	if hits != 0 || queries < 2048 {
		t.Errorf("the engine found %d of %d prompt tokens cached; calibration prompts must share nothing", hits, queries)
	}
	if !strings.Contains(res.Note, "30 tokens after the first") {
		t.Errorf("note %q: want the two answers' 2 × 15 tokens after the first timed", res.Note)
	}
	if !(res.PrefillTPS > res.DecodeTPS && res.DecodeTPS > 0) {
		t.Errorf("prefill %.0f tok/s, decode %.0f tok/s: want prefill faster than decode", res.PrefillTPS, res.DecodeTPS)
	}
}

// A server that does not stream, or answers an error, is a clear error.
func TestMeasureErrors(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{Faults: []openaitest.Fault{openaitest.Fault500}})
	defer srv.Close()
	_, err := Measure(context.Background(), srv.BaseURL(), Options{})
	if err == nil || !strings.Contains(err.Error(), "warm-up") || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("got %v, want the warm-up's HTTP 500", err)
	}
}
