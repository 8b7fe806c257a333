package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/hayloft/hayloft/sdk"
)

// WriteSummary writes the summary at DefaultWidth.
func WriteSummary(w io.Writer, res *Run) { WriteSummaryWidth(w, res, DefaultWidth) }

// WriteSummaryWidth writes the human summary to fit width columns: one
// table per eval, its rows the models and retrievers, its columns short
// scorer names (see WriteEvalTables); then the benchmarks' own tables; then
// the bad cases that benchmarks classify, the rows that failed, and the
// run's ID and kernel overhead.
func WriteSummaryWidth(w io.Writer, res *Run, width int) {
	var scorers []string
	seen := map[string]bool{}
	for _, ev := range res.Evals {
		for name := range ev.Metrics {
			if !seen[name] {
				seen[name] = true
				scorers = append(scorers, name)
			}
		}
	}
	sort.Strings(scorers)
	var rows []SummaryRow
	for _, ev := range res.Evals {
		r := SummaryRow{Eval: ev.Name, Task: ev.Task, Model: ev.Model, Retriever: ev.Retriever, Samples: ev.Samples,
			Cached: ev.Cached, Errors: ev.Errors, Truncated: ev.Truncated, Expected: ev.Expected, Partial: ev.partial(res.Interrupted)}
		order := ev.Scorers
		if len(order) == 0 {
			order = scorers
		}
		for _, name := range order {
			m := ev.Metrics[name]
			if m == nil {
				continue
			}
			sm := SummaryMetric{Scorer: name, Value: m.Value, CILow: m.CILow, CIHigh: m.CIHigh, N: m.N, Invalid: m.Invalid}
			if sdk.NoValue(m.Details) {
				sm.NoValue = sdk.NoValueReason(m.Details)
			}
			if d, ok := ev.Delta[name]; ok {
				sm.Delta = &d
			}
			r.Metrics = append(r.Metrics, sm)
		}
		rows = append(rows, r)
	}
	WriteEvalTables(w, rows, width)
	for _, t := range res.Tables {
		fmt.Fprintln(w)
		RenderTable(w, t, width)
	}
	fmt.Fprintln(w)
	for _, ev := range res.Evals {
		for _, name := range scorers {
			// Benchmarks that classify failures (Counting-Stars' bad cases)
			// report the counts with the metric.
			if m := ev.Metrics[name]; m != nil && m.N > 0 {
				if bc, ok := m.Details["bad_cases"].(map[string]any); ok && len(bc) > 0 {
					keys := make([]string, 0, len(bc))
					for k := range bc {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					var parts []string
					for _, k := range keys {
						parts = append(parts, fmt.Sprintf("%s=%v", k, bc[k]))
					}
					fmt.Fprintf(w, "%s / %s / %s: %s bad cases: %s\n", ev.Name, ev.Model, ev.Retriever, name, strings.Join(parts, " "))
				}
			}
		}
	}
	writePrefixCache(w, res)
	for _, ev := range res.Evals {
		if ev.Error != "" {
			fmt.Fprintf(w, "FAILED %s / %s / %s: %s\n", ev.Name, ev.Model, ev.Retriever, ev.Error)
		}
	}
	fmt.Fprintf(w, "run %s · kernel overhead %.0f µs/sample\n", res.RunID, res.OverheadUSPerSample)
}

// writePrefixCache lists each row's prefix-cache use, when any server
// reported it: prompt tokens, cached, computed and the hit rate, or "not
// reported" for rows whose server said nothing. Where the responses said
// nothing but the server's /metrics counters were read, their rise over the
// eval is shown instead, marked as an eval-level figure.
func writePrefixCache(w io.Writer, res *Run) {
	if !slices.ContainsFunc(res.Evals, func(ev *Row) bool { return ev.PrefixCache.Reported > 0 || ev.PrefixCache.Metrics != nil }) {
		return
	}
	for _, ev := range res.Evals {
		u := ev.PrefixCache
		rate, ok := u.HitRate()
		if m := u.Metrics; !ok && m != nil {
			mrate, _ := m.HitRate()
			shared := ""
			if m.SharedRows > 1 {
				shared = fmt.Sprintf(", shared by %d rows at once", m.SharedRows)
			}
			fmt.Fprintf(w, "prefix cache %s / %s / %s: prompt %d tokens, cached not reported; the server's counters over the eval (not per sample%s): prompt %d, cached %d, computed %d, hit rate %.1f%% (%s)\n",
				ev.Name, ev.Model, ev.Retriever, u.PromptTokens, shared, m.PromptTokens, m.CachedTokens, m.PromptTokens-m.CachedTokens, 100*mrate, m.Source)
			continue
		}
		if !ok {
			fmt.Fprintf(w, "prefix cache %s / %s / %s: prompt %d tokens, cached not reported\n", ev.Name, ev.Model, ev.Retriever, u.PromptTokens)
			continue
		}
		partial := ""
		if u.Reported < u.Responses {
			partial = fmt.Sprintf(" (%d of %d responses reported)", u.Reported, u.Responses)
		}
		fmt.Fprintf(w, "prefix cache %s / %s / %s: prompt %d tokens, cached %d, computed %d, hit rate %.1f%%%s\n",
			ev.Name, ev.Model, ev.Retriever, u.PromptTokens, u.CachedTokens, u.ComputedTokens, 100*rate, partial)
	}
}
