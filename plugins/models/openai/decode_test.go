package openai

import (
	"encoding/json"
	"reflect"
	"testing"
)

// usualAnswers are answers as servers send them; the fast path must take
// each (else it would be dead code) and agree with encoding/json on it.
var usualAnswers = []string{
	// OpenAI chat, with cached tokens.
	`{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"The code is 4821.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":30,"completion_tokens":6,"total_tokens":36,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0}},"system_fingerprint":"fp_1"}`,
	// vLLM chat.
	`{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","reasoning_content":null,"content":"caf\u00e9 \"x\"\n","tool_calls":[]},"logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8,"prompt_tokens_details":null},"prompt_logprobs":null}`,
	// llama-server, with timings.
	`{"choices":[{"finish_reason":"stop","index":0,"message":{"role":"assistant","content":"blue"}}],"created":1,"model":"x","object":"chat.completion","usage":{"completion_tokens":1,"prompt_tokens":9,"total_tokens":10},"id":"c","timings":{"prompt_n":1,"cache_n":8,"predicted_ms":1.5}}`,
	// Legacy completions.
	`{"id":"cmpl-3","object":"text_completion","choices":[{"index":0,"text":" blue","logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":1}}`,
	// A null content, and no usage.
	`{"choices":[{"message":{"content":null},"finish_reason":null}]}`,
}

// unusualAnswers are answers the fast path must leave to encoding/json.
var unusualAnswers = []string{
	`{"Choices":[{"message":{"content":"x"}}]}`,              // json matches keys in any case
	`{"choices":[{"message":{"content":"x"}}],"choices":[]}`, // a wanted key twice
	`{"choices":[{"message":{"content":1}}]}`,                // a type json refuses
	`{"choices":[],"usage":{"prompt_tokens":1.5}}`,           // not an integer
	`{"choices":[],"usage":{"prompt_tokens":"3"}}`,           // a number as text
	`{"choices":[{"message":{"content":"x"}}]`,               // broken
	`[]`, `null`, `{"choices":{}}`, `{"usage":{"prompt_tokens_details":{"cached_tokens":true}}}`,
	"{\"choi\u212aes\":[]}", // not ASCII: json's folding decides
}

func TestDecodeFastTakesUsualAnswers(t *testing.T) {
	for _, a := range usualAnswers {
		var out generateResponse
		if !out.decodeFast([]byte(a)) {
			t.Errorf("fast path refused %s", a)
		}
		agreeDecode(t, []byte(a))
	}
	for _, a := range unusualAnswers {
		var out generateResponse
		if out.decodeFast([]byte(a)) {
			t.Errorf("fast path took %s", a)
		}
		agreeDecode(t, []byte(a))
	}
}

func FuzzDecodeFastAgreesWithEncodingJSON(f *testing.F) {
	for _, a := range append(usualAnswers, unusualAnswers...) {
		f.Add([]byte(a))
	}
	f.Fuzz(agreeDecode)
}

// agreeDecode: whatever the fast path takes, encoding/json decodes alike.
func agreeDecode(t *testing.T, raw []byte) {
	t.Helper()
	var got generateResponse
	if !got.decodeFast(raw) {
		return
	}
	var want generateResponse
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("fast path took %q, encoding/json: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("fast path on %q:\n got %s\nwant %s", raw, g, w)
	}
}
