package limiter

import (
	"context"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
)

// Each server kind's metadata gives the cache; a server with none fails,
// so that the caller falls back to its default and says so.
func TestLearnPrefixCache(t *testing.T) {
	for _, tc := range []struct {
		reports string
		engine  bool
		want    int
		source  string
	}{
		{"vllm", true, 16 * 1000, "block_size 16 × num_gpu_blocks 1000"},
		{"sglang", true, 16 * 1000, "max_total_num_tokens"},
		{"llamacpp", true, 16 * 1000, "n_ctx of one slot"},
		{"none", false, 0, ""},
	} {
		t.Run(tc.reports, func(t *testing.T) {
			opts := openaitest.Options{}
			if tc.engine {
				opts.Engine = &openaitest.EngineConfig{NumBlocks: 1000, Reports: tc.reports}
			}
			s := openaitest.NewServer(opts)
			defer s.Close()
			pc, err := LearnPrefixCache(context.Background(), s.BaseURL())
			if tc.want == 0 {
				if err == nil {
					t.Errorf("a server without cache metadata gave %+v", pc)
				}
				return
			}
			if err != nil || pc.Tokens != tc.want || !strings.Contains(pc.Source, tc.source) {
				t.Errorf("got %+v, %v; want %d tokens from %q", pc, err, tc.want, tc.source)
			}
		})
	}
}

// llama-server's slots come from /props; other servers have none.
func TestLearnSlots(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts openaitest.Options
		want int
	}{
		{"llama-server", openaitest.Options{Llama: &openaitest.LlamaConfig{Slots: 6}}, 6},
		{"vLLM", openaitest.Options{Engine: &openaitest.EngineConfig{}}, 0},
		{"plain", openaitest.Options{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openaitest.NewServer(tc.opts)
			defer s.Close()
			n, err := LearnSlots(context.Background(), s.BaseURL())
			if n != tc.want || (err == nil) != (tc.want > 0) {
				t.Errorf("got %d, %v; want %d", n, err, tc.want)
			}
		})
	}
}
