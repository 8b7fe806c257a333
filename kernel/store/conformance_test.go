package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// The journal's promises, written against a journal's location only, so
// that every backend runs the same suite: a rerun finds what the last run
// journaled; the cache is shared by identities that answer alike and split
// between those that do not; kill -9 loses nothing acknowledged; several
// processes write one journal at once without losing or doubling a row.
type conformanceBackend struct {
	name string
	// fresh returns the location of a new, empty journal.
	fresh func(t *testing.T) string
}

var conformanceBackends = []conformanceBackend{
	{name: "sqlite", fresh: func(t *testing.T) string { return filepath.Join(t.TempDir(), "hayloft.db") }},
	{name: "postgres", fresh: func(t *testing.T) string {
		dsn := testPostgres(t)
		// The processes' logs go under .hayloft/ of the working
		// directory, which child processes share.
		t.Chdir(t.TempDir())
		return dsn
	}},
}

func TestConformance(t *testing.T) {
	for _, b := range conformanceBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Run("resume", func(t *testing.T) { conformResume(t, b.fresh(t)) })
			t.Run("cache across identities", func(t *testing.T) { conformIdentities(t, b.fresh(t)) })
			t.Run("report read", func(t *testing.T) { conformReport(t, b.fresh(t)) })
			t.Run("kill -9 mid-run", func(t *testing.T) {
				if testing.Short() {
					t.Skip("starts child processes")
				}
				conformKill(t, b.fresh(t))
			})
			t.Run("4 writer processes", func(t *testing.T) {
				if testing.Short() {
					t.Skip("starts child processes")
				}
				conformWriters(t, b.fresh(t))
			})
		})
	}
}

