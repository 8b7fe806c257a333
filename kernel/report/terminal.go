package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hayloft/hayloft/sdk"
)

// SummaryRow is one eval row as the terminal summary shows it.
type SummaryRow struct {
	Eval, Task, Model, Retriever string // Retriever "none" or "" for full context
	Samples, Cached, Errors      int
	Truncated                    int
	// Expected is how many samples the row was to run; 0 when unknown.
	Expected int
	// Partial: the run stopped before the row finished.
	Partial bool
	Metrics []SummaryMetric
	Error   string
}

// SummaryMetric is one scorer's aggregate in a SummaryRow.
type SummaryMetric struct {
	Scorer        string
	Value         float64
	CILow, CIHigh float64
	N, Invalid    int
	Delta         *float64 // against the full-context row, for a retrieval row
	// NoValue is why the scorer gave no single value (sdk.NoValueKey);
	// its counts and tables still stand.
	NoValue string
}

// DefaultWidth is the terminal width the summary fits when the real one is
// not known.
const DefaultWidth = 100

// WriteEvalTables writes one table per config eval, its rows the eval's
// models and retrievers, so that each fits width: scorer headers are short
// ("rougel", not "scorer.rougel.default"), a long CI goes under its value's
// column rather than beside it, and columns that still do not fit continue
// in a further block. A row the run did not finish says so: "95 of 330".
func WriteEvalTables(w io.Writer, rows []SummaryRow, width int) error {
	if width <= 0 {
		width = DefaultWidth
	}
	var order []string
	byEval := map[string][]SummaryRow{}
	for _, r := range rows {
		if _, ok := byEval[r.Eval]; !ok {
			order = append(order, r.Eval)
		}
		byEval[r.Eval] = append(byEval[r.Eval], r)
	}
	for i, name := range order {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := RenderTable(w, evalTable(name, byEval[name]), width); err != nil {
			return err
		}
	}
	return nil
}

// evalTable lays one eval's rows out as a table.
func evalTable(name string, rows []SummaryRow) sdk.Table {
	t := sdk.Table{ID: "summary." + name, Title: name}
	if len(rows) > 0 && rows[0].Task != "" {
		t.Title = name + " · " + rows[0].Task
	}
	text := func(s string) sdk.Cell { return sdk.Cell{Text: s} }
	// Counts that are zero in every row are left out: they say nothing and
	// cost a terminal's width.
	t.Columns = []sdk.Column{{Key: "samples", Label: "samples"}}
	for _, c := range []struct {
		key, label string
		get        func(SummaryRow) int
	}{
		{"cached", "cached", func(r SummaryRow) int { return r.Cached }},
		{"errors", "errors", func(r SummaryRow) int { return r.Errors }},
		{"truncated", "trunc", func(r SummaryRow) int { return r.Truncated }},
	} {
		for _, r := range rows {
			if c.get(r) != 0 {
				t.Columns = append(t.Columns, sdk.Column{Key: c.key, Label: c.label})
				break
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range rows {
		for _, m := range r.Metrics {
			if !seen[m.Scorer] {
				seen[m.Scorer] = true
				t.Columns = append(t.Columns, sdk.Column{Key: m.Scorer, Label: ShortRef(m.Scorer, "scorer.")})
			}
		}
	}
	// Why a scorer gave no value, once per scorer and reason: the rows it
	// names are left out when it holds for every row.
	noValue := map[[2]string][]string{}
	var noValueOrder [][2]string
	for _, r := range rows {
		label := ShortRef(r.Model, "model.")
		if r.Retriever != "" && r.Retriever != "none" {
			label += " / " + ShortRef(r.Retriever, "retriever.")
		}
		samples := strconv.Itoa(r.Samples)
		if r.Partial {
			if r.Expected > 0 {
				samples = fmt.Sprintf("%d of %d", r.Samples+r.Errors, r.Expected)
			} else {
				samples += " (partial)"
			}
		}
		cells := map[string]sdk.Cell{"samples": text(samples), "cached": text(strconv.Itoa(r.Cached)),
			"errors": text(strconv.Itoa(r.Errors)), "truncated": text(strconv.Itoa(r.Truncated))}
		for _, m := range r.Metrics {
			if m.N == 0 {
				continue
			}
			if m.NoValue != "" {
				cells[m.Scorer] = text(Missing)
				k := [2]string{m.Scorer, m.NoValue}
				if noValue[k] == nil {
					noValueOrder = append(noValueOrder, k)
				}
				noValue[k] = append(noValue[k], label)
				continue
			}
			s := fmt.Sprintf("%.3f [%.3f, %.3f]", m.Value, m.CILow, m.CIHigh)
			if m.Delta != nil {
				s += fmt.Sprintf(" Δ%+.3f", *m.Delta)
			}
			if m.Invalid > 0 {
				s += fmt.Sprintf(" (%d invalid)", m.Invalid)
			}
			cells[m.Scorer] = text(s)
		}
		t.Rows = append(t.Rows, sdk.Row{Label: label, Cells: cells})
		if r.Error != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("%s failed: %s", label, r.Error))
		}
	}
	for _, k := range noValueOrder {
		who := ShortRef(k[0], "scorer.")
		if labels := noValue[k]; len(labels) < len(rows) {
			who += " (" + strings.Join(labels, "; ") + ")"
		}
		t.Notes = append(t.Notes, fmt.Sprintf("%s: no single value: %s", who, k[1]))
	}
	return t
}

// ShortRef drops a component reference's kind prefix ("model.openai.local"
// → "openai.local"); the table's place already says the kind.
func ShortRef(ref, prefix string) string {
	if s, ok := strings.CutPrefix(ref, prefix); ok && s != "" {
		return s
	}
	return ref
}
