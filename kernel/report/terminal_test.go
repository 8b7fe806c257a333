package report

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWriteEvalTablesFits(t *testing.T) {
	d := 0.042
	rag := []SummaryRow{}
	for _, retr := range []string{"none", "retriever.cosine.hashing", "retriever.bm25.default", "retriever.cosine.local"} {
		for _, model := range []string{"model.baseline.extractive", "model.openai.local"} {
			r := SummaryRow{Eval: "needle_rag", Task: "task.niah.opticks", Model: model, Retriever: retr, Samples: 25, Cached: 25,
				Metrics: []SummaryMetric{{Scorer: "niah", Value: 0.5, CILow: 0.3, CIHigh: 0.7, N: 25}, {Scorer: "scorer.rougel.default", Value: 0.25, CILow: 0.1, CIHigh: 0.4, N: 25, Invalid: 2}}}
			if retr != "none" {
				r.Metrics[0].Delta = &d
			}
			rag = append(rag, r)
		}
	}
	rag[3].Partial, rag[3].Expected, rag[3].Samples, rag[3].Errors = true, 330, 90, 5
	rag[5].Partial, rag[5].Expected = true, 0
	rag[7].Error, rag[7].Metrics = "model.openai.local: the first 3 samples all failed", nil
	quick := []SummaryRow{{Eval: "needle", Task: "task.niah.opticks", Model: "model.baseline.extractive", Retriever: "none", Samples: 40,
		Metrics: []SummaryMetric{{Scorer: "contains", Value: 1, CILow: 1, CIHigh: 1, N: 40}, {Scorer: "niah", Value: 1, CILow: 1, CIHigh: 1, N: 40}}}}
	// XLBench rows of two languages have no value; its reason is noted
	// once, naming the rows only when it does not hold for all of them.
	var xl []SummaryRow
	for i, retr := range []string{"none", "retriever.cosine.tokens", "retriever.cosine.langchain"} {
		m := SummaryMetric{Scorer: "scorer.xlbench.paper", N: 80, Invalid: 3, NoValue: "the row has 2 means (fiction/en, fiction/zh)"}
		if i == 2 {
			m = SummaryMetric{Scorer: "scorer.xlbench.paper", Value: 0.25, CILow: 0.2, CIHigh: 0.3, N: 40}
		}
		xl = append(xl, SummaryRow{Eval: "xlbench", Task: "task.xlbench.zero_shot", Model: "model.baseline.extractive", Retriever: retr, Samples: 80, Metrics: []SummaryMetric{m}})
	}
	for _, tt := range []struct {
		name  string
		rows  []SummaryRow
		width int
	}{{"quickstart", quick, 80}, {"rag", rag, 80}, {"rag", rag, 100}, {"novalue", xl, 100}} {
		var buf bytes.Buffer
		if err := WriteEvalTables(&buf, tt.rows, tt.width); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(buf.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > tt.width {
				t.Errorf("%s at %d: line of %d: %q", tt.name, tt.width, n, line)
			}
		}
		golden(t, filepath.Join("testdata", "summary-"+tt.name+"-"+strconv.Itoa(tt.width)+".txt"), buf.Bytes())
	}
}
