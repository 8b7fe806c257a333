package report_test

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
	"github.com/hayloft/hayloft/kernel/report/reporttest"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// A scorer that declines a value with an empty reason (sdk.WithoutValue(d,
// ""), or a plugin's details {"no_value": ""}): sdk.NoValue and HasValue
// say "no value" (the HTML report shows –, --json null), but the terminal
// summary keys on the reason string being non-empty and prints the number
// with its interval. The summary and the report of one run disagree.
func TestSummaryNoValueWithEmptyReason(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ev := reporttest.Eval{Base: "xl", Model: "model.m", Scorers: []string{"scorer.x"}, Samples: []reporttest.Sample{
		{ID: "a", Depth: -1, Context: "c", Response: "r", Scores: map[string]float64{"scorer.x": 1}},
		{ID: "b", Depth: -1, Context: "d", Response: "r", Scores: map[string]float64{"scorer.x": 0}},
	}}
	id, err := reporttest.Write(ctx, st, reporttest.Run{ConfigPath: "c.hcl", Evals: []reporttest.Eval{ev}, Running: true})
	if err != nil {
		t.Fatal(err)
	}
	m := &store.Metric{Value: 0.625, N: 2, CILow: 0.125, CIHigh: 0.875, Details: sdk.WithoutValue(nil, "")}
	if m.HasValue() {
		t.Fatal("setup: the metric has a value")
	}
	if err := st.FinishEval(ctx, id, ev.JournalName(), store.Outcome{Samples: 2}, map[string]*store.Metric{"scorer.x": m}); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishRun(ctx, id, store.StatusDone); err != nil {
		t.Fatal(err)
	}
	run, err := report.Load(ctx, st, id)
	if err != nil {
		t.Fatal(err)
	}
	var sum bytes.Buffer
	report.WriteSummary(&sum, run)
	raw, _ := json.Marshal(run)
	jr, err := journal.Load(ctx, st, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := html.Write(ctx, &page, st, jr, html.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("--json: %s", raw)
	if strings.Contains(sum.String(), "0.625") {
		t.Errorf("terminal summary shows the declined value (HTML shows it: %v):\n%s", strings.Contains(page.String(), "0.625"), sum.String())
	}
}
