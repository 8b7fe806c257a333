package report

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

var update = flag.Bool("update", false, "rewrite golden files")

// newRun opens a fresh journal and begins a run of config in it.
func newRun(t *testing.T, config string) (*store.Store, string) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	run, err := st.BeginRun(context.Background(), store.RunInfo{ConfigPath: config})
	if err != nil {
		t.Fatal(err)
	}
	return st, run
}

// journal writes a small run the way the runner does: a full-context row
// and a retrieval row of one NIAH-like eval on a 2 × 2 grid, and a row
// that failed before it started.
func journal(t *testing.T) (*store.Store, string) {
	t.Helper()
	ctx := context.Background()
	st, run := newRun(t, "niah.hcl")
	rows := []struct {
		info    store.EvalInfo
		wrong   map[int]bool // samples answered wrongly
		invalid map[int]bool
		outcome store.Outcome
		metrics map[string]*store.Metric
	}{
		{
			info:    store.EvalInfo{Name: "niah/model.m/none", Eval: "niah", Task: "task.niah.t", Model: "model.m", Scorers: []string{"exact"}},
			wrong:   map[int]bool{0: true},
			outcome: store.Outcome{Samples: 4, Cached: 1, Truncated: 2},
			metrics: map[string]*store.Metric{"exact": {Value: 0.75, N: 4, CILow: 0.25, CIHigh: 1,
				Details: map[string]any{"bad_cases": map[string]any{"none": 1, "partial": 0}}}},
		},
		{
			info:    store.EvalInfo{Name: "niah/model.m/retriever.bm25.b", Eval: "niah", Task: "task.niah.t", Model: "model.m", Retriever: "retriever.bm25.b", Scorers: []string{"exact"}},
			wrong:   map[int]bool{1: true, 2: true},
			invalid: map[int]bool{3: true},
			outcome: store.Outcome{Samples: 4, Errors: 1},
			metrics: map[string]*store.Metric{"exact": {Value: 1.0 / 3, N: 4, Invalid: 1, CILow: 0, CIHigh: 1}},
		},
		{
			info:    store.EvalInfo{Name: "other/model.m/none", Eval: "other", Task: "task.x.y", Model: "model.m"},
			outcome: store.Outcome{Error: "task.x.y: file not found"},
		},
	}
	for i, r := range rows {
		r.info.Position = i
		if err := st.PutEval(ctx, run, r.info); err != nil {
			t.Fatal(err)
		}
		for j := range 4 {
			if r.info.Eval != "niah" {
				break
			}
			smp := &sdk.Sample{ID: string(rune('a' + j)), Length: sdk.Length{Tokens: 990 + j}, Depth: 0.49,
				Grid: &sdk.GridPoint{Length: 1000 * (1 + j%2), Depth: 0.5 * float64(j/2)}}
			sc := &sdk.ScoreResponse{Value: 1}
			if r.wrong[j] {
				sc.Value = 0
			}
			if r.invalid[j] {
				sc = &sdk.ScoreResponse{Invalid: true}
			}
			if err := st.PutResult(ctx, run, r.info.Name, smp, store.SampleMeta{Index: j}, []store.NamedScore{{Scorer: "exact", Score: sc}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.FinishEval(ctx, run, r.info.Name, r.outcome, r.metrics); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutOverhead(ctx, run, 42); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishRun(ctx, run, store.StatusFailed); err != nil {
		t.Fatal(err)
	}
	return st, run
}

func TestLoad(t *testing.T) {
	st, runID := journal(t)
	run, err := Load(context.Background(), st, runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Evals) != 3 || !run.Failed() || run.Interrupted || run.OverheadUSPerSample != 42 {
		t.Fatalf("run = %+v", run)
	}
	full, rag, failed := run.Evals[0], run.Evals[1], run.Evals[2]
	if full.Retriever != "none" || full.Name != "niah" || full.Cached != 1 || full.Truncated != 2 || full.Delta != nil {
		t.Errorf("full-context row = %+v", full)
	}
	if d := rag.Delta["exact"]; d != 1.0/3-0.75 {
		t.Errorf("retrieval delta = %v, want %v", d, 1.0/3-0.75)
	}
	if failed.Error == "" || len(failed.Metrics) != 0 || failed.ByLength != nil {
		t.Errorf("failed row = %+v", failed)
	}
	// Buckets come from the grid asked for, not the lengths reached; the
	// invalid score is left out of its bucket's mean, not counted as 0.
	for _, c := range []struct {
		got  []*Bucket
		want []float64
	}{
		{full.ByLength, []float64{0.5, 1}}, // a (wrong), c | b, d
		{full.ByDepth, []float64{0.5, 1}},  // a (wrong), b | c, d
		{rag.ByLength, []float64{0.5, 0}},  // a, c (wrong) | b (wrong), d (invalid)
		{rag.ByDepth, []float64{0.5, 0}},   // a, b (wrong) | c (wrong), d (invalid)
	} {
		if len(c.got) != 2 {
			t.Fatalf("buckets = %+v", c.got)
		}
		for i, b := range c.got {
			if b.N != 2 || b.Metrics["exact"] != c.want[i] {
				t.Errorf("bucket %d = %+v, want n 2 exact %v", i, b, c.want[i])
			}
		}
	}
	if *full.ByLength[0].Length != 1000 || *full.ByDepth[1].Depth != 0.5 {
		t.Errorf("bucket keys: %d, %v", *full.ByLength[0].Length, *full.ByDepth[1].Depth)
	}
	// The grid has a cell per length and depth, in that order; a cell whose
	// only score is invalid has n 1 and no mean.
	type want struct {
		length int
		depth  float64
		exact  float64
		scored bool
	}
	for _, c := range []struct {
		name string
		got  []*Bucket
		want []want
	}{
		{"full", full.Grid, []want{{1000, 0, 0, true}, {1000, 0.5, 1, true}, {2000, 0, 1, true}, {2000, 0.5, 1, true}}},
		{"rag", rag.Grid, []want{{1000, 0, 1, true}, {1000, 0.5, 0, true}, {2000, 0, 0, true}, {2000, 0.5, 0, false}}},
		{"failed", failed.Grid, nil},
	} {
		if len(c.got) != len(c.want) {
			t.Fatalf("%s grid = %+v, want %d cells", c.name, c.got, len(c.want))
		}
		for i, w := range c.want {
			b := c.got[i]
			v, ok := b.Metrics["exact"]
			if *b.Length != w.length || *b.Depth != w.depth || b.N != 1 || ok != w.scored || v != w.exact {
				t.Errorf("%s cell %d = {%d %v n %d %v}, want {%d %v n 1 %+v}", c.name, i, *b.Length, *b.Depth, b.N, b.Metrics, w.length, w.depth, w)
			}
		}
	}
}

// The terminal summary and the JSON document keep their layout: golden
// files, rewritten with -update.
func TestOutputsGolden(t *testing.T) {
	st, runID := journal(t)
	run, err := Load(context.Background(), st, runID)
	if err != nil {
		t.Fatal(err)
	}
	run.RunID = "RUN" // IDs carry the start time
	for _, c := range []struct {
		file  string
		write func(*bytes.Buffer) error
	}{
		{"summary.golden", func(b *bytes.Buffer) error { WriteSummary(b, run); return nil }},
		{"run.golden.json", func(b *bytes.Buffer) error { return WriteJSON(b, run) }},
	} {
		var b bytes.Buffer
		if err := c.write(&b); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", c.file)
		if *update {
			os.MkdirAll("testdata", 0o755)
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if b.String() != string(want) {
			t.Errorf("%s differs:\n%s", path, b.String())
		}
	}
}

func TestLoadUnknownRun(t *testing.T) {
	st, _ := journal(t)
	if _, err := Load(context.Background(), st, "nope"); err == nil {
		t.Fatal("loaded a run that does not exist")
	}
}

// An interrupted run labels the rows it left unfinished from the counts it
// journaled: "95 of 330" when the task said how many, "(partial)" when it
// could not; a row that reached its count is not partial.
func TestInterruptedRowsFromJournal(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, err := st.BeginRun(ctx, store.RunInfo{ConfigPath: "x.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		model   string
		outcome store.Outcome
		want    string // the row's cells: samples, errors
	}{
		{"model.stopped", store.Outcome{Samples: 90, Errors: 5, Expected: 330}, "95 of 330 5"},
		{"model.done", store.Outcome{Samples: 328, Errors: 2, Expected: 330}, "328 2"},
		{"model.uncounted", store.Outcome{Samples: 40}, "40 (partial) 0"},
	}
	for i, c := range cases {
		name := "e/" + c.model + "/none"
		if err := st.PutEval(ctx, run, store.EvalInfo{Name: name, Eval: "e", Task: "task.x.y", Model: c.model, Position: i}); err != nil {
			t.Fatal(err)
		}
		if err := st.FinishEval(ctx, run, name, c.outcome, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.FinishRun(ctx, run, store.StatusInterrupted); err != nil {
		t.Fatal(err)
	}
	r, err := Load(ctx, st, run)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	WriteSummary(&b, r)
	lines := strings.Split(b.String(), "\n")
	for i, c := range cases {
		if r.Evals[i].Expected != c.outcome.Expected {
			t.Errorf("%s: expected %d, want %d", c.model, r.Evals[i].Expected, c.outcome.Expected)
		}
		short := strings.TrimPrefix(c.model, "model.")
		found := false
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 0 && f[0] == short {
				found = true
				if got := strings.Join(strings.Fields(strings.TrimPrefix(l, short)), " "); got != c.want {
					t.Errorf("%s: cells %q, want %q", c.model, got, c.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no row in\n%s", c.model, b.String())
		}
	}
}
