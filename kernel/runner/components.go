package runner

import (
	"context"
	"io"
	"sync"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/sdk"
)

// components opens each configured component once per run, however many
// evals use it, and closes them all at the end. Opens of different
// components run at once (prefetch): each is a plugin process to start, and
// an eval waits for all of its own before its first sample.
type components struct {
	opener Opener
	mu     sync.Mutex
	opened map[string]*opening // by reference: the component, or "handle " + a model's
}

// opening is one component's open, done or under way: done is closed once
// v and err are set.
type opening struct {
	done chan struct{}
	v    any
	err  error
	// closer: v is a component to close at the end (a model handle is
	// not: its model is).
	closer bool
	kind   sdk.Kind
	// closing is closed once a close begun early (closeEarly) is done;
	// nil while none has begun.
	closing chan struct{}
}

func newComponents(o Opener) *components {
	return &components{opener: o, opened: map[string]*opening{}}
}

// claim returns key's opening, and whether the caller is the first to ask
// for it and must run it (see run). kind is the component's.
func (c *components) claim(key string, kind sdk.Kind, closer bool) (o *opening, first bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.opened[key]; ok {
		return o, false
	}
	o = &opening{done: make(chan struct{}), closer: closer, kind: kind}
	c.opened[key] = o
	return o, true
}

// run sets o's outcome to f's.
func (o *opening) run(f func() (any, error)) {
	o.v, o.err = f()
	close(o.done)
}

// once runs f the first time key is asked for and returns its result to
// every caller, waiting for an open still under way.
func (c *components) once(key string, kind sdk.Kind, closer bool, f func() (any, error)) (any, error) {
	o, first := c.claim(key, kind, closer)
	if first {
		o.run(f)
	}
	<-o.done
	return o.v, o.err
}

// opener is how comp is opened, by the Opener method of its kind.
func opener[T any](ctx context.Context, comp *config.Component, with func(context.Context, string, string, sdk.Options) (T, error)) func() (any, error) {
	return func() (any, error) {
		v, err := with(ctx, comp.Type, comp.Plugin, comp.OpenOptions())
		if err != nil {
			return nil, comp.Diag(err)
		}
		return v, nil
	}
}

// open opens comp once; later calls return the same component, or the
// same error. Its reference names its kind, so what is kept under it is
// a T.
func open[T any](ctx context.Context, c *components, comp *config.Component, with func(context.Context, string, string, sdk.Options) (T, error)) (T, error) {
	v, err := c.once(comp.Ref(), comp.Kind, true, opener(ctx, comp, with))
	if err != nil {
		var zero T
		return zero, err
	}
	return v.(T), nil
}

// startOpen begins opening comp in the background unless it was asked for
// already; a later open waits for it.
func startOpen[T any](ctx context.Context, c *components, comp *config.Component, with func(context.Context, string, string, sdk.Options) (T, error)) {
	if o, first := c.claim(comp.Ref(), comp.Kind, true); first {
		go o.run(opener(ctx, comp, with))
	}
}

func (c *components) task(ctx context.Context, comp *config.Component) (sdk.Task, error) {
	return open(ctx, c, comp, c.opener.OpenTask)
}

func (c *components) scorer(ctx context.Context, comp *config.Component) (sdk.Scorer, error) {
	return open(ctx, c, comp, c.opener.OpenScorer)
}

func (c *components) retriever(ctx context.Context, comp *config.Component) (sdk.Retriever, error) {
	return open(ctx, c, comp, c.opener.OpenRetriever)
}

func (c *components) rawModel(ctx context.Context, comp *config.Component) (sdk.Model, error) {
	return open(ctx, c, comp, c.opener.OpenModel)
}

// prefetch starts opening, all at once, the components of ev that are not
// open yet: its task, models, retrievers and plugin scorers (not the
// judge, which the runner builds). It does not wait: the eval's own calls
// for each then wait for that open, and meet its error, in their order.
// Opened one after another, the plugin processes of an eval cost their
// start-ups in series before its first sample. retrievers: open its
// retrievers too (see Prefetch).
func (c *components) prefetch(ctx context.Context, ev *config.Eval, retrievers bool) {
	startOpen(ctx, c, ev.Task, c.opener.OpenTask)
	for _, sc := range ev.Scorers {
		if sc.Type != JudgeScorer {
			startOpen(ctx, c, sc, c.opener.OpenScorer)
		}
	}
	for _, m := range ev.Models {
		startOpen(ctx, c, m, c.opener.OpenModel)
	}
	for _, rt := range ev.Retrievers {
		if rt != nil && retrievers {
			startOpen(ctx, c, rt, c.opener.OpenRetriever)
		}
	}
}

// closeAll closes every component opened, at once (each is a plugin
// process to stop), once the opens still under way are done, and waits
// for the closes closeEarly began.
func (c *components) closeAll() {
	c.mu.Lock()
	var all, early []*opening
	for _, o := range c.opened {
		switch {
		case o.closing != nil:
			early = append(early, o)
		case o.closer:
			all = append(all, o)
		}
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, o := range all {
		wg.Go(o.close)
	}
	wg.Wait()
	for _, o := range early {
		<-o.closing
	}
}

// closeEarly begins closing, in the background, every component opened
// that done says the run needs no more (given its reference and kind): a
// run's last eval stops its task and model processes once its samples are
// answered, while it aggregates, journals and reports, instead of after.
// closeAll waits for these closes.
func (c *components) closeEarly(done func(ref string, k sdk.Kind) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ref, o := range c.opened {
		if o.closer && o.closing == nil && done(ref, o.kind) {
			o.closing = make(chan struct{})
			go func() {
				defer close(o.closing)
				o.close()
			}()
		}
	}
}

// close closes o's component once its open is done.
func (o *opening) close() {
	<-o.done
	if cl, ok := o.v.(io.Closer); ok && o.err == nil {
		cl.Close()
	}
}

// model returns the shared handle for a model block: one concurrency bound
// for every eval and retriever that uses the model.
func (c *components) model(ctx context.Context, comp *config.Component) (*modelHandle, error) {
	v, err := c.rawModel(ctx, comp)
	if err != nil {
		return nil, err
	}
	h, err := c.once("handle "+comp.Ref(), comp.Kind, false, func() (any, error) {
		h, err := newModelHandle(ctx, comp, v)
		if err != nil {
			return nil, comp.Diag(err)
		}
		return h, nil
	})
	if err != nil {
		return nil, err
	}
	return h.(*modelHandle), nil
}

// readsSample reports whether a model or scorer implements
// sdk.SampleReader and says yes (a plugin host's handle answers for the
// component behind it).
func readsSample(c any) bool {
	r, ok := c.(sdk.SampleReader)
	return ok && r.ReadsSample()
}

// bareSample is a sample and, made once on first use, the copy of it
// without its context that every component not reading the context
// receives (withoutContext): the model and each scorer would otherwise
// copy the sample each.
type bareSample struct {
	full    *sdk.Sample
	without *sdk.Sample
}

func (b *bareSample) bare() *sdk.Sample {
	if b.without == nil {
		b.without = withoutContext(b.full)
	}
	return b.without
}

// withoutContext is smp as a component that does not read the context
// receives it.
func withoutContext(smp *sdk.Sample) *sdk.Sample {
	if smp.Context == "" {
		return smp
	}
	s := *smp
	s.Context = ""
	return &s
}
