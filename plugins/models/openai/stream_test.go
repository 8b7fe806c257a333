package openai

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

// A streamed answer, assembled, is the answer the server sends whole: text,
// finish reason and usage with its cached tokens, from every kind of server.
func TestStreamSameAnswer(t *testing.T) { eachTransport(t, testStreamSameAnswer) }

func testStreamSameAnswer(t *testing.T, transport string) {
	doc := strings.Repeat("word ", 40)
	reqs := []*sdk.GenerateRequest{
		chat(doc + "first question"),
		chat(doc + "second question"),
		{Messages: []sdk.Message{{Role: "user", Content: doc + "a long answer please"}}, Params: sdk.GenerationParams{MaxTokens: 3}},
		chat(""),
	}
	for _, tc := range []struct {
		name string
		opts openaitest.Options
	}{
		{"plain", openaitest.Options{}},
		{"vllm engine", openaitest.Options{Engine: &openaitest.EngineConfig{}}},
		{"llama-server engine", openaitest.Options{Engine: &openaitest.EngineConfig{Reports: "llamacpp"}}},
		{"llama-server slots", openaitest.Options{Llama: &openaitest.LlamaConfig{Slots: 2}}},
		// The test server answers legacy completions whole, as a proxy
		// that ignores "stream" would: the client takes the whole answer.
		{"completions", openaitest.Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answers := map[string][]*sdk.GenerateResponse{}
			for _, mode := range []string{StreamOff, StreamOn} {
				s := openaitest.NewServer(tc.opts)
				extra := map[string]any{"stream": mode}
				if tc.name == "completions" {
					extra["endpoint"] = "completions"
				}
				c := newTransportClient(t, transport, s.BaseURL(), extra)
				for _, req := range reqs {
					resp, err := c.Generate(context.Background(), req)
					if err != nil {
						t.Fatalf("%s: %v", mode, err)
					}
					resp.Attempts = nil
					answers[mode] = append(answers[mode], resp)
				}
				s.Close()
			}
			for i, off := range answers[StreamOff] {
				on := answers[StreamOn][i]
				if !reflect.DeepEqual(off, on) {
					t.Errorf("request %d: streamed %+v (cached %v), whole %+v (cached %v)", i, on, on.Usage.CachedTokens, off, off.Usage.CachedTokens)
				}
			}
			if tc.opts.Engine != nil || tc.opts.Llama != nil {
				if got := answers[StreamOn][1].Usage.CachedTokens; got == nil || *got == 0 {
					t.Errorf("second question streamed: cached %v, want the document", got)
				}
			}
		})
	}
}

// With the kernel listening (sdk.WithPrefillHook), "auto" streams and the
// first token calls the hook once, before the answer is back, in process
// and across the plugin protocol; "off" never calls it.
func TestStreamReportsPrefill(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{Engine: &openaitest.EngineConfig{RealTime: true}})
	defer srv.Close()
	set := sdk.NewSet("test", "0")
	set.RegisterModel(Name, New)
	opts := func(mode string) map[string]any {
		return map[string]any{"base_url": srv.BaseURL(), "model": "fake-model", "stream": mode}
	}
	for _, tc := range []struct {
		name  string
		model sdk.Model
		want  []string
	}{
		{"auto in process", newTestClient(t, srv.BaseURL(), map[string]any{"stream": StreamAuto}), []string{"prefilled", "answered"}},
		{"auto over gRPC", sdktest.Model(t, set, Name, opts(StreamAuto)), []string{"prefilled", "answered"}},
		{"off over gRPC", sdktest.Model(t, set, Name, opts(StreamOff)), []string{"answered"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				events []string
				calls  atomic.Int32
			)
			add := func(e string) {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}
			ctx := sdk.WithPrefillHook(context.Background(), func() {
				calls.Add(1)
				add("prefilled")
			})
			resp, err := tc.model.Generate(ctx, chat(tc.name+strings.Repeat(" word", 200)))
			if err != nil {
				t.Fatal(err)
			}
			add("answered")
			if resp.Text == "" || resp.Usage.PromptTokens == 0 {
				t.Errorf("answer %+v", resp)
			}
			mu.Lock()
			defer mu.Unlock()
			if !reflect.DeepEqual(events, tc.want) {
				t.Errorf("events %v, want %v", events, tc.want)
			}
		})
	}
}

func TestStreamOption(t *testing.T) {
	if _, err := NewClient(context.Background(), sdk.MustOptions(map[string]any{"base_url": "http://127.0.0.1:1/v1", "stream": "yes"})); err == nil || !strings.Contains(err.Error(), "stream") {
		t.Errorf("stream = \"yes\": err = %v, want a config error naming stream", err)
	}
	if _, err := NewClient(context.Background(), sdk.MustOptions(map[string]any{"base_url": "http://127.0.0.1:1/v1", "extra_body": map[string]any{"stream_options": map[string]any{}}})); err == nil {
		t.Error("extra_body.stream_options accepted")
	}
}
