package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

func TestFinishEvalAndMetrics(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "a.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"e/m/none", "e/m/cosine"} {
		if err := s.PutEval(ctx, run, EvalInfo{Name: name, Eval: "e", Position: 1 - i, Task: "task.x.y", Model: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	table := sdk.Table{ID: "acc", Title: "Accuracy", Columns: []sdk.Column{{Key: "acc", Label: "Acc", Decimals: 1}},
		Rows: []sdk.Row{{Label: "{model}", Cells: map[string]sdk.Cell{"acc": sdk.Val(0.5, 4)}}}}
	metrics := map[string]*Metric{
		"exact": {Value: 0.5, N: 4, Invalid: 1, CILow: 0.25, CIHigh: 0.75, Details: sdk.WithTables(map[string]any{"bad_cases": map[string]any{"none": 2.0}}, table)},
		"f1":    {Value: 0.6, N: 4},
	}
	outcome := Outcome{Samples: 4, Cached: 2, Errors: 1, Truncated: 3, Error: "model down", Expected: 330}
	if err := s.FinishEval(ctx, run, "e/m/none", outcome, metrics); err != nil {
		t.Fatal(err)
	}
	// Finishing again replaces: a scorer gone from the map is gone.
	delete(metrics, "f1")
	if err := s.FinishEval(ctx, run, "e/m/none", outcome, metrics); err != nil {
		t.Fatal(err)
	}
	got, err := s.Metrics(ctx, run, "e/m/none")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["exact"].N != 4 || got["exact"].Invalid != 1 || got["exact"].CIHigh != 0.75 {
		t.Fatalf("metrics = %+v", got)
	}
	tables, err := sdk.TablesOf(got["exact"].Details)
	if err != nil || len(tables) != 1 || !reflect.DeepEqual(tables[0], table) {
		t.Fatalf("tables = %+v, %v; want %+v", tables, err, table)
	}
	if bc := got["exact"].Details["bad_cases"].(map[string]any); bc["none"] != 2.0 {
		t.Errorf("details = %v", got["exact"].Details)
	}
	evals, err := s.Evals(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	// The unfinished row's expected count is NULL: read as 0, unknown.
	if len(evals) != 2 || evals[0].Name != "e/m/cosine" || evals[0].Outcome != (Outcome{}) || evals[1].Outcome != outcome || evals[1].Eval != "e" {
		t.Fatalf("evals = %+v (want position order, the outcome put)", evals)
	}
	if m, err := s.Metrics(ctx, run, "e/m/cosine"); err != nil || len(m) != 0 {
		t.Errorf("unfinished eval: %v, %v", m, err)
	}
	// A row whose task could not count its samples journals NULL, not 0.
	if err := s.FinishEval(ctx, run, "e/m/cosine", Outcome{Samples: 1}, nil); err != nil {
		t.Fatal(err)
	}
	var null bool
	if err := s.db.QueryRowContext(ctx, `SELECT expected IS NULL FROM evals WHERE run_id = $1 AND name = $2`, run, "e/m/cosine").Scan(&null); err != nil || !null {
		t.Errorf("expected of a row with no count: NULL %v, %v", null, err)
	}

	for _, c := range []struct {
		name string
		eval string
		m    map[string]*Metric
		want error
	}{
		{"no such eval", "nope", nil, ErrNotFound},
		{"NaN value", "e/m/none", map[string]*Metric{"x": {Value: math.NaN()}}, nil},
	} {
		err := s.FinishEval(ctx, run, c.eval, Outcome{}, c.m)
		if err == nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}

	if err := s.PutOverhead(ctx, run, 12.5); err != nil {
		t.Fatal(err)
	}
	if r, err := s.GetRun(ctx, run); err != nil || r.OverheadUS != 12.5 {
		t.Fatalf("run = %+v, %v", r, err)
	}
}

func TestSampleGridRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run, _ := s.BeginRun(ctx, RunInfo{})
	if err := s.PutEval(ctx, run, EvalInfo{Name: "e"}); err != nil {
		t.Fatal(err)
	}
	in := []*sdk.Sample{
		{ID: "a", Depth: 0.43, Grid: &sdk.GridPoint{Length: 1000, Depth: 0.5}},
		{ID: "b", Depth: -1, Grid: &sdk.GridPoint{Length: 8000, Depth: -1}},
		{ID: "c", Depth: 0.2},
	}
	for i, smp := range in {
		if err := s.PutSample(ctx, run, "e", smp, SampleMeta{Index: i}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Samples(ctx, run, "e")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if !reflect.DeepEqual(r.Grid, in[i].Grid) {
			t.Errorf("sample %s: grid %+v, want %+v", r.ID, r.Grid, in[i].Grid)
		}
	}
}

// A journal written by schema 1 opens under schema 2 with its runs, evals
// and samples intact and the new columns at their "unknown" values.
func TestMigrateFromSchema1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, conn, migrations[:1]); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO runs VALUES ('r1', '2026-01-01T00:00:00.000000Z', NULL, 'done', 'a.hcl', '', '', 'v1')`,
		`INSERT INTO evals VALUES ('r1', 'e/m/none', 'task.t.t', 'm', '', '["exact"]')`,
		`INSERT INTO samples VALUES ('r1', 'e/m/none', 's1', 0, 'q', '[]', 10, 'cl100k_base', 0.5, '', '', '{}', '', 0, 12, '[]', 'k')`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	db.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evals, err := s.Evals(ctx, "r1")
	if err != nil || len(evals) != 1 || evals[0].Scorers[0] != "exact" || evals[0].Outcome != (Outcome{}) {
		t.Fatalf("evals = %+v, %v", evals, err)
	}
	smps, err := s.Samples(ctx, "r1", "e/m/none")
	if err != nil || len(smps) != 1 || smps[0].Grid != nil || smps[0].Length.Tokens != 10 {
		t.Fatalf("samples = %+v, %v", smps, err)
	}
}

// GridSums groups scores by the grid point a task asked for, else by the
// measured length and depth; samples off either axis are in no cell, and
// invalid scores count as samples but not as values.
func TestGridSums(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run, _ := s.BeginRun(ctx, RunInfo{})
	if err := s.PutEval(ctx, run, EvalInfo{Name: "e", Scorers: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		smp   sdk.Sample
		score sdk.ScoreResponse
	}{
		{sdk.Sample{Length: sdk.Length{Tokens: 990}, Depth: 0.4, Grid: &sdk.GridPoint{Length: 1000, Depth: 0.5}}, sdk.ScoreResponse{Value: 1}},
		{sdk.Sample{Length: sdk.Length{Tokens: 1010}, Depth: 0.6, Grid: &sdk.GridPoint{Length: 1000, Depth: 0.5}}, sdk.ScoreResponse{Value: 0.5}},
		{sdk.Sample{Length: sdk.Length{Tokens: 1000}, Grid: &sdk.GridPoint{Length: 1000, Depth: 0.5}}, sdk.ScoreResponse{Invalid: true}},
		{sdk.Sample{Length: sdk.Length{Tokens: 2000}, Depth: 0.25}, sdk.ScoreResponse{Value: 0.25}}, // no grid: measured
		{sdk.Sample{Length: sdk.Length{Tokens: 3000}, Depth: -1}, sdk.ScoreResponse{Value: 1}},      // no depth
		{sdk.Sample{Depth: 0.5}, sdk.ScoreResponse{Value: 1}},                                       // no length
	} {
		c.smp.ID = fmt.Sprint(i)
		sc := c.score
		if err := s.PutResult(ctx, run, "e", &c.smp, SampleMeta{Index: i}, []NamedScore{{Scorer: "x", Score: &sc}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GridSums(ctx, run, "e")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b GridSum) int { return cmp.Compare(a.Length, b.Length) })
	want := []GridSum{
		{Length: 1000, Depth: 0.5, Scorer: "x", Samples: 3, Valid: 2, Sum: 1.5},
		{Length: 2000, Depth: 0.25, Scorer: "x", Samples: 1, Valid: 1, Sum: 0.25},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("grid sums = %+v, want %+v", got, want)
	}
}

// BucketSums and GridSums say what their joins say, whether or not any
// sample of the eval lies on an axis.
func TestSumsWithoutPositions(t *testing.T) {
	ctx := context.Background()
	off := sdk.Sample{Depth: -1} // no length, no depth, no grid point
	for _, c := range []struct {
		name    string
		samples []sdk.Sample
		buckets int // rows BucketSums must give
	}{
		{"none on an axis", []sdk.Sample{off, off, off}, 0},
		{"no samples", nil, 0},
		{"one length", []sdk.Sample{off, {Length: sdk.Length{Tokens: 500}, Depth: -1}, off}, 1},
		{"one depth", []sdk.Sample{off, off, {Depth: 0}}, 1},
		{"one grid point", []sdk.Sample{{Depth: -1, Grid: &sdk.GridPoint{Length: 1000, Depth: 0.5}}, off}, 2},
		{"grid point off both axes", []sdk.Sample{{Depth: -1, Grid: &sdk.GridPoint{Depth: -1}}, off}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openTest(t)
			run, _ := s.BeginRun(ctx, RunInfo{})
			if err := s.PutEval(ctx, run, EvalInfo{Name: "e", Scorers: []string{"x"}}); err != nil {
				t.Fatal(err)
			}
			for i, smp := range c.samples {
				smp.ID = fmt.Sprint(i)
				if err := s.PutResult(ctx, run, "e", &smp, SampleMeta{Index: i}, []NamedScore{{Scorer: "x", Score: &sdk.ScoreResponse{Value: 1}}}); err != nil {
					t.Fatal(err)
				}
			}
			buckets, err := s.BucketSums(ctx, run, "e")
			if err != nil {
				t.Fatal(err)
			}
			if len(buckets) != c.buckets {
				t.Errorf("bucket sums = %+v, want %d rows", buckets, c.buckets)
			}
			if n := countRows(t, s, bucketSums, run); n != len(buckets) {
				t.Errorf("bucket sums gave %d rows, the join %d", len(buckets), n)
			}
			grid, err := s.GridSums(ctx, run, "e")
			if err != nil {
				t.Fatal(err)
			}
			if n := countRows(t, s, gridSums, run); n != len(grid) {
				t.Errorf("grid sums gave %d rows, the join %d", len(grid), n)
			}
		})
	}
}

// countRows is the number of rows query gives for eval "e" of run.
func countRows(t *testing.T, s *Store, query, run string) int {
	t.Helper()
	rows, err := s.db.Query(query, run, "e")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
