package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

// Open starts the plugin serving kind/name (see Resolve for pluginName),
// configures it with opts and returns the component: a *Task, *Model,
// *Scorer or *Retriever, which implement the kind's sdk interfaces and
// io.Closer. Closing it kills its process. Option errors are
// *sdk.ConfigError with the field named. ctx bounds the start-up only.
func (h *Host) Open(ctx context.Context, kind sdk.Kind, name, pluginName string, opts sdk.Options) (any, error) {
	src, err := h.Resolve(ctx, kind, name, pluginName)
	if err != nil {
		return nil, err
	}
	c := &component{
		host:  h,
		src:   src,
		kind:  kind,
		name:  name,
		opts:  opts,
		label: fmt.Sprintf("plugin %q (%s %s)", src.Name, kind, name),
	}
	if err := h.track(c); err != nil {
		return nil, err
	}
	if src.Builtin && h.opts.InProcess {
		build := h.opts.Builtin.New
		if h.opts.CheckOnly {
			build = h.opts.Builtin.Build
		}
		bctx := ctx
		if cache := h.embeddingCache(); cache != nil && kind == sdk.KindRetriever {
			bctx = sdk.WithEmbeddingCache(ctx, cache)
		}
		c.inproc, err = buildSafely(bctx, build, kind, name, opts)
		if err != nil {
			h.forget(c)
			return nil, fmt.Errorf("%s: configure %s %q: %w", src, kind, name, err)
		}
	} else {
		c.proc, err = h.launch(ctx, src, kind, name, opts)
		if err != nil {
			h.forget(c)
			return nil, err
		}
	}
	switch kind {
	case sdk.KindTask:
		return &Task{c}, nil
	case sdk.KindModel:
		return &Model{c}, nil
	case sdk.KindScorer:
		return &Scorer{c}, nil
	case sdk.KindRetriever:
		return &Retriever{c}, nil
	}
	c.close()
	return nil, fmt.Errorf("%s: unknown kind %q", src, kind)
}

// OpenTask opens a task; see Open.
func (h *Host) OpenTask(ctx context.Context, name, pluginName string, opts sdk.Options) (sdk.Task, error) {
	return openAs[*Task](ctx, h, sdk.KindTask, name, pluginName, opts)
}

// OpenModel opens a model; see Open.
func (h *Host) OpenModel(ctx context.Context, name, pluginName string, opts sdk.Options) (sdk.Model, error) {
	return openAs[*Model](ctx, h, sdk.KindModel, name, pluginName, opts)
}

// OpenScorer opens a scorer; see Open.
func (h *Host) OpenScorer(ctx context.Context, name, pluginName string, opts sdk.Options) (sdk.Scorer, error) {
	return openAs[*Scorer](ctx, h, sdk.KindScorer, name, pluginName, opts)
}

// OpenRetriever opens a retriever; see Open.
func (h *Host) OpenRetriever(ctx context.Context, name, pluginName string, opts sdk.Options) (sdk.Retriever, error) {
	return openAs[*Retriever](ctx, h, sdk.KindRetriever, name, pluginName, opts)
}

// openAs is Open for one kind; Open returns exactly T for it.
func openAs[T any](ctx context.Context, h *Host, kind sdk.Kind, name, pluginName string, opts sdk.Options) (T, error) {
	var zero T
	v, err := h.Open(ctx, kind, name, pluginName, opts)
	if err != nil {
		return zero, err
	}
	return v.(T), nil
}

// component is one opened component: a plugin process restarted at most
// once, or an in-process instance.
type component struct {
	host   *Host
	src    *Source
	kind   sdk.Kind
	name   string
	opts   sdk.Options
	label  string
	inproc any // set in in-process mode; proc is then nil

	mu        sync.Mutex
	proc      *process
	gen       int   // bumped on every restart
	restarted bool  // the one restart is used up
	dead      error // set on the second crash, or on close
	// optionalCrash holds, per optional call (doOptional), the crash it
	// caused: that call is not sent to the plugin again.
	optionalCrash map[string]error
}

var errClosed = errors.New("component is closed")

// current returns the live process and its generation.
func (c *component) current() (*process, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead != nil {
		return nil, 0, c.dead
	}
	return c.proc, c.gen, nil
}

// crashed reports whether err means p's process died (as opposed to the
// component returning an error or the caller giving up).
func crashed(p *process, err error) bool {
	return errors.Is(err, plugin.ErrConnection) ||
		(p.exited() && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded))
}

