package runner

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

// closingModel is an echoModel that records its Close.
type closingModel struct {
	echoModel
	closed chan struct{}
}

func (m *closingModel) Close() error {
	close(m.closed)
	return nil
}

// TestEvalComponentsOpenAtOnce checks that an eval's components are opened
// together, not one after another: each open here waits until every other
// one has begun, which in series would never happen (the wait then gives
// up and the eval fails). Every component is closed at the end.
func TestEvalComponentsOpenAtOnce(t *testing.T) {
	f := newFixture(t, 5, nil)
	const opens = 4 // the task, two models, the scorer
	var begun sync.WaitGroup
	begun.Add(opens)
	all := make(chan struct{})
	go func() { begun.Wait(); close(all) }()
	await := func(ctx context.Context) error {
		begun.Done()
		select {
		case <-all:
			return nil
		case <-time.After(30 * time.Second):
			return errors.New("opened one after another: the other components never began to open")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	models := map[string]*closingModel{}
	for _, name := range []string{"a", "b"} {
		m := &closingModel{closed: make(chan struct{})}
		models[name] = m
		f.set.RegisterModel(name, func(ctx context.Context, _ sdk.Options) (sdk.Model, error) {
			if err := await(ctx); err != nil {
				return nil, err
			}
			return m, nil
		})
	}
	f.set.RegisterTask("slow", func(ctx context.Context, _ sdk.Options) (sdk.Task, error) {
		if err := await(ctx); err != nil {
			return nil, err
		}
		return counting{5}, nil
	})
	f.set.RegisterScorer("slowmatch", func(ctx context.Context, _ sdk.Options) (sdk.Scorer, error) {
		if err := await(ctx); err != nil {
			return nil, err
		}
		return matchScorer{}, nil
	})
	res, err := f.run(t, context.Background(), `
task "slow" "t" {}
model "a" "a" {}
model "b" "b" {}
eval "e" {
  task    = task.slow.t
  models  = [model.a.a, model.b.b]
  scorers = ["slowmatch"]
}
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range res.Evals {
		if ev.Error != "" || ev.Samples != 5 {
			t.Errorf("%s: %d samples, error %q", ev.Model, ev.Samples, ev.Error)
		}
	}
	for name, m := range models {
		select {
		case <-m.closed:
		default:
			t.Errorf("model %s not closed after the run", name)
		}
	}
}

// TestPrefetchOpensTheFirstEvalBeforeTheRun checks that Prefetch begins
// opening the first selected eval's task, model and scorer before Run is
// called (each open here waits until all three have begun, which only a
// prefetch can bring about without Run), that Run then uses those opens,
// once each, and closes them; the next eval's components wait for the run.
func TestPrefetchOpensTheFirstEvalBeforeTheRun(t *testing.T) {
	f := newFixture(t, 4, nil)
	var begun sync.WaitGroup
	begun.Add(3)
	all := make(chan struct{})
	go func() { begun.Wait(); close(all) }()
	var mu sync.Mutex
	opens := map[string]int{}
	opened := func(name string) {
		mu.Lock()
		opens[name]++
		mu.Unlock()
	}
	await := func(ctx context.Context, name string) error {
		opened(name)
		begun.Done()
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m := &closingModel{closed: make(chan struct{})}
	f.set.RegisterModel("a", func(ctx context.Context, _ sdk.Options) (sdk.Model, error) {
		return m, await(ctx, "model")
	})
	f.set.RegisterTask("slow", func(ctx context.Context, _ sdk.Options) (sdk.Task, error) {
		return counting{4}, await(ctx, "task")
	})
	f.set.RegisterScorer("slowmatch", func(ctx context.Context, _ sdk.Options) (sdk.Scorer, error) {
		return matchScorer{}, await(ctx, "scorer")
	})
	f.set.RegisterTask("later", func(context.Context, sdk.Options) (sdk.Task, error) {
		opened("later")
		return counting{2}, nil
	})
	cfg, err := config.Parse("test.hcl", []byte(`
task "slow" "t" {}
task "later" "l" {}
model "a" "a" {}
eval "skipped" {
  task    = task.later.l
  models  = [model.a.a]
  scorers = ["match"]
}
eval "first" {
  task    = task.slow.t
  models  = [model.a.a]
  scorers = ["slowmatch"]
}
eval "second" {
  task    = task.later.l
  models  = [model.a.a]
  scorers = ["match"]
}
`), config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := Options{Opener: setOpener{f.set}, Store: f.store, Evals: []string{"first", "second"}}
	opts.Prefetched = Prefetch(ctx, opts, cfg)
	select {
	case <-all:
	case <-ctx.Done():
		t.Fatal("Prefetch did not begin opening the first eval's task, model and scorer together")
	}
	mu.Lock()
	if opens["later"] != 0 {
		t.Errorf("Prefetch opened the task of an eval after the first selected one")
	}
	mu.Unlock()
	res, err := New(opts).Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range res.Evals {
		if ev.Error != "" {
			t.Errorf("eval %s: %s", ev.Name, ev.Error)
		}
	}
	if len(res.Evals) != 2 || res.Evals[0].Samples != 4 || res.Evals[1].Samples != 2 {
		t.Errorf("evals %+v, want first with 4 samples and second with 2", res.Evals)
	}
	want := map[string]int{"task": 1, "model": 1, "scorer": 1, "later": 1}
	mu.Lock()
	defer mu.Unlock()
	if !maps.Equal(opens, want) {
		t.Errorf("opens %v, want each once: %v", opens, want)
	}
	select {
	case <-m.closed:
	default:
		t.Error("the prefetched model was not closed after the run")
	}
}

// A prefetch that no run takes over closes what it opened.
func TestPrefetchClosedUnused(t *testing.T) {
	f := newFixture(t, 1, nil)
	m := &closingModel{closed: make(chan struct{})}
	f.set.RegisterModel("a", func(context.Context, sdk.Options) (sdk.Model, error) { return m, nil })
	cfg, err := config.Parse("test.hcl", []byte(`
model "a" "a" {}
eval "e" {
  task    = task.counting.t
  models  = [model.a.a]
  scorers = ["match"]
}
task "counting" "t" {}
`), config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	Prefetch(context.Background(), Options{Opener: setOpener{f.set}}, cfg).Close()
	select {
	case <-m.closed:
	default:
		t.Error("Close left the prefetched model open")
	}
}

// waitingAggregator is an aggregating scorer that reports, at each
// Aggregate, whether the model had been closed by then (waiting a while
// for it on the last eval, whose model closes in the background).
type waitingAggregator struct {
	infoScorer
	model  *closingModel
	wait   bool
	closed []bool
}

func (s *waitingAggregator) Aggregate(ctx context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	timeout := time.Duration(0)
	if s.wait {
		timeout = 30 * time.Second
	}
	select {
	case <-s.model.closed:
		s.closed = append(s.closed, true)
	case <-time.After(timeout):
		s.closed = append(s.closed, false)
	}
	s.wait = true // the next eval is the last
	return s.infoScorer.Aggregate(ctx, req)
}

// The last eval's task and model processes are closed once its samples are
// answered, before its rows are aggregated; an eval with another after it
// keeps the model the next one uses.
func TestLastEvalClosesModelBeforeAggregating(t *testing.T) {
	f := newFixture(t, 3, nil)
	m := &closingModel{closed: make(chan struct{})}
	f.set.RegisterModel("a", func(context.Context, sdk.Options) (sdk.Model, error) { return m, nil })
	sc := &waitingAggregator{infoScorer: infoScorer{caps: []string{plugin.CapAggregator}}, model: m}
	f.set.RegisterScorer("agg", func(context.Context, sdk.Options) (sdk.Scorer, error) { return sc, nil })
	res, err := f.run(t, context.Background(), `
task "counting" "t" {}
model "a" "a" {}
eval "first" {
  task    = task.counting.t
  models  = [model.a.a]
  scorers = ["agg"]
}
eval "last" {
  task    = task.counting.t
  models  = [model.a.a]
  scorers = ["agg"]
}
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range res.Evals {
		if ev.Error != "" || ev.Samples != 3 {
			t.Errorf("eval %s: %d samples, error %q", ev.Name, ev.Samples, ev.Error)
		}
	}
	if want := []bool{false, true}; !slices.Equal(sc.closed, want) {
		t.Errorf("model closed at each eval's aggregate: %v, want %v", sc.closed, want)
	}
}

// closingScorer is an infoScorer that records its Close and, closed,
// answers as a closed plugin component does: its Info no longer says what
// it serves, and a call fails.
type closingScorer struct {
	infoScorer
	closed chan struct{}
}

func (s *closingScorer) Close() error {
	close(s.closed)
	return nil
}

func (s *closingScorer) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

func (s *closingScorer) Info() plugin.Info {
	if s.isClosed() {
		return plugin.Info{Kind: sdk.KindScorer}
	}
	return s.infoScorer.Info()
}

func (s *closingScorer) Aggregate(ctx context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	if s.isClosed() {
		return nil, errors.New("component is closed")
	}
	return s.infoScorer.Aggregate(ctx, req)
}

// aggregatorWatching is an aggregating scorer that reports, at its
// Aggregate, whether the other scorer had been closed by then (waiting a
// while for it, since it closes in the background), and whether itself had.
type aggregatorWatching struct {
	closingScorer
	other       *closingScorer
	otherClosed bool
	selfClosed  bool
}

func (s *aggregatorWatching) Aggregate(ctx context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	select {
	case <-s.other.closed:
		s.otherClosed = true
	case <-time.After(30 * time.Second):
	}
	select {
	case <-s.closed:
		s.selfClosed = true
	default:
	}
	return s.infoScorer.Aggregate(ctx, req)
}

// On the last eval a scorer whose metric is the mean (its component has
// no Aggregate) is closed with the task and model, before the rows are
// aggregated; one with an Aggregate of its own stays open until asked.
func TestLastEvalClosesMeanScorersBeforeAggregating(t *testing.T) {
	f := newFixture(t, 3, map[string]*echoModel{"m": {}})
	mean := &closingScorer{closed: make(chan struct{})}
	agg := &aggregatorWatching{closingScorer: closingScorer{infoScorer: infoScorer{caps: []string{plugin.CapAggregator}}, closed: make(chan struct{})}, other: mean}
	f.set.RegisterScorer("mean", func(context.Context, sdk.Options) (sdk.Scorer, error) { return mean, nil })
	f.set.RegisterScorer("agg", func(context.Context, sdk.Options) (sdk.Scorer, error) { return agg, nil })
	res, err := f.run(t, context.Background(), oneEval("m", "", "agg", "mean")) // agg first: its Aggregate waits for the close
	if err != nil || res.Evals[0].Error != "" || res.Evals[0].Samples != 3 {
		t.Fatalf("run: %v %+v", err, res.Evals)
	}
	if !agg.otherClosed || agg.selfClosed {
		t.Errorf("at the aggregate: mean scorer closed %v (want true), aggregating scorer closed %v (want false)", agg.otherClosed, agg.selfClosed)
	}
	// Closed, the mean scorer no longer says it has no Aggregate: its
	// metric is still the mean, decided while it was open.
	if m := res.Evals[0].Metrics["mean"]; m == nil || m.Details["error"] != nil || m.N != 3 {
		t.Errorf("mean scorer's metric: %+v", m)
	}
	select {
	case <-agg.closed:
	default:
		t.Error("the aggregating scorer was not closed at the end of the run")
	}
}
