// Package report reads the results of runs from the journal (kernel/store)
// and presents them: the terminal summary (summary.go), the JSON document of
// `hayloft run --json` (json.go), and the per-length, per-depth and
// length × depth breakdowns that heatmaps draw (breakdown.go). It never
// calls a plugin: a run journals each row's aggregate metrics, with the
// scorers' tables in their details, and everything here is computed from
// what was journaled.
package report

import (
	"context"
	"fmt"
	"strings"

	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// Run is one journaled run as reports show it. Its JSON form is the
// document `hayloft run --json` prints.
type Run struct {
	RunID string `json:"run_id"`
	Evals []*Row `json:"evals"`
	// OverheadUSPerSample is the kernel's own CPU time per sample.
	OverheadUSPerSample float64 `json:"overhead_us_per_sample"`
	Interrupted         bool    `json:"interrupted,omitempty"`
	// Tables are the benchmarks' own result tables (sdk.Table), merged
	// across the run's rows, with their derived columns computed.
	Tables []sdk.Table `json:"tables,omitempty"`
	// Status is the run's journaled status (store.StatusDone, ...).
	Status string `json:"-"`
}

// Row is one eval row: an eval's task with one model and one retriever.
type Row struct {
	Name      string `json:"name"` // the config's eval block
	Task      string `json:"task"`
	Model     string `json:"model"`
	Retriever string `json:"retriever"` // "none" for full context
	Samples   int    `json:"samples"`
	Cached    int    `json:"cached"`
	Errors    int    `json:"errors"`
	Truncated int    `json:"truncated"`
	// Expected is how many samples the row was to run, when its task could
	// say; with Samples and Errors, how far an interrupted row got.
	Expected int                      `json:"expected,omitempty"`
	Metrics  map[string]*store.Metric `json:"metrics"`
	// ByLength and ByDepth are the mean of each metric per context length
	// and per evidence depth: the data of a length × depth heatmap.
	ByLength []*Bucket `json:"by_length,omitempty"`
	ByDepth  []*Bucket `json:"by_depth,omitempty"`
	// Grid is the mean of each metric per length and depth together: the
	// heatmap's cells, of which ByLength and ByDepth are the marginals.
	Grid []*Bucket `json:"grid,omitempty"`
	// Delta is each metric minus the same eval and model's full-context row
	// (the RAG ablation's question: what did retrieval gain or cost?).
	Delta map[string]float64 `json:"delta,omitempty"`
	// PrefixCache is what the server said of its prefix cache: prompt
	// tokens, cached, computed (over the responses that reported it).
	PrefixCache store.PrefixUse `json:"prefix_cache"`
	// Error is set when the row could not finish (a plugin crashed twice, the
	// server is unreachable); the rows before it and the other evals stand.
	Error string `json:"error,omitempty"`

	// Journal is the row's name in the journal, unique within the run.
	Journal string `json:"-"`
	// Scorers are the row's scorers in config order.
	Scorers []string `json:"-"`
}

// partial reports whether a row of a run that was interrupted stopped
// before its end: any row that did not fail, unless its expected count
// says it finished.
func (r *Row) partial(interrupted bool) bool {
	return interrupted && r.Error == "" && (r.Expected == 0 || r.Samples+r.Errors < r.Expected)
}

// Failed reports whether any row failed.
func (r *Run) Failed() bool {
	for _, e := range r.Evals {
		if e.Error != "" {
			return true
		}
	}
	return false
}

// Load reads run runID from st: its rows in the order they ran, each with
// its outcome, metrics, breakdowns and deltas.
func Load(ctx context.Context, st *store.Store, runID string) (*Run, error) {
	info, err := st.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	evals, err := st.Evals(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	run := &Run{RunID: runID, OverheadUSPerSample: info.OverheadUS, Status: info.Status,
		Interrupted: info.Status == store.StatusInterrupted}
	for _, e := range evals {
		row, err := loadRow(ctx, st, runID, e)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		run.Evals = append(run.Evals, row)
	}
	addDeltas(run.Evals)
	if run.Tables, err = mergedTables(run.Evals); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return run, nil
}

func loadRow(ctx context.Context, st *store.Store, runID string, e store.EvalInfo) (*Row, error) {
	o := e.Outcome
	row := &Row{Name: e.Eval, Task: e.Task, Model: e.Model, Retriever: e.Retriever,
		Samples: o.Samples, Cached: o.Cached, Errors: o.Errors, Truncated: o.Truncated, Error: o.Error, Expected: o.Expected,
		Journal: e.Name, Scorers: e.Scorers}
	if row.Name == "" {
		// Journals before schema 2 named rows eval/model/retriever only.
		row.Name, _, _ = strings.Cut(e.Name, "/")
	}
	if row.Retriever == "" {
		row.Retriever = "none"
	}
	var err error
	if row.Metrics, err = st.Metrics(ctx, runID, e.Name); err != nil {
		return nil, err
	}
	if row.ByLength, row.ByDepth, err = breakdown(ctx, st, runID, e); err != nil {
		return nil, err
	}
	// A grid cell is a length and a depth, each as a breakdown buckets
	// them: with at most one of each there is at most one cell, and a row
	// with fewer than two gets no grid. Not asking spares a join of every
	// sample to its scores (short samples of one length and depth, the
	// most common kind of run, about 4 µs per sample).
	if row.ByLength != nil || row.ByDepth != nil {
		if row.Grid, err = grid(ctx, st, runID, e); err != nil {
			return nil, err
		}
	}
	if row.PrefixCache, err = st.PrefixUse(ctx, runID, e.Name); err != nil {
		return nil, err
	}
	return row, nil
}

// mergedTables merges the tables in every row's metrics, in row and scorer
// order; {model} in a row label becomes the row's model, and its retriever
// when it has one.
func mergedTables(rows []*Row) ([]sdk.Table, error) {
	var srcs []TableSource
	for _, r := range rows {
		label := r.Model
		if r.Retriever != "" && r.Retriever != "none" {
			label += " / " + r.Retriever
		}
		for _, name := range r.Scorers {
			m := r.Metrics[name]
			if m == nil {
				continue
			}
			ts, err := sdk.TablesOf(m.Details)
			if err != nil {
				return nil, fmt.Errorf("eval %s: scorer %s: %w", r.Journal, name, err)
			}
			srcs = append(srcs, TableSource{Model: label, Tables: ts})
		}
	}
	return MergeTables(srcs), nil
}

// addDeltas compares every retrieval row with the full-context row of the
// same eval and model.
func addDeltas(rows []*Row) {
	for _, r := range rows {
		if r.Retriever == "none" || r.Error != "" {
			continue
		}
		for _, base := range rows {
			if base.Retriever != "none" || base.Name != r.Name || base.Model != r.Model || base.Error != "" {
				continue
			}
			for name, m := range r.Metrics {
				if b := base.Metrics[name]; b.HasValue() && m.HasValue() {
					if r.Delta == nil {
						r.Delta = map[string]float64{}
					}
					r.Delta[name] = m.Value - b.Value
				}
			}
		}
	}
}