// restart replaces the process of generation gen, which crashed with cause.
// Concurrent callers whose calls died with the same process share one
// restart. The second crash of a component is final. optional names the
// optional call (doOptional) whose crash this is, "" for the real work's:
// such a restart does not spend the component's one.
func (c *component) restart(ctx context.Context, gen int, cause error, optional string) (*process, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead != nil {
		return nil, 0, c.dead
	}
	if c.gen != gen {
		return c.proc, c.gen, nil // someone else restarted it already
	}
	old := c.proc
	old.kill()
	switch {
	case optional != "":
		c.host.logger.Warn("plugin crashed in an optional call; restarting it without using its one restart",
			"plugin", c.src.Name, "kind", c.kind, "name", c.name, "call", optional, "error", cause)
	case c.restarted:
		c.dead = fmt.Errorf("%s crashed twice: %w", c.label, cause)
		return nil, 0, c.dead
	default:
		c.restarted = true
		c.host.logger.Warn("plugin crashed; restarting it once", "plugin", c.src.Name, "kind", c.kind, "name", c.name, "error", cause)
	}
	// The restart serves every caller waiting on it, so it must not die
	// with the context of whichever call noticed the crash.
	p, err := c.host.launch(context.WithoutCancel(ctx), c.src, c.kind, c.name, c.opts)
	if err != nil {
		c.dead = fmt.Errorf("%s crashed, and restarting it failed: %w (crash: %v)", c.label, err, cause)
		return nil, 0, c.dead
	}
	c.proc = p
	c.gen++
	return p, c.gen, nil
}

// do runs f against the component, restarting a crashed plugin once and
// retrying f on the new process.
func (c *component) do(ctx context.Context, f func(x any) error) error {
	if c.inproc != nil {
		return f(c.inproc)
	}
	p, gen, err := c.current()
	if err != nil {
		return err
	}
	for {
		err = f(p.remote)
		if err == nil || !crashed(p, err) {
			return err
		}
		if p, gen, err = c.restart(ctx, gen, err, ""); err != nil {
			return err
		}
	}
}

// doOptional runs f, the optional call what, whose answer the caller can do
// without (CountSamples: a progress total), against the component. A crash
// during it must not cost the real work its restart: the process is
// replaced without spending it, the call is not retried, and it is never
// sent again (its crash comes back at once), so a plugin whose count
// crashes it every time costs one extra start, not its samples. A crash of
// the real work's under way on the same process at that moment may still
// be the one to restart it, and spend the restart.
func (c *component) doOptional(ctx context.Context, what string, f func(x any) error) error {
	if c.inproc != nil {
		return f(c.inproc)
	}
	c.mu.Lock()
	failed := c.optionalCrash[what]
	c.mu.Unlock()
	if failed != nil {
		return failed
	}
	p, gen, err := c.current()
	if err != nil {
		return err
	}
	if err = f(p.remote); err == nil || !crashed(p, err) {
		return err
	}
	failed = fmt.Errorf("%s crashed during %s: %w", c.label, what, err)
	c.mu.Lock()
	if c.optionalCrash == nil {
		c.optionalCrash = map[string]error{}
	}
	c.optionalCrash[what] = failed
	c.mu.Unlock()
	if _, _, err := c.restart(ctx, gen, err, what); err != nil {
		return err
	}
	return failed
}

