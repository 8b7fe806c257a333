package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/report"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// setOpener opens components in-process from a Set: the runner's logic is
// under test here; the plugin boundary has its own tests.
type setOpener struct{ set *sdk.Set }

func (o setOpener) OpenTask(ctx context.Context, name, _ string, opts sdk.Options) (sdk.Task, error) {
	return openKind[sdk.Task](ctx, o.set, sdk.KindTask, name, opts)
}

func (o setOpener) OpenModel(ctx context.Context, name, _ string, opts sdk.Options) (sdk.Model, error) {
	return openKind[sdk.Model](ctx, o.set, sdk.KindModel, name, opts)
}

func (o setOpener) OpenScorer(ctx context.Context, name, _ string, opts sdk.Options) (sdk.Scorer, error) {
	return openKind[sdk.Scorer](ctx, o.set, sdk.KindScorer, name, opts)
}

func (o setOpener) OpenRetriever(ctx context.Context, name, _ string, opts sdk.Options) (sdk.Retriever, error) {
	return openKind[sdk.Retriever](ctx, o.set, sdk.KindRetriever, name, opts)
}

func openKind[T any](ctx context.Context, set *sdk.Set, kind sdk.Kind, name string, opts sdk.Options) (T, error) {
	var zero T
	v, err := set.New(ctx, kind, name, opts)
	if err != nil {
		return zero, err
	}
	return v.(T), nil
}

// counting is a task of n samples "q<i>" whose answer is "a<i>".
type counting struct{ n int }

func (c counting) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		for i := range c.n {
			s := &sdk.Sample{ID: strconv.Itoa(i), Context: fmt.Sprintf("doc %d with the answer a%d", i, i),
				Question: "q" + strconv.Itoa(i), Targets: []string{"a" + strconv.Itoa(i)}, Depth: -1}
			if !yield(s, nil) {
				return
			}
		}
	}
}

// echoModel answers "a<i>" for sample i, except where fail says otherwise.
type echoModel struct {
	calls, inFlight, maxInFlight atomic.Int64
	delay                        time.Duration
	fail                         func(id string) error
}

