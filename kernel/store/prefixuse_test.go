package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// The prefix-cache sums FinishEval journals are the sums a report computed
// from the samples and their responses before (and still computes for rows
// without them): on a journal of two runs, a response shared by two
// samples, one answered from the earlier run's cache, responses with and
// without a cached count, and samples that failed.
func TestPrefixUseJournaled(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	k := mustKeyer(t, testIdentity())
	put := func(i int, cached *int) Keyed {
		r := mustKeyed(t, k, testRequest(i))
		if err := s.PutResponse(ctx, k, r, &sdk.GenerateResponse{Text: "x", Usage: sdk.Usage{PromptTokens: 100 + i, CachedTokens: cached}}, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		return r
	}
	tokens := func(n int) *int { return &n }
	first, err := s.BeginRun(ctx, RunInfo{ConfigPath: "a.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	shared := put(0, tokens(40)) // answered in the first run, reused by the second
	second, err := s.BeginRun(ctx, RunInfo{ConfigPath: "a.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	type sample struct {
		key    string
		failed bool
	}
	rows := []struct {
		run, name string
		samples   []sample
	}{
		{first, "e/a/none", []sample{{key: shared.Key}, {key: put(1, nil).Key}, {key: put(2, tokens(0)).Key}, {key: "never answered", failed: true}}},
		{second, "e/a/none", []sample{{key: shared.Key}, {key: shared.Key}, {key: put(3, tokens(77)).Key}}},
		{second, "e/silent/none", []sample{{key: put(4, nil).Key}, {key: put(5, nil).Key}}},
		{second, "e/empty/none", nil},
	}
	for _, row := range rows {
		if err := s.PutEval(ctx, row.run, EvalInfo{Name: row.name, Scorers: []string{"exact"}}); err != nil {
			t.Fatal(err)
		}
		for i, smp := range row.samples {
			id := strconv.Itoa(i)
			if smp.failed {
				if err := s.PutFailure(ctx, row.run, row.name, id, smp.key, errors.New("boom")); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := s.PutResult(ctx, row.run, row.name, &sdk.Sample{ID: id}, SampleMeta{Index: i, RequestKey: smp.key},
				[]NamedScore{{Scorer: "exact", Score: &sdk.ScoreResponse{Value: 1}}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.FinishEval(ctx, row.run, row.name, Outcome{Samples: len(row.samples)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]PrefixUse{
		first + "e/a/none":       {Responses: 3, Reported: 2, PromptTokens: 100 + 101 + 102, CachedTokens: 40, ComputedTokens: 100 + 102 - 40},
		second + "e/a/none":      {Responses: 3, Reported: 3, PromptTokens: 100 + 100 + 103, CachedTokens: 40 + 40 + 77, ComputedTokens: 100 + 100 + 103 - 157},
		second + "e/silent/none": {Responses: 2, PromptTokens: 104 + 105},
		second + "e/empty/none":  {},
	}
	check := func(how string) {
		t.Helper()
		for _, row := range rows {
			got, err := s.PrefixUse(ctx, row.run, row.name)
			if err != nil {
				t.Fatal(err)
			}
			recomputed, err := s.sumPrefixUse(ctx, row.run, row.name)
			if err != nil {
				t.Fatal(err)
			}
			if w := want[row.run+row.name]; got != w || recomputed != w {
				t.Errorf("%s: %s: prefix use %+v, recomputed %+v, want %+v", how, row.name, got, recomputed, w)
			}
		}
	}
	// Journaled: PrefixUse reads the column, not the samples.
	var journaled int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(prefix_use) FROM evals`).Scan(&journaled); err != nil || journaled != len(rows) {
		t.Fatalf("%d of %d rows journaled their prefix use (%v)", journaled, len(rows), err)
	}
	check("journaled")
	// A row finished by an older hayloft (no column value) is summed when
	// read, to the same figures.
	if _, err := s.db.ExecContext(ctx, `UPDATE evals SET prefix_use = NULL`); err != nil {
		t.Fatal(err)
	}
	check("summed when read")
	// What is journaled is what is read: a report does not look at the
	// samples of a finished row again.
	fake := `{"responses":9,"reported":9,"prompt_tokens":90,"cached_tokens":45,"computed_tokens":45}`
	if _, err := s.db.ExecContext(ctx, `UPDATE evals SET prefix_use = $1 WHERE run_id = $2`, fake, first); err != nil {
		t.Fatal(err)
	}
	if got, err := s.PrefixUse(ctx, first, "e/a/none"); err != nil || got != (PrefixUse{Responses: 9, Reported: 9, PromptTokens: 90, CachedTokens: 45, ComputedTokens: 45}) {
		t.Errorf("journaled use read back as %+v, %v", got, err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE evals SET prefix_use = 'not json' WHERE run_id = $1`, first); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PrefixUse(ctx, first, "e/a/none"); err == nil {
		t.Error("a journaled prefix use that is not JSON read without an error")
	}
	// A row not in the journal has no use.
	if got, err := s.PrefixUse(ctx, second, "e/none/none"); err != nil || got != (PrefixUse{}) {
		t.Errorf("unknown row: %+v, %v", got, err)
	}
}

// Sums read with PrefixUse before FinishEval and handed to it are
// journaled as FinishEval would have summed them itself, the server's
// counters left to their own column.
func TestPrefixUseGivenToFinishEval(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	k := mustKeyer(t, testIdentity())
	run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "a.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	cached := 30
	for _, name := range []string{"e/given/none", "e/summed/none"} {
		if err := s.PutEval(ctx, run, EvalInfo{Name: name, Scorers: []string{"exact"}}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			r := mustKeyed(t, k, testRequest(i))
			usage := sdk.Usage{PromptTokens: 100 + i}
			if i > 0 {
				usage.CachedTokens = &cached
			}
			if err := s.PutResponse(ctx, k, r, &sdk.GenerateResponse{Text: "x", Usage: usage}, time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if err := s.PutResult(ctx, run, name, &sdk.Sample{ID: strconv.Itoa(i)}, SampleMeta{Index: i, RequestKey: r.Key},
				[]NamedScore{{Scorer: "exact", Score: &sdk.ScoreResponse{Value: 1}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	u, err := s.PrefixUse(ctx, run, "e/given/none")
	if err != nil {
		t.Fatal(err)
	}
	u.Metrics = &PrefixMetrics{Source: "not journaled here", PromptTokens: 1}
	if err := s.FinishEval(ctx, run, "e/given/none", Outcome{Samples: 3, PrefixUse: &u}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishEval(ctx, run, "e/summed/none", Outcome{Samples: 3}, nil); err != nil {
		t.Fatal(err)
	}
	var given, summed string
	var metrics sql.NullString
	if err := s.db.QueryRowContext(ctx, `SELECT prefix_use, prefix_metrics FROM evals WHERE run_id = $1 AND name = 'e/given/none'`, run).Scan(&given, &metrics); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT prefix_use FROM evals WHERE run_id = $1 AND name = 'e/summed/none'`, run).Scan(&summed); err != nil {
		t.Fatal(err)
	}
	if given != summed || metrics.Valid {
		t.Errorf("journaled %s (server counters %v), FinishEval's own sums %s", given, metrics, summed)
	}
	u.Metrics = nil
	if want := (PrefixUse{Responses: 3, Reported: 2, PromptTokens: 303, CachedTokens: 60, ComputedTokens: 101 + 102 - 60}); u != want {
		t.Errorf("PrefixUse before FinishEval %+v, want %+v", u, want)
	}
}

// A row's own sum of its answers' usage (PrefixUse.Add, what the runner
// journals) is the journal's join of its samples to their responses, for
// responses with and without a cached count; a second put of a key counts
// as repeated (RepeatedResponses), the case where the two may differ.
func TestPrefixUseAddIsTheJoin(t *testing.T) {
	ctx := context.Background()
	tokens := func(n int) *int { return &n }
	tests := []struct {
		name   string
		usages []sdk.Usage
	}{
		{"none reported", []sdk.Usage{{PromptTokens: 10}, {PromptTokens: 20}}},
		{"all reported", []sdk.Usage{{PromptTokens: 10, CachedTokens: tokens(4)}, {PromptTokens: 30, CachedTokens: tokens(0)}}},
		{"mixed", []sdk.Usage{{PromptTokens: 10, CachedTokens: tokens(10)}, {PromptTokens: 7}, {PromptTokens: 50, CachedTokens: tokens(32)}}},
		{"empty", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t)
			k := mustKeyer(t, testIdentity())
			run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "a.hcl"})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.PutEval(ctx, run, EvalInfo{Name: "e", Scorers: []string{"exact"}}); err != nil {
				t.Fatal(err)
			}
			var own PrefixUse
			for i, u := range tt.usages {
				r := mustKeyed(t, k, testRequest(i))
				if err := s.PutResponse(ctx, k, r, &sdk.GenerateResponse{Text: "x", Usage: u}, time.Millisecond); err != nil {
					t.Fatal(err)
				}
				if err := s.PutResult(ctx, run, "e", &sdk.Sample{ID: strconv.Itoa(i)}, SampleMeta{Index: i, RequestKey: r.Key},
					[]NamedScore{{Scorer: "exact", Score: &sdk.ScoreResponse{Value: 1}}}); err != nil {
					t.Fatal(err)
				}
				own.Add(u)
			}
			joined, err := s.sumPrefixUse(ctx, run, "e")
			if err != nil {
				t.Fatal(err)
			}
			if own != joined {
				t.Errorf("Add: %+v, the join: %+v", own, joined)
			}
			if n := s.RepeatedResponses(); n != 0 {
				t.Errorf("RepeatedResponses = %d after distinct keys, want 0", n)
			}
		})
	}
	s := openTest(t)
	k := mustKeyer(t, testIdentity())
	r := mustKeyed(t, k, testRequest(0))
	for range 2 {
		if err := s.PutResponse(ctx, k, r, &sdk.GenerateResponse{Text: "x", Usage: sdk.Usage{PromptTokens: 1}}, time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.RepeatedResponses(); n != 1 {
		t.Errorf("RepeatedResponses = %d after one key put twice, want 1", n)
	}
}
