package html_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hayloft/hayloft/kernel/report/html"
	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/kernel/report/reporttest"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// An XLBench run over two languages killed during its retrieval row (or
// drawn live by `hayloft view` while that row runs): the full-context row
// journaled its aggregate, which declines a value; the retrieval row has
// none, so the journal reader recomputes the plain mean of its raw sample
// scores, pooled over languages and subtasks (accuracy beside raw MAE).
// The ablation table prints that number, without the † the metrics table
// gives a recomputed value, in the column where the other row shows –.
func TestAblationShowsRecomputedPooledValue(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const sc = "scorer.xlbench.paper"
	row := func(retriever string) reporttest.Eval {
		var ss []reporttest.Sample
		for i := range 20 {
			lang, v := "en", float64(i%2) // fiction/en accuracy
			if i >= 10 {
				lang, v = "zh", 3 // paper rating_score: raw MAE on 0-10
			}
			ss = append(ss, reporttest.Sample{ID: fmt.Sprintf("s%02d", i), Depth: -1, Context: fmt.Sprint("c", i), Response: "r",
				Metadata: map[string]any{"language": lang}, Scores: map[string]float64{sc: v}})
		}
		return reporttest.Eval{Base: "xlbench", Model: "model.m", Retriever: retriever, Scorers: []string{sc}, Samples: ss}
	}
	full, rag := row(""), row("retriever.cosine.tokens")
	id, err := reporttest.Write(ctx, st, reporttest.Run{ConfigPath: "c.hcl", Evals: []reporttest.Eval{full, rag}, Running: true})
	if err != nil {
		t.Fatal(err)
	}
	declined := &store.Metric{N: 20, Details: sdk.WithoutValue(nil, "the row has 2 means (fiction/en, paper/zh)")}
	if err := st.FinishEval(ctx, id, full.JournalName(), store.Outcome{Samples: 20}, map[string]*store.Metric{sc: declined}); err != nil {
		t.Fatal(err)
	}
	// Killed here: the retrieval row never finished.
	jr, err := journal.Load(ctx, st, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := html.Write(ctx, &buf, st, jr, html.Options{}); err != nil {
		t.Fatal(err)
	}
	ablation := regexp.MustCompile(`(?s)<section id="ablation">.*?</section>`).FindString(buf.String())
	if ablation == "" {
		t.Fatal("no ablation section")
	}
	// (0.5*10 + 3*10)/20 = 1.75: accuracy and MAE averaged together.
	if regexp.MustCompile(`<td class="num">1\.750</td>`).MatchString(ablation) {
		t.Errorf("the ablation table shows the pooled recomputed 1.750 of a scorer that declines a value:\n%s", ablation)
	}
}
