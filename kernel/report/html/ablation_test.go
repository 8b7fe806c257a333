package html_test

import (
	"bytes"
	"context"
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
	rows := []struct {
		info  store.EvalInfo
		value float64
		err   string
	}{
		{store.EvalInfo{Name: "qa/model.m/none", Eval: "qa", Task: "task.t", Model: "model.m", Scorers: []string{"exact"}}, 0.5, "server went away"},
		{store.EvalInfo{Name: "qa/model.m/retriever.bm25", Eval: "qa", Task: "task.t", Model: "model.m", Retriever: "retriever.bm25", Scorers: []string{"exact"}}, 0.75, ""},
	}
	for i, r := range rows {
		r.info.Position = i
		if err := st.PutEval(ctx, run, r.info); err != nil {
			t.Fatal(err)
		}
		smp := &sdk.Sample{ID: "a", Length: sdk.Length{Tokens: 10}, Depth: -1}
		if err := st.PutResult(ctx, run, r.info.Name, smp, store.SampleMeta{}, []store.NamedScore{{Scorer: "exact", Score: &sdk.ScoreResponse{Value: r.value}}}); err != nil {
			t.Fatal(err)
		}
		m := map[string]*store.Metric{"exact": {Value: r.value, N: 4}}
		if err := st.FinishEval(ctx, run, r.info.Name, store.Outcome{Samples: 4, Error: r.err}, m); err != nil {
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
	_, summaryHasDelta := sum.Evals[1].Delta["exact"]
	jr, err := journal.Load(ctx, st, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := html.Write(ctx, &buf, st, jr, html.Options{}); err != nil {
		t.Fatal(err)
	}
	htmlHasDelta := strings.Contains(buf.String(), `<td class="num delta">+0.250</td>`)
	if summaryHasDelta != htmlHasDelta {
		t.Errorf("Δ of the retrieval row: summary/--json has one: %v; HTML has one: %v", summaryHasDelta, htmlHasDelta)
	}
}