func (c *component) info() plugin.Info {
	if c.inproc != nil {
		return plugin.Info{
			Kind:             c.kind,
			Name:             c.name,
			Plugin:           BuiltinPlugin,
			Version:          c.host.opts.Builtin.Version,
			Protocol:         plugin.Protocol,
			Capabilities:     plugin.Capabilities(c.inproc),
			ServedModel:      plugin.ServedModel(c.inproc),
			TransportOptions: plugin.TransportOptions(c.inproc),
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return plugin.Info{Kind: c.kind, Name: c.name, Plugin: c.src.Name}
	}
	return c.proc.remote.Info()
}

// origin is info's plugin and version, as the SDK's optional Originator
// interface carries them: the kernel asks for nothing else of a handle.
func (c *component) origin() sdk.Origin {
	i := c.info()
	return sdk.Origin{Plugin: i.Plugin, Version: i.Version}
}

// close releases the component and kills its process. Closing twice is a
// no-op.
func (c *component) close() error {
	defer c.host.forget(c)
	if c.inproc != nil {
		c.mu.Lock()
		x := c.inproc
		already := c.dead != nil
		c.dead = fmt.Errorf("%s: %w", c.label, errClosed)
		c.mu.Unlock()
		if cl, ok := x.(io.Closer); ok && !already {
			return cl.Close()
		}
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if errors.Is(c.dead, errClosed) {
		return nil
	}
	c.dead = fmt.Errorf("%s: %w", c.label, errClosed)
	p := c.proc
	c.proc = nil
	if p == nil {
		return nil
	}
	var err error
	if !p.exited() {
		if cerr := p.remote.Close(); cerr != nil && !errors.Is(cerr, plugin.ErrConnection) {
			err = fmt.Errorf("%s: close: %w", c.label, cerr)
		}
	}
	p.kill()
	return err
}

// unsupported is what optional methods return when the component lacks the
// interface.
func (c *component) unsupported(what string) error {
	return fmt.Errorf("%s has no %s: %w", c.label, what, sdk.ErrUnsupported)
}

func (c *component) validate(ctx context.Context) error {
	return c.do(ctx, func(x any) error {
		if v, ok := x.(sdk.Validator); ok {
			return v.Validate(ctx)
		}
		return nil
	})
}

// Task is an opened task. Samples survives one plugin crash: the stream is
// reopened and the samples already delivered are skipped, so none is lost
// or repeated (tasks must produce the same order on every read).
type Task struct{ c *component }

func (t *Task) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	c := t.c
	if c.inproc != nil {
		return c.inproc.(sdk.Task).Samples(ctx, req)
	}
	return func(yield func(*sdk.Sample, error) bool) {
		p, gen, err := c.current()
		if err != nil {
			yield(nil, err)
			return
		}
		delivered := 0
		for {
			skip := delivered
			var crash error
			for s, err := range p.remote.(sdk.Task).Samples(ctx, req) {
				if err != nil && crashed(p, err) {
					crash = err
					break
				}
				if skip > 0 {
					skip--
					continue
				}
				if !yield(s, err) {
					return
				}
				delivered++
			}
			if crash == nil {
				return
			}
			if p, gen, err = c.restart(ctx, gen, crash, ""); err != nil {
				yield(nil, err)
				return
			}
		}
	}
}

// CountSamples is the task's sample count, or an error wrapping
// sdk.ErrUnsupported when it cannot tell. The count is optional (the runner
// only shows it): a count that crashes the plugin fails and is not asked
// again, and does not use up the restart Samples may need.
func (t *Task) CountSamples(ctx context.Context, req *sdk.SamplesRequest) (n int, err error) {
	err = t.c.doOptional(ctx, "CountSamples", func(x any) (err error) {
		sc, ok := x.(sdk.SampleCounter)
		if !ok {
			return t.c.unsupported("sample count")
		}
		n, err = sc.CountSamples(ctx, req)
		return err
	})
	return n, err
}

func (t *Task) Validate(ctx context.Context) error { return t.c.validate(ctx) }
func (t *Task) Info() plugin.Info                  { return t.c.info() }
func (t *Task) Origin() sdk.Origin                 { return t.c.origin() }
func (t *Task) Close() error                       { return t.c.close() }

// Model is an opened model. Tokenize returns an error wrapping
// sdk.ErrUnsupported when the model has no tokenizer.
type Model struct{ c *component }

func (m *Model) Generate(ctx context.Context, req *sdk.GenerateRequest) (resp *sdk.GenerateResponse, err error) {
	err = m.c.do(ctx, func(x any) (err error) {
		resp, err = x.(sdk.Model).Generate(ctx, req)
		return err
	})
	return resp, err
}

func (m *Model) Tokenize(ctx context.Context, req *sdk.TokenizeRequest) (resp *sdk.TokenizeResponse, err error) {
	err = m.c.do(ctx, func(x any) (err error) {
		tk, ok := x.(sdk.Tokenizer)
		if !ok {
			return m.c.unsupported("tokenizer")
		}
		resp, err = tk.Tokenize(ctx, req)
		return err
	})
	return resp, err
}

func (m *Model) Validate(ctx context.Context) error { return m.c.validate(ctx) }
func (m *Model) Info() plugin.Info                  { return m.c.info() }
func (m *Model) Origin() sdk.Origin                 { return m.c.origin() }
func (m *Model) ServedModel() string                { return m.c.info().ServedModel }
func (m *Model) TransportOptions() []string         { return m.c.info().TransportOptions }
func (m *Model) ReadsSample() bool                  { return m.c.info().Has(plugin.CapSample) }
func (m *Model) Close() error                       { return m.c.close() }

// Scorer is an opened scorer. Aggregate returns an error wrapping
// sdk.ErrUnsupported when the scorer has no aggregator; the caller then
// reports the mean of valid values.
type Scorer struct{ c *component }

func (s *Scorer) Score(ctx context.Context, req *sdk.ScoreRequest) (resp *sdk.ScoreResponse, err error) {
	err = s.c.do(ctx, func(x any) (err error) {
		resp, err = x.(sdk.Scorer).Score(ctx, req)
		return err
	})
	return resp, err
}

func (s *Scorer) Aggregate(ctx context.Context, req *sdk.AggregateRequest) (resp *sdk.AggregateResponse, err error) {
	err = s.c.do(ctx, func(x any) (err error) {
		ag, ok := x.(sdk.Aggregator)
		if !ok {
			return s.c.unsupported("aggregator")
		}
		resp, err = ag.Aggregate(ctx, req)
		return err
	})
	return resp, err
}

// ScoreBatch scores reqs in one call to a plugin (plugin.BatchScorer); an
// in-process scorer scores them one by one.
func (s *Scorer) ScoreBatch(ctx context.Context, reqs []*sdk.ScoreRequest) (results []plugin.ScoreResult, err error) {
	err = s.c.do(ctx, func(x any) (err error) {
		if bs, ok := x.(plugin.BatchScorer); ok {
			results, err = bs.ScoreBatch(ctx, reqs)
			return err
		}
		results = make([]plugin.ScoreResult, len(reqs))
		for i, req := range reqs {
			if err := ctx.Err(); err != nil {
				return err
			}
			results[i].Response, results[i].Err = x.(sdk.Scorer).Score(ctx, req)
		}
		return nil
	})
	return results, err
}

// AggregateResults is Aggregate over ScoreBatch's results, gathered in in.
func (s *Scorer) AggregateResults(ctx context.Context, in *plugin.AggregateInput) (resp *sdk.AggregateResponse, err error) {
	err = s.c.do(ctx, func(x any) (err error) {
		if bs, ok := x.(plugin.BatchScorer); ok {
			resp, err = bs.AggregateResults(ctx, in)
			return err
		}
		ag, ok := x.(sdk.Aggregator)
		if !ok {
			return s.c.unsupported("aggregator")
		}
		results, err := in.Results()
		if err != nil {
			return err
		}
		req := &sdk.AggregateRequest{Scores: make([]*sdk.ScoreResponse, len(results))}
		for i, r := range results {
			// An aggregator in this process reads the details as a map,
			// as it gave them.
			if r.Response.Details, err = r.Details(); err != nil {
				return fmt.Errorf("result %d: %w", i, err)
			}
			req.Scores[i] = r.Response
		}
		resp, err = ag.Aggregate(ctx, req)
		return err
	})
	return resp, err
}

// OutOfProcess reports whether the scorer runs in a plugin process. Then
// neither its results (decoded from its replies) nor anything it keeps
// share the memory of the requests it was given; an in-process scorer's
// may hold the very strings (sdk.Scorer).
func (s *Scorer) OutOfProcess() bool { return s.c.inproc == nil }

func (s *Scorer) Validate(ctx context.Context) error { return s.c.validate(ctx) }
func (s *Scorer) Info() plugin.Info                  { return s.c.info() }
func (s *Scorer) Origin() sdk.Origin                 { return s.c.origin() }
func (s *Scorer) ReadsSample() bool                  { return s.c.info().Has(plugin.CapSample) }
func (s *Scorer) Close() error                       { return s.c.close() }

// Retriever is an opened retriever.
type Retriever struct{ c *component }

func (r *Retriever) Retrieve(ctx context.Context, req *sdk.RetrieveRequest) (resp *sdk.RetrieveResponse, err error) {
	err = r.c.do(ctx, func(x any) (err error) {
		resp, err = x.(sdk.Retriever).Retrieve(ctx, req)
		return err
	})
	return resp, err
}

func (r *Retriever) Validate(ctx context.Context) error { return r.c.validate(ctx) }
func (r *Retriever) Info() plugin.Info                  { return r.c.info() }
func (r *Retriever) Origin() sdk.Origin                 { return r.c.origin() }
func (r *Retriever) Close() error                       { return r.c.close() }

// Compile-time checks that opened components are what the kernel expects.
var (
	_ sdk.Task       = (*Task)(nil)
	_ sdk.Model      = (*Model)(nil)
	_ sdk.Tokenizer  = (*Model)(nil)
	_ sdk.Scorer     = (*Scorer)(nil)
	_ sdk.Aggregator = (*Scorer)(nil)
	_ sdk.Retriever  = (*Retriever)(nil)
	_ sdk.Validator  = (*Task)(nil)
	// The optional interfaces the kernel asks for, so that it needs no
	// plugin.Info.
	_ sdk.Originator   = (*Task)(nil)
	_ sdk.Originator   = (*Model)(nil)
	_ sdk.Originator   = (*Scorer)(nil)
	_ sdk.Originator   = (*Retriever)(nil)
	_ sdk.SampleReader = (*Model)(nil)
	_ sdk.SampleReader = (*Scorer)(nil)
	_ io.Closer        = (*Task)(nil)
	_ io.Closer        = (*Model)(nil)
	_ io.Closer        = (*Scorer)(nil)
	_ io.Closer        = (*Retriever)(nil)
)

// buildSafely runs a built-in's constructor in this process, turning a
// panic into an error: the precheck configures built-ins here, and a bug in
// one component's option handling must fail that component's check, not
// kill hayloft.
func buildSafely(ctx context.Context, build func(context.Context, sdk.Kind, string, sdk.Options) (any, error), kind sdk.Kind, name string, opts sdk.Options) (c any, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("panic while configuring: %v", r)
		}
	}()
	return build(ctx, kind, name, opts)
}
