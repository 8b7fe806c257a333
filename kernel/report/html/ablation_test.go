package html_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/kernel/report"
	"github.com/hayloft/hayloft/kernel/report/html"
	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// The brief's rule: the summary, --json and the HTML report of one run give
// the same numbers. report.addDeltas gives no Δ against a full-context row
// that failed (Error set); the HTML ablation table prints one.
func TestDeltaOfAFailedControlRowAgrees(t *testing.T) {
	sum, page := ablationRun(t, []ablationRow{
		{store.EvalInfo{Name: "qa/model.m/none", Eval: "qa", Task: "task.t", Model: "model.m", Scorers: []string{"exact"}}, &store.Metric{Value: 0.5, N: 4}, "server went away"},
		{store.EvalInfo{Name: "qa/model.m/retriever.bm25", Eval: "qa", Task: "task.t", Model: "model.m", Retriever: "retriever.bm25", Scorers: []string{"exact"}}, &store.Metric{Value: 0.75, N: 4}, ""},
	})
	_, summaryHasDelta := sum.Evals[1].Delta["exact"]
	htmlHasDelta := strings.Contains(page, `<td class="num delta">+0.250</td>`)
	if summaryHasDelta != htmlHasDelta {
		t.Errorf("Δ of the retrieval row: summary/--json has one: %v; HTML has one: %v", summaryHasDelta, htmlHasDelta)
	}
}

// A metric whose scorer declined a single value (sdk.NoValueKey; XLBench
// over two languages) shows none anywhere: no Δ against it in the summary,
// --json or the ablation table, a missing value and CI with the reason in
// the HTML, and null in the JSON.
func TestNoValueShowsNowhere(t *testing.T) {
	const reason = "the row has 2 means (fiction/en, fiction/zh)"
	declined := func(v float64) *store.Metric {
		return &store.Metric{Value: v, N: 4, CILow: v - 0.1, CIHigh: v + 0.1, Details: sdk.WithoutValue(nil, reason)}
	}
	sum, page := ablationRun(t, []ablationRow{
		{store.EvalInfo{Name: "xl/model.m/none", Eval: "xl", Task: "task.t", Model: "model.m", Scorers: []string{"xlbench"}}, declined(0.5), ""},
		{store.EvalInfo{Name: "xl/model.m/retriever.bm25", Eval: "xl", Task: "task.t", Model: "model.m", Retriever: "retriever.bm25", Scorers: []string{"xlbench"}}, &store.Metric{Value: 0.75, N: 4, CILow: 0.7, CIHigh: 0.8}, ""},
		{store.EvalInfo{Name: "xl/model.m/retriever.cos", Eval: "xl", Task: "task.t", Model: "model.m", Retriever: "retriever.cos", Scorers: []string{"xlbench"}}, declined(0.25), ""},
	})
	for _, ev := range sum.Evals {
		if _, ok := ev.Delta["xlbench"]; ok {
			t.Errorf("%s: Δ %v against or of a metric without a value", ev.Name, ev.Delta)
		}
	}
	raw, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(raw), `"value":null`) != 2 || strings.Contains(string(raw), `"value":0.5`) {
		t.Errorf("--json: want value null for the two declined rows: %s", raw)
	}
	for _, bad := range []string{"0.500", "0.250", "[0.400, 0.600]", "+0.250", "-0.500"} {
		if strings.Contains(page, bad) {
			t.Errorf("HTML shows %q of a metric without a value", bad)
		}
	}
	if strings.Count(page, "xlbench: no single value: "+reason) != 2 || !strings.Contains(page, "0.750") {
		t.Errorf("HTML: want the reason under each declined row's metrics and the other row's value")
	}
}

type ablationRow struct {
	info   store.EvalInfo
	metric *store.Metric
	err    string
}

// ablationRun journals one run of rows, each with one sample scored by the
// row's one scorer and the given aggregate, and returns its summary and its
// HTML report.
func ablationRun(t *testing.T, rows []ablationRow) (*report.Run, string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	run, err := st.BeginRun(ctx, store.RunInfo{ConfigPath: "rag.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		r.info.Position = i
		if err := st.PutEval(ctx, run, r.info); err != nil {
			t.Fatal(err)
		}
		scorer := r.info.Scorers[0]
		smp := &sdk.Sample{ID: "a", Length: sdk.Length{Tokens: 10}, Depth: -1}
		if err := st.PutResult(ctx, run, r.info.Name, smp, store.SampleMeta{}, []store.NamedScore{{Scorer: scorer, Score: &sdk.ScoreResponse{Value: r.metric.Value}}}); err != nil {
			t.Fatal(err)
		}
		if err := st.FinishEval(ctx, run, r.info.Name, store.Outcome{Samples: 4, Error: r.err}, map[string]*store.Metric{scorer: r.metric}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.FinishRun(ctx, run, store.StatusFailed); err != nil {
		t.Fatal(err)
	}
	sum, err := report.Load(ctx, st, run)
	if err != nil {
		t.Fatal(err)
	}
	jr, err := journal.Load(ctx, st, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := html.Write(ctx, &buf, st, jr, html.Options{}); err != nil {
		t.Fatal(err)
	}
	return sum, buf.String()
}
