package plugin

import (
	"reflect"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

func ptr[T any](v T) *T { return &v }

func TestSampleRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   *sdk.Sample
	}{
		{"nil", nil},
		{"minimal", &sdk.Sample{ID: "a", Depth: -1}},
		{"full", &sdk.Sample{
			ID:           "niah-128k-0.25",
			Context:      "long document 长文本",
			Question:     "what is the magic number?",
			Messages:     []sdk.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: sdk.ContextSlot + "\n" + sdk.QuestionSlot}},
			Choices:      []string{"A", "B"},
			Targets:      []string{"42", "forty-two"},
			Length:       sdk.Length{Tokens: 131072, Tokenizer: "cl100k_base"},
			Depth:        0.25,
			Grid:         &sdk.GridPoint{Length: 128000, Depth: 0.25},
			Language:     "zh",
			Subtask:      "reasoning",
			MaxNewTokens: 64,
			Window:       2000,
			// JSON numbers decode as float64, so the test uses float64.
			Metadata: map[string]any{"stars": []any{1.0, 2.0}, "nested": map[string]any{"k": "v"}, "ok": true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := sampleToProto(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sampleFromProto(p)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.in) {
				t.Errorf("round trip:\n got %#v\nwant %#v", got, tt.in)
			}
		})
	}
}

func TestSampleMetadataNotJSON(t *testing.T) {
	_, err := sampleToProto(&sdk.Sample{ID: "x", Metadata: map[string]any{"ch": make(chan int)}})
	if err == nil {
		t.Fatal("want an error for a channel in metadata")
	}
}

func TestGenerateRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		req  *sdk.GenerateRequest
		resp *sdk.GenerateResponse
	}{
		{"slot 0 is a slot",
			&sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: "hi"}}, Slot: ptr(0)},
			&sdk.GenerateResponse{Text: "hello"}},
		{"defaults",
			&sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: "hi"}}},
			&sdk.GenerateResponse{Text: "hello"}},
		{"everything",
			&sdk.GenerateRequest{
				Messages: []sdk.Message{{Role: "user", Content: "hi"}},
				Params:   sdk.GenerationParams{Temperature: ptr(0.0), TopP: ptr(0.9), MaxTokens: 32, Stop: []string{"\n"}, Seed: ptr(int64(7))},
				Sample:   &sdk.Sample{ID: "s", Choices: []string{"x"}},
				Slot:     ptr(3),
			},
			&sdk.GenerateResponse{Text: "ok", FinishReason: "stop", Usage: sdk.Usage{PromptTokens: 3, CompletionTokens: 1},
				Attempts: []sdk.Attempt{{Status: 429, LatencyMS: 1.5, Error: "slow down"}, {Status: 200, LatencyMS: 2}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := generateRequestToProto(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			gotReq, err := generateRequestFromProto(p)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotReq, tt.req) {
				t.Errorf("request:\n got %#v\nwant %#v", gotReq, tt.req)
			}
			if got := generateResponseFromProto(generateResponseToProto(tt.resp)); !reflect.DeepEqual(got, tt.resp) {
				t.Errorf("response:\n got %#v\nwant %#v", got, tt.resp)
			}
		})
	}
}

func TestScoreAggregateRetrieveTokenizeRoundTrip(t *testing.T) {
	sc := &sdk.ScoreResponse{Value: 0.5, Invalid: true, Details: map[string]any{"why": "unparsable"}, Stats: []float64{1, 2, 3}}
	p, err := scoreResponseToProto(sc)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := scoreResponseFromProto(p); err != nil || !reflect.DeepEqual(got, sc) {
		t.Errorf("score: got %#v, %v; want %#v", got, err, sc)
	}

	ag := &sdk.AggregateResponse{Value: 0.7, N: 10, Invalid: 2, CILow: 0.6, CIHigh: 0.8, Details: map[string]any{"bp": 0.9}}
	pa, err := aggregateResponseToProto(ag)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := aggregateResponseFromProto(pa); err != nil || !reflect.DeepEqual(got, ag) {
		t.Errorf("aggregate: got %#v, %v; want %#v", got, err, ag)
	}

	rr := &sdk.RetrieveResponse{Context: "kept", Chunks: []sdk.Chunk{{ID: 3, Offset: 1500, Score: 0.42}}, Details: map[string]any{"k": 5.0}}
	pr, err := retrieveResponseToProto(rr)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := retrieveResponseFromProto(pr); err != nil || !reflect.DeepEqual(got, rr) {
		t.Errorf("retrieve: got %#v, %v; want %#v", got, err, rr)
	}

	tr := &sdk.TokenizeResponse{Tokens: [][]int{{1, 2, 100257}, {}}, Tokenizer: "model:x"}
	if got := tokenizeResponseFromProto(tokenizeResponseToProto(tr)); !reflect.DeepEqual(got, tr) {
		t.Errorf("tokenize: got %#v, want %#v", got, tr)
	}
}

func BenchmarkSampleToProto(b *testing.B) {
	s := &sdk.Sample{ID: "x", Context: string(make([]byte, 16<<10)), Question: "q", Targets: []string{"a"},
		Messages: sdk.DefaultMessages(), Metadata: map[string]any{"k": 1}}
	b.ReportAllocs()
	for b.Loop() {
		p, err := sampleToProto(s)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sampleFromProto(p); err != nil {
			b.Fatal(err)
		}
	}
}