func mustOpen(t *testing.T, where string) *Store {
	t.Helper()
	s, err := Open(context.Background(), where)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func conformResume(t *testing.T, where string) {
	ctx := context.Background()
	s := mustOpen(t, where)
	run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "resume.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutEval(ctx, run, EvalInfo{Name: "e", Scorers: []string{"exact"}}); err != nil {
		t.Fatal(err)
	}
	k := mustKeyer(t, testIdentity())
	const n = 50
	for i := range n {
		r := mustKeyed(t, k, testRequest(i))
		if err := s.PutResponse(ctx, k, r, &sdk.GenerateResponse{Text: strconv.Itoa(i)}, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := s.PutResult(ctx, run, "e", &sdk.Sample{ID: strconv.Itoa(i)}, SampleMeta{Index: i, RequestKey: r.Key},
			[]NamedScore{{Scorer: "exact", Score: &sdk.ScoreResponse{Value: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FinishRun(ctx, run, StatusInterrupted); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, where)
	defer s.Close()
	for i := range n + 5 {
		c, ok, err := s.LookupResponse(ctx, mustKeyed(t, k, testRequest(i)).Key)
		if err != nil {
			t.Fatal(err)
		}
		if ok != (i < n) || ok && c.Response.Text != strconv.Itoa(i) {
			t.Errorf("request %d after reopening: ok=%v resp=%+v", i, ok, c)
		}
	}
	samples, err := s.Samples(ctx, run, "e")
	if err != nil || len(samples) != n {
		t.Fatalf("samples after reopening: %d, %v", len(samples), err)
	}
	scores, err := s.Scores(ctx, run, "e", "exact")
	if err != nil || len(scores) != n {
		t.Fatalf("scores after reopening: %d, %v", len(scores), err)
	}
}

func conformIdentities(t *testing.T, where string) {
	ctx := context.Background()
	s := mustOpen(t, where)
	defer s.Close()
	base := testIdentity()
	k := mustKeyer(t, base)
	req := testRequest(7)
	if err := s.PutResponse(ctx, k, mustKeyed(t, k, req), &sdk.GenerateResponse{Text: "seven"}, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	renamed, otherModel, otherServer := base, base, base
	renamed.Instance = "another-label"
	otherModel.Model = "another/model"
	otherServer.Endpoint = "http://127.0.0.1:9000/v1"
	for _, tc := range []struct {
		name string
		id   ModelIdentity
		hit  bool
	}{
		{"same identity", base, true},
		{"block renamed", renamed, true},
		{"another model", otherModel, false},
		{"another server", otherServer, false},
	} {
		k := mustKeyer(t, tc.id)
		c, ok, err := s.LookupResponse(ctx, mustKeyed(t, k, req).Key)
		if err != nil {
			t.Fatal(err)
		}
		if ok != tc.hit || ok && c.Response.Text != "seven" {
			t.Errorf("%s: hit=%v (want %v) resp=%+v", tc.name, ok, tc.hit, c)
		}
	}
}

func conformKill(t *testing.T, where string) {
	ctx := context.Background()
	keys := killChildMidWrite(t, where, SyncBatch, 0, 300)
	s := mustOpen(t, where)
	defer s.Close()
	for _, key := range keys {
		if _, ok, err := s.LookupResponse(ctx, key); err != nil || !ok {
			t.Fatalf("acknowledged response %s lost after kill -9 (err %v)", key, err)
		}
	}
}

const writerEnv = "HAYLOFT_STORE_WRITER"

// TestWriterProcess is one of conformWriters' processes: it answers n
// samples of eval "e" of run $…_RUN, every process the same requests
// (so they race for the cache), each its own sample IDs, and prints how
// many requests it asked (did not find in the cache).
func TestWriterProcess(t *testing.T) {
	where := os.Getenv(writerEnv)
	if where == "" {
		t.Skip("runs only as a child of the conformance suite")
	}
	time.AfterFunc(60*time.Second, func() { os.Exit(4) })
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	s, err := Open(ctx, where)
	if err != nil {
		fail(err)
	}
	run, id := os.Getenv(writerEnv+"_RUN"), os.Getenv(writerEnv+"_ID")
	n, _ := strconv.Atoi(os.Getenv(writerEnv + "_N"))
	k, err := NewKeyer(testIdentity())
	if err != nil {
		fail(err)
	}
	var (
		mu    sync.Mutex
		asked int
		wg    sync.WaitGroup
	)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				r, err := k.Request(testRequest(i))
				if err != nil {
					fail(err)
				}
				c, ok, err := s.LookupResponse(ctx, r.Key)
				if err != nil {
					fail(err)
				}
				text := "answer " + strconv.Itoa(i)
				if ok {
					text = c.Response.Text
				} else {
					resp := &sdk.GenerateResponse{Text: text, Attempts: []sdk.Attempt{{Status: 200}}}
					if err := s.PutResponse(ctx, k, r, resp, time.Millisecond); err != nil {
						fail(err)
					}
					mu.Lock()
					asked++
					mu.Unlock()
				}
				smp := &sdk.Sample{ID: id + "-" + strconv.Itoa(i)}
				if err := s.PutResult(ctx, run, "e", smp, SampleMeta{Index: i, RequestKey: r.Key},
					[]NamedScore{{Scorer: "exact", Score: &sdk.ScoreResponse{Value: float64(len(text))}}}); err != nil {
					fail(err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := s.Close(); err != nil {
		fail(err)
	}
	fmt.Printf("asked %d\n", asked)
}

func conformWriters(t *testing.T, where string) {
	const procs, n = 4, 400
	ctx := context.Background()
	s := mustOpen(t, where)
	run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "writers.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutEval(ctx, run, EvalInfo{Name: "e", Scorers: []string{"exact"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	cmds := make([]*exec.Cmd, procs)
	outs := make([]bytes.Buffer, procs)
	errs := make([]bytes.Buffer, procs)
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriterProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), writerEnv+"="+where, writerEnv+"_RUN="+run,
			fmt.Sprintf("%s_ID=p%d", writerEnv, p), fmt.Sprintf("%s_N=%d", writerEnv, n))
		cmd.Stdout, cmd.Stderr = &outs[p], &errs[p]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[p] = cmd
	}
	asked := 0
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer %d: %v\n%s", p, err, errs[p].String())
		}
		var a int
		if _, err := fmt.Sscanf(lastLine(outs[p].String(), "asked "), "asked %d", &a); err != nil {
			t.Fatalf("writer %d printed %q", p, outs[p].String())
		}
		asked += a
	}

	s = mustOpen(t, where)
	defer s.Close()
	samples, err := s.Samples(ctx, run, "e")
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != procs*n {
		t.Errorf("%d samples journaled, want %d", len(samples), procs*n)
	}
	scores, err := s.Scores(ctx, run, "e", "exact")
	if err != nil {
		t.Fatal(err)
	}
	if len(scores) != procs*n {
		t.Errorf("%d scores journaled, want %d", len(scores), procs*n)
	}
	k := mustKeyer(t, testIdentity())
	attempts := 0
	for i := range n {
		key := mustKeyed(t, k, testRequest(i)).Key
		c, ok, err := s.LookupResponse(ctx, key)
		if err != nil || !ok || c.Response.Text != "answer "+strconv.Itoa(i) {
			t.Fatalf("request %d: ok=%v err=%v resp=%+v", i, ok, err, c)
		}
		at, err := s.Attempts(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		attempts += len(at)
	}
	// Every process's PutResponse journaled one attempt; a log fed twice
	// (one process feeding another's live log) would show more.
	if asked < n || attempts != asked {
		t.Errorf("%d requests asked over %d processes, %d attempts journaled; want ≥ %d asked and one attempt each", asked, procs, attempts, n)
	}
	t.Logf("%d processes × %d samples: %d asked (%d found in the cache another process had filled)", procs, n, asked, procs*n-asked)
}

func lastLine(out, prefix string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], prefix) {
			return lines[i]
		}
	}
	return ""
}

// conformReport journals what a sharded run's report reads, the logged rows
// with every column (grid points, cached tokens) and the direct ones
// (outcome, metrics, overhead), and reads it back after a reopen: the same
// queries on every backend.
func conformReport(t *testing.T, where string) {
	ctx := context.Background()
	s := mustOpen(t, where)
	run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "report.hcl", ConfigText: "report", Shard: 1, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeginRun(ctx, RunInfo{ConfigPath: "report.hcl", ConfigText: "report", Shard: 0, Shards: 3}); !errors.As(err, new(*ShardCountError)) {
		t.Errorf("a second shard count = %v, want a ShardCountError", err)
	}
	if err := s.PutEval(ctx, run, EvalInfo{Name: "e", Eval: "block", Position: 1, Scorers: []string{"exact"}}); err != nil {
		t.Fatal(err)
	}
	k := mustKeyer(t, testIdentity())
	// Samples 0-3 on a grid (lengths 1000, 2000; depths 0, 0.5), 4-5
	// without one (measured length 300, depth 0.25); sample 5 invalid.
	for i := range 6 {
		r := mustKeyed(t, k, testRequest(i))
		var cached *int
		if i%2 == 0 {
			cached = new(int)
			*cached = 10 * i
		}
		if err := s.PutResponse(ctx, k, r, &sdk.GenerateResponse{Text: "x",
			Usage: sdk.Usage{PromptTokens: 100, CachedTokens: cached}}, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		smp := &sdk.Sample{ID: strconv.Itoa(i), Length: sdk.Length{Tokens: 300}, Depth: 0.25}
		if i < 4 {
			smp.Grid = &sdk.GridPoint{Length: 1000 * (1 + i/2), Depth: 0.5 * float64(i%2)}
		}
		if err := s.PutResult(ctx, run, "e", smp, SampleMeta{Index: i, RequestKey: r.Key},
			[]NamedScore{{Scorer: "exact", Score: &sdk.ScoreResponse{Value: float64(i), Invalid: i == 5}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutFailure(ctx, run, "e", "6", "k6", errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	metric := &Metric{Value: 0.5, N: 5, Invalid: 1, CILow: 0.25, CIHigh: 0.75, Details: map[string]any{"note": "x"}}
	if err := s.FinishEval(ctx, run, "e", Outcome{Samples: 6, Cached: 2, Errors: 1, Truncated: 3}, map[string]*Metric{"exact": metric}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutOverhead(ctx, run, 12.5); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, run, StatusDone); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, where)
	defer s.Close()
	got, err := s.GetRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if got.OverheadUS != 12.5 || got.Shard != 1 || got.Shards != 2 {
		t.Errorf("run: overhead %v, shard %d/%d; want 12.5, 1/2", got.OverheadUS, got.Shard, got.Shards)
	}
	evals, err := s.Evals(ctx, run)
	if err != nil || len(evals) != 1 {
		t.Fatalf("evals: %+v, %v", evals, err)
	}
	if e := evals[0]; e.Eval != "block" || e.Position != 1 || e.Outcome != (Outcome{Samples: 6, Cached: 2, Errors: 1, Truncated: 3}) {
		t.Errorf("eval row = %+v", e)
	}
	metrics, err := s.Metrics(ctx, run, "e")
	if err != nil {
		t.Fatal(err)
	}
	if m := metrics["exact"]; m == nil || m.Value != 0.5 || m.N != 5 || m.Invalid != 1 || m.CILow != 0.25 || m.CIHigh != 0.75 || m.Details["note"] != "x" {
		t.Errorf("metrics = %+v", metrics)
	}
	sums, err := s.BucketSums(ctx, run, "e")
	if err != nil {
		t.Fatal(err)
	}
	type bucket struct {
		depth bool
		key   float64
	}
	want := map[bucket]BucketSum{
		{false, 1000}: {Samples: 2, Valid: 2, Sum: 0 + 1},
		{false, 2000}: {Samples: 2, Valid: 2, Sum: 2 + 3},
		{false, 300}:  {Samples: 2, Valid: 1, Sum: 4},
		{true, 0}:     {Samples: 2, Valid: 2, Sum: 0 + 2},
		{true, 0.5}:   {Samples: 2, Valid: 2, Sum: 1 + 3},
		{true, 0.25}:  {Samples: 2, Valid: 1, Sum: 4},
	}
	if len(sums) != len(want) {
		t.Errorf("bucket sums: %d buckets, want %d: %+v", len(sums), len(want), sums)
	}
	for _, b := range sums {
		w, ok := want[bucket{b.Depth, b.Key}]
		if !ok || b.Scorer != "exact" || b.Samples != w.Samples || b.Valid != w.Valid || b.Sum != w.Sum {
			t.Errorf("bucket %+v, want %+v", b, w)
		}
	}
	samples, err := s.Samples(ctx, run, "e")
	if err != nil || len(samples) != 6 {
		t.Fatalf("samples: %d, %v", len(samples), err)
	}
	for i, smp := range samples {
		if (smp.Grid != nil) != (i < 4) || i < 4 && *smp.Grid != (sdk.GridPoint{Length: 1000 * (1 + i/2), Depth: 0.5 * float64(i%2)}) {
			t.Errorf("sample %d grid = %+v", i, smp.Grid)
		}
	}
	use, err := s.PrefixUse(ctx, run, "e")
	if err != nil {
		t.Fatal(err)
	}
	if want := (PrefixUse{Responses: 6, Reported: 3, PromptTokens: 600, CachedTokens: 0 + 20 + 40, ComputedTokens: 300 - 60}); use != want {
		t.Errorf("prefix use = %+v, want %+v", use, want)
	}
	// That was the use journaled when the row finished; summed from the
	// samples again, it is the same.
	var journaledUse sql.NullString
	if err := s.db.QueryRowContext(ctx, `SELECT prefix_use FROM evals WHERE run_id = $1 AND name = 'e'`, run).Scan(&journaledUse); err != nil || !journaledUse.Valid {
		t.Errorf("prefix use journaled: %+v, %v", journaledUse, err)
	}
	if summed, err := s.sumPrefixUse(ctx, run, "e"); err != nil || summed != use {
		t.Errorf("prefix use summed from the samples = %+v, %v; journaled %+v", summed, err, use)
	}
	var answers []string
	err = s.EachSampleAnswer(ctx, run, "e", ReadRequest, func(a *SampleAnswer) error {
		if a.Failed != (a.ID == "6") || !a.Failed && (!a.Answered || a.Text != "x" || a.PromptTokens != 100 || len(a.Request) == 0) {
			t.Errorf("sample answer %s = %+v", a.ID, a)
		}
		answers = append(answers, a.ID)
		return nil
	})
	if err != nil || strings.Join(answers, ",") != "0,1,2,3,4,5,6" {
		t.Errorf("sample answers %v, %v", answers, err)
	}
	invalid := 0
	err = s.EachScore(ctx, run, "e", func(r *ScoreRow) error {
		if r.Invalid {
			invalid++
		}
		return nil
	})
	if err != nil || invalid != 1 {
		t.Errorf("scores: %d invalid, %v", invalid, err)
	}
	// The report's index reads the values with their details.
	var values []string
	err = s.EachScoreValue(ctx, run, "e", func(v *ScoreValue) error {
		values = append(values, fmt.Sprintf("%s=%g/%t%s", v.SampleID, v.Value, v.Invalid, v.Details))
		return nil
	})
	if want := "0=0/false{} 1=1/false{} 2=2/false{} 3=3/false{} 4=4/false{} 5=5/true{}"; err != nil || strings.Join(values, " ") != want {
		t.Errorf("score values %q, %v; want %q", values, err, want)
	}
	if done, failed, err := s.RunProgress(ctx, run); err != nil || done != 6 || failed != 1 {
		t.Errorf("run progress = %d, %d, %v", done, failed, err)
	}
	progress, err := s.ShardProgress(ctx, got.ConfigHash)
	if err != nil {
		t.Fatal(err)
	}
	if len(progress) != 1 || progress[0].Done != 6 || progress[0].Failed != 1 || progress[0].Shard != 1 {
		t.Errorf("shard progress = %+v", progress)
	}
}
