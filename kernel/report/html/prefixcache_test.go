package html_test

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/kernel/report/html"
	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/kernel/report/reporttest"
	"github.com/hayloft/hayloft/kernel/store"
)

// The report shows each row's prefix-cache use as the summary does, read
// from the journal: the responses' figures where they reported, "not
// reported" where they did not, the server's counters where they were
// read; and no section when no row has either.
func TestReportPrefixCache(t *testing.T) {
	ctx := context.Background()
	cached := func(n int) *int { return &n }
	samples := func(cache ...*int) []reporttest.Sample {
		out := make([]reporttest.Sample, len(cache))
		for i, c := range cache {
			out[i] = reporttest.Sample{ID: string(rune('a' + i)), Length: 1000, Question: "question " + string(rune('a'+i)), Response: "r", CachedTokens: c}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		evals []reporttest.Eval
		want  []string // table rows, tags stripped, cells joined by "|"
	}{
		{"every kind", []reporttest.Eval{
			{Base: "e", Model: "model.openai.vllm", Samples: samples(cached(0), cached(750), cached(750), nil)},
			{Base: "e", Model: "model.openai.sglang", Samples: samples(nil, nil),
				PrefixMetrics: &store.PrefixMetrics{Source: "sglang /metrics", PromptTokens: 2000, CachedTokens: 500, SharedRows: 2}},
			{Base: "e", Model: "model.openai.hosted", Samples: samples(nil)},
		}, []string{
			// In the journal's order of rows.
			"e|model.openai.hosted|none|1000|not reported|not read",
			"e|model.openai.sglang|none|2000|not reported|2000|500|1500|25.0%|sglang /metrics (shared by 2 rows at once)",
			"e|model.openai.vllm|none|4000|1500|1500|50.0%|3 of 4 responses|not read",
		}},
		{"nothing reported", []reporttest.Eval{{Base: "e", Model: "model.openai.hosted", Samples: samples(nil)}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hayloft.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			id, err := reporttest.Write(ctx, st, reporttest.Run{Evals: tc.evals})
			if err != nil {
				t.Fatal(err)
			}
			run, err := journal.Load(ctx, st, id, nil)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := html.Write(ctx, &buf, st, run, html.Options{}); err != nil {
				t.Fatal(err)
			}
			page := buf.String()
			start := strings.Index(page, `<section id="prefix-cache">`)
			if tc.want == nil {
				if start >= 0 {
					t.Error("a prefix-cache section where no server said anything")
				}
				return
			}
			if start < 0 {
				t.Fatal("no prefix-cache section")
			}
			section := page[start : start+strings.Index(page[start:], "</section>")]
			var got []string
			for _, row := range regexp.MustCompile(`<tr data-eval="[^"]*">(.*?)</tr>`).FindAllStringSubmatch(section, -1) {
				cells := regexp.MustCompile(`<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(row[1], -1)
				var texts []string
				for _, c := range cells {
					texts = append(texts, c[1])
				}
				got = append(got, strings.Join(texts, "|"))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
