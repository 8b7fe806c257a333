package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hayloft/hayloft/kernel/prompt"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// One sample's way through a row has two halves, shared by a run (process),
// `hayloft gen` and the judge:
//
//   - prepare: retrieve, then fit the prompt to the model's window;
//   - respond: look the request up in the response cache, else generate,
//     and journal the answer.

// prepared is a sample ready to send.
type prepared struct {
	sample *sdk.Sample // as sent: the retrieved context, truncated if it was
	fitted *prompt.Fitted
	chunks []int // the retriever's kept chunks
}

// prepare retrieves (when rt is set) and fits. An error from the retriever
// is a *retrieveError; any other is the fitting's. measure: see fit.
func prepare(ctx context.Context, m *modelHandle, rt sdk.Retriever, orig *sdk.Sample, measure bool) (*prepared, error) {
	smp, chunks, err := retrieve(ctx, rt, orig)
	if err != nil {
		return nil, err
	}
	return fitRetrieved(ctx, m, smp, chunks, measure)
}

// fitRetrieved is prepare's second half, for callers that retrieve once and
// fit for several models (gen).
func fitRetrieved(ctx context.Context, m *modelHandle, smp *sdk.Sample, chunks []int, measure bool) (*prepared, error) {
	f, err := m.fit(ctx, smp, measure)
	if err != nil {
		return nil, err
	}
	if f.Truncated {
		// Models that read the sample (baselines) must see what was sent.
		smp = smp.Clone()
		smp.Context = f.Context
	}
	return &prepared{sample: smp, fitted: f, chunks: chunks}, nil
}

// answer is a model's reply to one request, fresh or from the cache.
type answer struct {
	text   string
	usage  sdk.Usage
	key    string // the request's cache key
	cached bool
	wait   time.Duration // spent waiting for the model
}

// generateError is the model's failure to answer, as opposed to a failure
// of the key or the journal: the first concerns the sample, the others the
// row.
type generateError struct {
	err  error
	key  string
	wait time.Duration
}

func (e *generateError) Error() string { return e.err.Error() }
func (e *generateError) Unwrap() error { return e.err }

// respond answers req from the response cache or else from the model, whose
// answer it journals before returning: a response counts once it is
// journaled, so an interrupted run asks again only for the rest. Every try
// of a request that failed is journaled too. answered, when not nil, is
// called once the model has answered or failed, or the cache has, before
// the answer is journaled.
func (r *Runner) respond(ctx context.Context, m *modelHandle, req *sdk.GenerateRequest, answered func()) (*answer, error) {
	keyed, err := m.keyer.Request(req)
	if err != nil {
		return nil, err
	}
	cached, hit, err := r.opts.Store.LookupResponse(ctx, keyed.Key)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if hit {
		if answered != nil {
			answered()
		}
		return &answer{text: cached.Response.Text, usage: cached.Response.Usage, key: keyed.Key, cached: true}, nil
	}
	t0 := time.Now()
	resp, err := m.generate(ctx, req)
	wait := time.Since(t0)
	if answered != nil {
		answered()
	}
	if err != nil {
		r.journalAttempts(ctx, keyed.Key, err)
		return nil, &generateError{err: err, key: keyed.Key, wait: wait}
	}
	if err := r.opts.Store.PutResponse(context.WithoutCancel(ctx), m.keyer, keyed, resp, wait); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &answer{text: resp.Text, usage: resp.Usage, key: keyed.Key, wait: wait}, nil
}