func (m *echoModel) Generate(ctx context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	m.calls.Add(1)
	n := m.inFlight.Add(1)
	defer m.inFlight.Add(-1)
	for {
		old := m.maxInFlight.Load()
		if n <= old || m.maxInFlight.CompareAndSwap(old, n) {
			break
		}
	}
	if m.delay > 0 {
		select {
		case <-time.After(m.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if m.fail != nil {
		if err := m.fail(req.Sample.ID); err != nil {
			return nil, err
		}
	}
	return &sdk.GenerateResponse{Text: "a" + req.Sample.ID, Attempts: []sdk.Attempt{{Status: 200, LatencyMS: 1}}}, nil
}

type matchScorer struct{}

func (matchScorer) Score(_ context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	for _, t := range req.Sample.Targets {
		if req.Prediction == t {
			return &sdk.ScoreResponse{Value: 1}, nil
		}
	}
	return &sdk.ScoreResponse{Value: 0}, nil
}

// firstHalf keeps the first half of the context: it makes retrieval rows
// differ from full-context rows in what they send.
type firstHalf struct{}

func (firstHalf) Retrieve(_ context.Context, req *sdk.RetrieveRequest) (*sdk.RetrieveResponse, error) {
	c := req.Sample.Context
	return &sdk.RetrieveResponse{Context: c[:len(c)/2], Chunks: []sdk.Chunk{{ID: 0}}}, nil
}

type fixture struct {
	models map[string]*echoModel
	store  *store.Store
	set    *sdk.Set
}

// oneEval is the config of the common test run: the counting task, one
// model named kind (with its HCL attributes attrs), and one eval "e" with
// scorers.
func oneEval(kind, attrs string, scorers ...string) string {
	return fmt.Sprintf(`
task "counting" "t" {}
model %[1]q "m" {%[2]s}
eval "e" {
  task    = task.counting.t
  models  = [model.%[1]s.m]
  scorers = [%[3]s]
}
`, kind, attrs, quoteList(scorers))
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func newFixture(t *testing.T, n int, models map[string]*echoModel) *fixture {
	t.Helper()
	set := sdk.NewSet("test", "1")
	set.RegisterTask("counting", func(context.Context, sdk.Options) (sdk.Task, error) { return counting{n}, nil })
	for name, m := range models {
		set.RegisterModel(name, func(context.Context, sdk.Options) (sdk.Model, error) { return m, nil })
	}
	set.RegisterScorer("match", func(context.Context, sdk.Options) (sdk.Scorer, error) { return matchScorer{}, nil })
	set.RegisterRetriever("half", func(context.Context, sdk.Options) (sdk.Retriever, error) { return firstHalf{}, nil })
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &fixture{models: models, store: st, set: set}
}

func (f *fixture) run(t *testing.T, ctx context.Context, hcl string) (*Result, error) {
	t.Helper()
	cfg, err := config.Parse("test.hcl", []byte(hcl), config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Opener: setOpener{f.set}, Store: f.store}).Run(ctx, cfg)
}

const twoByTwo = `
task "counting" "t" {}
model "good" "g" { max_concurrency = 3 }
model "flaky" "f" { max_concurrency = 2 }
retriever "half" "h" {}
eval "e" {
  task       = task.counting.t
  models     = [model.good.g, model.flaky.f]
  retrievers = [null, retriever.half.h]
  scorers    = ["match"]
}
`

func TestRowsScoresAndFailures(t *testing.T) {
	good := &echoModel{delay: time.Millisecond}
	flaky := &echoModel{fail: func(id string) error {
		if id == "3" || id == "7" {
			return &sdk.RequestError{Code: sdk.CodeContextLength, Msg: "too long"}
		}
		return nil
	}}
	f := newFixture(t, 20, map[string]*echoModel{"good": good, "flaky": flaky})
	res, err := f.run(t, context.Background(), twoByTwo)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Evals) != 4 {
		t.Fatalf("%d rows, want 4", len(res.Evals))
	}
	for _, ev := range res.Evals {
		want := struct{ samples, errors int }{20, 0}
		if ev.Model == "model.flaky.f" {
			want.samples, want.errors = 18, 2
		}
		if ev.Samples != want.samples || ev.Errors != want.errors || ev.Error != "" {
			t.Errorf("%s/%s: samples %d errors %d (%q), want %d and %d", ev.Model, ev.Retriever, ev.Samples, ev.Errors, ev.Error, want.samples, want.errors)
		}
		if m := ev.Metrics["match"]; m == nil || m.Value != 1 || m.N != want.samples {
			t.Errorf("%s/%s: match = %+v", ev.Model, ev.Retriever, m)
		}
	}
	// The report reads back what the runner counted, row for row, and adds
	// the retrieval rows' deltas against their full-context rows.
	rep, err := report.Load(context.Background(), f.store, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range res.Evals {
		got := rep.Evals[i]
		if got.Name != ev.Name || got.Model != ev.Model || got.Retriever != ev.Retriever || got.Samples != ev.Samples ||
			got.Errors != ev.Errors || got.Cached != ev.Cached || got.Truncated != ev.Truncated ||
			fmt.Sprint(*got.Metrics["match"]) != fmt.Sprint(*ev.Metrics["match"]) {
			t.Errorf("row %d: report %+v, runner %+v", i, got, ev)
		}
		if _, ok := got.Delta["match"]; ok != (ev.Retriever != "none") {
			t.Errorf("row %d (%s): delta %v", i, ev.Retriever, got.Delta)
		}
	}
	if got := good.maxInFlight.Load(); got > 3 {
		t.Errorf("good model saw %d requests at once, max_concurrency is 3", got)
	}
	// Each retriever sends a different prompt, so each row asks the model.
	if got := good.calls.Load(); got != 40 {
		t.Errorf("good model asked %d times, want 40", got)
	}
	fails, err := f.store.Failures(context.Background(), res.RunID, "e/model.flaky.f/none")
	if err != nil || len(fails) != 2 {
		t.Fatalf("journaled failures = %v, %v; want 2", fails, err)
	}

	// A second run is served from the journal, failures excepted.
	res2, err := f.run(t, context.Background(), twoByTwo)
	if err != nil {
		t.Fatal(err)
	}
	if got := good.calls.Load(); got != 40 {
		t.Errorf("second run asked the good model again: %d calls", got)
	}
	if got := flaky.calls.Load(); got != 40+4 {
		t.Errorf("flaky model calls = %d, want the 4 failures asked again (44)", got)
	}
	for _, ev := range res2.Evals {
		if ev.Cached != ev.Samples {
			t.Errorf("%s/%s: cached %d of %d", ev.Model, ev.Retriever, ev.Cached, ev.Samples)
		}
	}
}

func TestBrokenModelEndsItsRowOnly(t *testing.T) {
	good := &echoModel{}
	broken := &echoModel{fail: func(string) error { return errors.New("plugin crashed twice") }}
	f := newFixture(t, 10, map[string]*echoModel{"good": good, "flaky": broken})
	res, err := f.run(t, context.Background(), strings.Replace(twoByTwo, "[null, retriever.half.h]", "[null]", 1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed() {
		t.Fatal("result does not report the failure")
	}
	for _, ev := range res.Evals {
		switch ev.Model {
		case "model.good.g":
			if ev.Error != "" || ev.Samples != 10 {
				t.Errorf("good row: %+v", ev)
			}
		case "model.flaky.f":
			if !strings.Contains(ev.Error, "plugin crashed twice") || !strings.Contains(ev.Error, "model.flaky.f") {
				t.Errorf("broken row error = %q", ev.Error)
			}
		}
	}
}

func TestServerThatNeverAnswersStopsEarly(t *testing.T) {
	down := &echoModel{fail: func(string) error { return sdk.Retryable(errors.New("connection refused"), 0) }}
	f := newFixture(t, 500, map[string]*echoModel{"flaky": down})
	res, err := f.run(t, context.Background(), `
task "counting" "t" {}
model "flaky" "f" { max_concurrency = 1 }
eval "e" {
  task = task.counting.t
  models = [model.flaky.f]
  scorers = ["match"]
}`)
	if err != nil {
		t.Fatal(err)
	}
	ev := res.Evals[0]
	if !strings.Contains(ev.Error, "connection refused") {
		t.Fatalf("row error = %q", ev.Error)
	}
	if calls := down.calls.Load(); calls > maxBlindFailures+1 {
		t.Fatalf("asked %d times before giving up", calls)
	}
}

func TestCancelKeepsFinishedWork(t *testing.T) {
	slow := &echoModel{delay: 20 * time.Millisecond}
	f := newFixture(t, 1000, map[string]*echoModel{"good": slow})
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	go func() {
		for slow.calls.Load() < 10 {
			time.Sleep(time.Millisecond)
		}
		once.Do(cancel)
	}()
	cfg := `
task "counting" "t" {}
model "good" "g" { max_concurrency = 2 }
eval "e" {
  task = task.counting.t
  models = [model.good.g]
  scorers = ["match"]
}`
	res, err := f.run(t, ctx, cfg)
	if !errors.Is(err, context.Canceled) || res == nil || !res.Interrupted {
		t.Fatalf("err %v, res %+v", err, res)
	}
	done := res.Evals[0].Samples
	if done == 0 || done >= 1000 {
		t.Fatalf("%d samples done at the interruption", done)
	}
	calls := slow.calls.Load()
	res, err = f.run(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Evals[0].Cached < done {
		t.Fatalf("resume reused %d responses, %d were finished", res.Evals[0].Cached, done)
	}
	if asked := slow.calls.Load() - calls; asked > int64(1000-done) {
		t.Fatalf("resume asked %d, only %d were missing", asked, 1000-done)
	}
}

// More requests allowed in flight than the send order's look-ahead holds:
// with every sample read ahead in flight, the window has nothing pending,
// and the run must read on rather than end.
func TestConcurrencyBeyondTheLookahead(t *testing.T) {
	for _, order := range []string{"prefix", "task"} {
		t.Run(order, func(t *testing.T) {
			m := &echoModel{delay: 5 * time.Millisecond}
			f := newFixture(t, 700, map[string]*echoModel{"good": m})
			res, err := f.run(t, context.Background(), fmt.Sprintf(`
task "counting" "t" {}
model "good" "g" { max_concurrency = 300 }
eval "e" {
  task    = task.counting.t
  models  = [model.good.g]
  scorers = ["match"]
  order   = %q
}`, order))
			if err != nil {
				t.Fatal(err)
			}
			if ev := res.Evals[0]; ev.Samples != 700 || ev.Error != "" {
				t.Fatalf("%d samples done (error %q), want 700", ev.Samples, ev.Error)
			}
			if got := m.maxInFlight.Load(); got > 300 {
				t.Errorf("%d requests at once, max_concurrency is 300", got)
			}
		})
	}
}
