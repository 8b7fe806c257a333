package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/kernel/store"
)

// Each row's prefix-cache line: from the responses where they said, else
// from the server's counters marked as an eval-level figure, else "not
// reported"; no lines at all when no row has either.
func TestWritePrefixCache(t *testing.T) {
	row := func(model string, u store.PrefixUse) *Row {
		return &Row{Name: "e", Model: model, Retriever: "none", PrefixCache: u}
	}
	responses := row("a", store.PrefixUse{Responses: 2, Reported: 2, PromptTokens: 1000, CachedTokens: 750, ComputedTokens: 250})
	counters := row("b", store.PrefixUse{Responses: 2, PromptTokens: 1000,
		Metrics: &store.PrefixMetrics{Source: "vLLM /metrics", PromptTokens: 1000, CachedTokens: 500, SharedRows: 2}})
	silent := row("c", store.PrefixUse{Responses: 2, PromptTokens: 1000})
	for _, tc := range []struct {
		name string
		rows []*Row
		want []string
	}{
		{"all kinds", []*Row{responses, counters, silent}, []string{
			"prefix cache e / a / none: prompt 1000 tokens, cached 750, computed 250, hit rate 75.0%",
			"prefix cache e / b / none: prompt 1000 tokens, cached not reported; the server's counters over the eval (not per sample, shared by 2 rows at once): prompt 1000, cached 500, computed 500, hit rate 50.0% (vLLM /metrics)",
			"prefix cache e / c / none: prompt 1000 tokens, cached not reported",
		}},
		{"counters only", []*Row{counters}, []string{"e / b / none: prompt 1000 tokens, cached not reported; the server's counters"}},
		{"nothing", []*Row{silent}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			writePrefixCache(&buf, &Run{Evals: tc.rows})
			got := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			if tc.want == nil && got != "" {
				t.Errorf("lines where no server said anything:\n%s", got)
			}
		})
	}
}