// process runs one sample through one row and returns the time spent
// waiting for the model, which the kernel's overhead figure excludes.
// slot is the server slot the send order chose (sdk.GenerateRequest.Slot);
// prefilled, when not nil, is called when the model reports the prompt
// computed (sdk.Prefilled, its first streamed token); answered, when not
// nil, once the model has answered (see respond), when what is left is
// to journal and score.
func (r *Runner) process(ctx context.Context, runID, evalName string, rw *row, scorers []scorerHandle, orig *sdk.Sample, seq int, slot *int, prefilled, answered func()) time.Duration {
	p, err := prepare(ctx, rw.model, rw.retriever, orig, false)
	if err != nil {
		if ctx.Err() != nil {
			return 0 // interrupted at the retriever or the tokenizer: asked again on resume, as at the model
		}
		var re *retrieveError
		if errors.As(err, &re) {
			r.sampleFailed(ctx, runID, evalName, rw, orig, "", fmt.Errorf("retriever %s: %w", rw.retrName, re.err), true)
		} else {
			// A prompt that does not fit (truncation "none", a sample's own
			// window too small) is that sample's failure; a window too small
			// for every sample is a config error and ends the row.
			r.sampleFailed(ctx, runID, evalName, rw, orig, "", err, isSampleError(err))
		}
		return 0
	}
	smp := p.sample
	meta := store.SampleMeta{Index: seq, Chunks: p.chunks, Truncated: p.fitted.Truncated, SentTokens: p.fitted.PromptTokens}
	if rw.retriever != nil {
		meta.Retriever = rw.retrName
	}
	if p.fitted.Truncated {
		rw.mu.Lock()
		rw.res.Truncated++
		rw.mu.Unlock()
	}
	shared := &bareSample{full: smp}
	req := &sdk.GenerateRequest{Messages: p.fitted.Messages, Params: rw.model.params(smp), Sample: rw.model.requestSample(shared), Slot: slot}
	gctx := ctx
	if prefilled != nil {
		// The generation's context only: a judge called by a scorer
		// below is another request.
		gctx = sdk.WithPrefillHook(ctx, prefilled)
	}
	origLength := orig.Length
	ans, err := r.respond(gctx, rw.model, req, answered)
	// What is left needs the sample's context only for a scorer that
	// reads it: the rest goes on with the sample without it, so that a
	// long context is not held while the answer is journaled and scored
	// (the next sample's is on its way to the model meanwhile).
	if !anyReadsSample(scorers) {
		b := shared.bare()
		smp, shared = b, &bareSample{full: b, without: b}
	}
	if err != nil {
		var ge *generateError
		if !errors.As(err, &ge) {
			rw.cancel(err)
			return 0
		}
		if ctx.Err() != nil {
			return ge.wait // interrupted: not a failure of the sample, it is asked again on resume
		}
		r.sampleFailed(ctx, runID, evalName, rw, smp, ge.key, ge.err, isSampleError(ge.err))
		return ge.wait
	}
	meta.RequestKey = ans.key
	if meta.SentTokens == 0 {
		meta.SentTokens = ans.usage.PromptTokens
	}
	rw.mu.Lock()
	rw.successes++ // the model answered: the row is not blind
	rw.mu.Unlock()

	named := make([]store.NamedScore, 0, len(scorers))
	for _, sh := range scorers {
		sc, details, err := sh.score(ctx, &sdk.ScoreRequest{Sample: sh.sample(shared), Prediction: ans.text})
		if err != nil {
			if ctx.Err() != nil {
				return ans.wait
			}
			if !isSampleError(err) && !errors.Is(err, sdk.ErrUnsupported) {
				rw.cancel(fmt.Errorf("scorer %s: %w", sh.ref, err))
				return ans.wait
			}
			sc, details = &sdk.ScoreResponse{Invalid: true, Details: map[string]any{"error": err.Error()}}, nil
		}
		named = append(named, store.NamedScore{Scorer: sh.ref, Score: sc, DetailsJSON: details})
	}
	journaled := smp
	if smp.Length != origLength {
		// The journal keeps the length the task measured, which retrieval
		// cleared for fitting: reports bucket by it.
		j := *smp
		j.Length = origLength
		journaled = &j
	}
	if err := r.opts.Store.PutResult(context.WithoutCancel(ctx), runID, rw.journalName, journaled, meta, named); err != nil {
		rw.cancel(fmt.Errorf("journal: %w", err))
		return ans.wait
	}
	// Counted once journaled: a row that ends before (a scorer's own
	// error, an interruption, the journal) does not count a sample it
	// has no result for.
	rw.mu.Lock()
	if ans.cached {
		rw.res.Cached++
	}
	rw.res.Samples++
	for _, n := range named {
		rw.scores[n.Scorer] = append(rw.scores[n.Scorer], indexedScore{seq, n.Score, n.DetailsJSON})
	}
	rw.use.Add(ans.usage)
	rw.mu.Unlock()
	return ans.wait
}

// anyReadsSample reports whether a scorer reads the sample's context.
func anyReadsSample(scorers []scorerHandle) bool {
	for _, sh := range scorers {
		if sh.readsSample {
			return true
		}
	}
	return false
}
