package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// Outcome is how one eval row ended: what the runner counted and, when the
// row could not finish, why.
type Outcome struct {
	Samples   int    // samples answered and scored
	Cached    int    // of those, answered from the response cache
	Errors    int    // samples that failed (see Failures)
	Truncated int    // samples whose context was cut to the window
	Error     string // set when the row could not finish
	// Expected is how many samples the row was to run, when its task could
	// say (journaled NULL when 0): with Samples and Errors, how far a row
	// an interrupted run left got.
	Expected int
	// PrefixMetrics is the server's prefix-cache counters over the row;
	// nil when not read.
	PrefixMetrics *PrefixMetrics
	// PrefixUse, when set, is the row's prefix-cache sums as PrefixUse
	// read them once every sample of the row was journaled (its Metrics
	// left out): journaled as they are, so that a caller can have them
	// summed while it aggregates instead of FinishEval summing them
	// after. Nil: FinishEval sums them.
	PrefixUse *PrefixUse
}

// Metric is one scorer's aggregate over one eval row, as the scorer's
// Aggregate (or the mean of valid values) gave it: the SDK's own response,
// journaled whole. Its Details may carry sdk.Tables under sdk.TablesKey
// (read them back with sdk.TablesOf). Reports read it from the journal and
// never call a plugin.
type Metric = sdk.AggregateResponse

// FinishEval journals how an eval row ended and its aggregate metrics by
// scorer, in one transaction. The eval must have been put first. Finishing
// an eval again replaces its outcome and metrics.
func (s *Store) FinishEval(ctx context.Context, runID, evalName string, o Outcome, metrics map[string]*Metric) error {
	type encoded struct {
		scorer  string
		m       *Metric
		details string
	}
	var ms []encoded
	for scorer, m := range metrics {
		for name, v := range map[string]float64{"value": m.Value, "ci_low": m.CILow, "ci_high": m.CIHigh} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("finish eval %s/%s: scorer %s: %s is %v", runID, evalName, scorer, name, v)
			}
		}
		details := []byte("{}")
		if m.Details != nil {
			var err error
			if details, err = json.Marshal(m.Details); err != nil {
				return fmt.Errorf("finish eval %s/%s: scorer %s: details: %w", runID, evalName, scorer, err)
			}
		}
		ms = append(ms, encoded{scorer, m, string(details)})
	}
	var prefix sql.NullString
	if o.PrefixMetrics != nil {
		b, err := json.Marshal(o.PrefixMetrics)
		if err != nil {
			return fmt.Errorf("finish eval %s/%s: prefix metrics: %w", runID, evalName, err)
		}
		prefix = sql.NullString{String: string(b), Valid: true}
	}
	// The row's samples are journaled by now: their prefix-cache sums are
	// journaled with the outcome, which spares every report the join.
	var prefixUse string
	var perr error
	if u := o.PrefixUse; u != nil {
		c := *u
		c.Metrics = nil // the server's counters are journaled apart (prefix_metrics)
		var b []byte
		b, perr = json.Marshal(c)
		prefixUse = string(b)
	} else {
		prefixUse, perr = s.finishedPrefixUse(ctx, runID, evalName)
	}
	if perr != nil {
		return fmt.Errorf("finish eval %s/%s: %w", runID, evalName, perr)
	}
	now := formatTime(time.Now())
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := execOne(ctx, tx, `UPDATE evals SET samples = $1, cached = $2, errors = $3, truncated = $4, error = $5, expected = $6, prefix_metrics = $7
			WHERE run_id = $8 AND name = $9`, o.Samples, o.Cached, o.Errors, o.Truncated, o.Error, sql.NullInt64{Int64: int64(o.Expected), Valid: o.Expected > 0}, prefix, runID, evalName); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE evals SET prefix_use = $1 WHERE run_id = $2 AND name = $3`, prefixUse, runID, evalName); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM metrics WHERE run_id = $1 AND eval_name = $2`, runID, evalName); err != nil {
			return err
		}
		for _, e := range ms {
			if _, err := tx.ExecContext(ctx, `INSERT INTO metrics (run_id, eval_name, scorer, value, n, invalid, ci_low, ci_high, details, created_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				runID, evalName, e.scorer, e.m.Value, e.m.N, e.m.Invalid, e.m.CILow, e.m.CIHigh, e.details, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("finish eval %s/%s: %w", runID, evalName, err)
	}
	return nil
}

// Metrics returns the aggregate metrics of one eval row by scorer; empty
// when the row was not finished.
func (s *Store) Metrics(ctx context.Context, runID, evalName string) (map[string]*Metric, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT scorer, value, n, invalid, ci_low, ci_high, details
		FROM metrics WHERE run_id = $1 AND eval_name = $2`, runID, evalName)
	if err != nil {
		return nil, fmt.Errorf("metrics of %s/%s: %w", runID, evalName, err)
	}
	defer rows.Close()
	out := map[string]*Metric{}
	for rows.Next() {
		var (
			scorer, details string
			m               Metric
		)
		if err := rows.Scan(&scorer, &m.Value, &m.N, &m.Invalid, &m.CILow, &m.CIHigh, &details); err != nil {
			return nil, fmt.Errorf("metrics of %s/%s: %w", runID, evalName, err)
		}
		if details != "{}" {
			if err := json.Unmarshal([]byte(details), &m.Details); err != nil {
				return nil, fmt.Errorf("metrics of %s/%s: scorer %s: details: %w", runID, evalName, scorer, err)
			}
		}
		if _, failed := m.Details["error"]; failed {
			// An aggregate that failed has no value: its 0 is not a score,
			// and every report shows a metric of no samples as missing.
			// Journals before the runner wrote N 0 for it hold the count.
			m.N = 0
		}
		out[scorer] = &m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics of %s/%s: %w", runID, evalName, err)
	}
	return out, nil
}

// PutOverhead journals a run's kernel overhead: this process's CPU time per
// sample, in µs.
func (s *Store) PutOverhead(ctx context.Context, runID string, usPerSample float64) error {
	if math.IsNaN(usPerSample) || math.IsInf(usPerSample, 0) {
		return fmt.Errorf("put overhead of run %s: %v", runID, usPerSample)
	}
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE runs SET overhead_us = $1 WHERE id = $2`, usPerSample, runID)
		return err
	})
	if err != nil {
		return fmt.Errorf("put overhead of run %s: %w", runID, err)
	}
	return nil
}
