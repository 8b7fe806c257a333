package limiter

import (
	"context"
	"fmt"
	"net/http"
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

// The prefix-cache counters under vLLM's and SGLang's names; two readings
// apart measure what the server did between them.
func TestReadPrefixCounters(t *testing.T) {
	for _, tc := range []struct {
		reports, source string
	}{
		{"vllm", "vllm:prefix_cache_hits_total"},
		{"sglang", "sglang:cached_tokens_total"},
	} {
		t.Run(tc.reports, func(t *testing.T) {
			s := openaitest.NewServer(openaitest.Options{Engine: &openaitest.EngineConfig{Reports: tc.reports}})
			defer s.Close()
			before, err := ReadPrefixCounters(context.Background(), s.BaseURL())
			if err != nil || before.Queries != 0 || before.Hits != 0 || !strings.Contains(before.Source, tc.source) {
				t.Fatalf("before: %+v, %v", before, err)
			}
			doc := strings.Repeat("word ", 64)
			for _, q := range []string{"one", "two"} {
				body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":%q}],"max_tokens":1}`, doc+q)
				resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			after, err := ReadPrefixCounters(context.Background(), s.BaseURL())
			queries, hits, _, _ := s.Engine()
			if err != nil || after.Queries-before.Queries != float64(queries) || after.Hits-before.Hits != float64(hits) || hits == 0 {
				t.Errorf("after: %+v, %v; the engine counted %d queried, %d hit", after, err, queries, hits)
			}
		})
	}
	s := openaitest.NewServer(openaitest.Options{})
	defer s.Close()
	if c, err := ReadPrefixCounters(context.Background(), s.BaseURL()); err == nil {
		t.Errorf("a server without counters gave %+v", c)
	}
}
