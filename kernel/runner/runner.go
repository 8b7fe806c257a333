// Package runner executes a loaded config: for every eval it streams the
// task's samples through retriever → prompt fitting → response cache → model →
// journal → scorers, with bounded concurrency per model, and aggregates the
// scores. Data flows one way; every finished response is journaled before it
// is scored, so an interrupted run loses nothing and resumes from the cache.
// The runner only runs and journals: reports read the journal (kernel/report).
//
// One file per stage: eval.go sets up an eval's rows; schedule.go streams the
// task to them in phases (order.go: which sample next); sample.go takes one
// sample through prepare (retrieve.go, then fit.go → kernel/prompt) and
// respond (cache, model.go, journal), then scores it; failure.go decides what
// a failure ends; aggregate.go computes each row's metrics; gen.go and
// judge.go reuse prepare and respond.
package runner

import (
	"context"
	"io"

	"github.com/hashicorp/go-hclog"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/shard"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// Opener creates configured components, one method per kind.
// *pluginhost.Host is the production implementation (one plugin process per
// component); tests may open components in-process. name is the component's
// type in the config, plugin the plugin block that serves it ("" for the
// built-ins or the plugin directory).
type Opener interface {
	OpenTask(ctx context.Context, name, plugin string, opts sdk.Options) (sdk.Task, error)
	OpenModel(ctx context.Context, name, plugin string, opts sdk.Options) (sdk.Model, error)
	OpenScorer(ctx context.Context, name, plugin string, opts sdk.Options) (sdk.Scorer, error)
	OpenRetriever(ctx context.Context, name, plugin string, opts sdk.Options) (sdk.Retriever, error)
}

// Options configure a Runner.
type Options struct {
	Opener  Opener
	Store   *store.Store
	Logger  hclog.Logger
	Version string // hayloft's version, journaled with the run
	// Progress, when set, receives a live progress bar.
	Progress io.Writer
	// Limit caps samples per eval (0: the eval's own limit, or all).
	Limit int
	// Evals restricts the run to these eval names (empty: all).
	Evals []string
	// Shard, when set, runs only the samples of one shard (kernel/shard).
	// Limit applies before sharding: the shards of a run with --limit 100
	// together take the same 100 samples as one unsharded run.
	Shard shard.Spec
	// Prefetched, when set, is the components Prefetch began opening
	// (with the same Opener): Run takes them over and closes them.
	Prefetched *Prefetched
}

// Prefetched is components whose opening began before a run (Prefetch).
type Prefetched struct{ comps *components }

// Prefetch starts opening, in the background, the task, models and plugin
// scorers of the first eval of cfg that a Runner with opts would run, so
// that their plugin processes start while the caller does the rest of its
// setup (opening the journal): a run otherwise starts them only once the
// journal is open, and waits for them before its first sample.
// Retrievers are left to the run, since they may use the journal's
// embedding cache. The result goes in Options.Prefetched; a caller that
// does not run must Close it.
func Prefetch(ctx context.Context, opts Options, cfg *config.Config) *Prefetched {
	p := &Prefetched{comps: newComponents(opts.Opener)}
	r := New(opts)
	for _, ev := range cfg.Evals {
		if r.selected(ev.Name) {
			p.comps.prefetch(ctx, ev, false)
			break
		}
	}
	return p
}

// Close closes what was prefetched, once the opens under way are done.
func (p *Prefetched) Close() { p.comps.closeAll() }

// Runner runs configs. Safe to reuse; not for concurrent Run calls.
type Runner struct {
	opts Options
	log  hclog.Logger
}

// New returns a Runner.
func New(opts Options) *Runner {
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Runner{opts: opts, log: log}
}

// Run executes every eval of cfg. It returns the partial result together
// with ctx's error when interrupted; everything finished is journaled.
func (r *Runner) Run(ctx context.Context, cfg *config.Config) (*Result, error) {
	st := r.opts.Store
	runID, err := st.BeginRun(ctx, store.RunInfo{ConfigPath: cfg.Path, ConfigText: string(cfg.Source), Version: r.opts.Version,
		Shard: r.opts.Shard.Index, Shards: r.opts.Shard.Count})
	if err != nil {
		return nil, err
	}
	res := &Result{RunID: runID}
	comps := newComponents(r.opts.Opener)
	if p := r.opts.Prefetched; p != nil {
		comps, r.opts.Prefetched = p.comps, nil // taken over: a later Run opens its own
	}
	defer comps.closeAll()

	var cost overhead
	pos := 0 // numbers the rows of the run, in the journal
	bar := newProgress(r.opts.Progress)
	var evals []*config.Eval
	for _, ev := range cfg.Evals {
		if r.selected(ev.Name) {
			evals = append(evals, ev)
		}
	}
	for i, ev := range evals {
		rows := r.runEval(ctx, runID, ev, modelBlocks(cfg), comps, i == len(evals)-1, bar, &cost, &pos)
		res.Evals = append(res.Evals, rows...)
		if ctx.Err() != nil {
			break
		}
	}
	bar.finish()
	res.OverheadUSPerSample = cost.perSample()
	if err := st.PutOverhead(context.WithoutCancel(ctx), runID, res.OverheadUSPerSample); err != nil {
		r.log.Error("journal: overhead", "error", err)
	}
	status := "done"
	switch {
	case ctx.Err() != nil:
		status, res.Interrupted = "interrupted", true
	case res.Failed():
		status = "failed"
	}
	// The run row must be closed even when ctx is cancelled.
	if err := st.FinishRun(context.WithoutCancel(ctx), runID, status); err != nil {
		r.log.Error("journal: finish run", "error", err)
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// limit is the tighter of the eval's own limit and the run's (--limit);
// 0 means all samples.
func (r *Runner) limit(ev *config.Eval) int {
	switch {
	case ev.Limit == 0:
		return r.opts.Limit
	case r.opts.Limit == 0:
		return ev.Limit
	}
	return min(ev.Limit, r.opts.Limit)
}

func (r *Runner) selected(name string) bool {
	if len(r.opts.Evals) == 0 {
		return true
	}
	for _, n := range r.opts.Evals {
		if n == name {
			return true
		}
	}
	return false
}

// modelBlocks indexes a config's model blocks by reference, for scorers
// that name a model (the judge).
func modelBlocks(cfg *config.Config) map[string]*config.Component {
	m := map[string]*config.Component{}
	for _, c := range cfg.Components {
		if c.Kind == sdk.KindModel {
			m[c.Ref()] = c
		}
	}
	return m
}

func retrieverRef(c *config.Component) string {
	if c == nil {
		return "none"
	}
	return c.Ref()
}

func scorerRefs(scorers []scorerHandle) []string {
	out := make([]string, len(scorers))
	for i, s := range scorers {
		out[i] = s.ref
	}
	return out
}
