package openai

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
)

// The cached prompt tokens come from wherever the server puts them:
// usage.prompt_tokens_details (vLLM, SGLang, hosted APIs) or llama-server's
// timings.cache_n; a server that says nothing leaves them unknown.
func TestCachedTokens(t *testing.T) {
	doc := strings.Repeat("word ", 40) // two full 16-token blocks and 8 over
	for _, tc := range []struct {
		name   string
		engine *openaitest.EngineConfig
		want   []int // per request; nil: not reported
	}{
		{"usage details", &openaitest.EngineConfig{}, []int{0, 32}},
		{"llama-server timings", &openaitest.EngineConfig{Reports: "llamacpp"}, []int{0, 32}},
		{"not reported", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openaitest.NewServer(openaitest.Options{Engine: tc.engine})
			defer s.Close()
			c := newTestClient(t, s.BaseURL(), nil)
			for i, q := range []string{"first question", "second question"} {
				resp, err := c.Generate(context.Background(), chat(doc+q))
				if err != nil {
					t.Fatal(err)
				}
				got := resp.Usage.CachedTokens
				switch {
				case tc.want == nil && got != nil:
					t.Errorf("request %d: cached %d from a server that does not say", i, *got)
				case tc.want != nil && (got == nil || *got != tc.want[i]):
					t.Errorf("request %d: cached %v, want %d", i, got, tc.want[i])
				}
			}
		})
	}
}

// The kernel's slot goes out as llama-server's id_slot, and the answer's
// timings.cache_n comes back: the second question reuses the document only
// in the slot that computed it.
func TestSlotSentAsIDSlot(t *testing.T) {
	doc := strings.Repeat("word ", 40)
	s := openaitest.NewServer(openaitest.Options{Llama: &openaitest.LlamaConfig{Slots: 3}})
	defer s.Close()
	c := newTestClient(t, s.BaseURL(), nil)
	for i, tc := range []struct {
		slot   *int
		cached int
	}{
		{ptrInt(2), 0},
		{ptrInt(2), 40}, // the document, in the slot that holds it
		{ptrInt(1), 0},  // another slot computes it again
		{nil, 40},       // no slot: llama-server picks the most similar idle one
	} {
		req := chat(doc + " question")
		req.Slot = tc.slot
		resp, err := c.Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Usage.CachedTokens; got == nil || *got != tc.cached {
			t.Errorf("request %d: cached %v, want %d", i, got, tc.cached)
		}
	}
	st := s.Llama()
	if st.Pinned != 3 || !slices.Equal(st.Slots[doc+" question"][:3], []int{2, 2, 1}) {
		t.Errorf("pinned %d, slots %v", st.Pinned, st.Slots)
	}
}

func ptrInt(n int) *int { return &n }
