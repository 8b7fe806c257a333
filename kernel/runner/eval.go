package runner

import (
	"context"
	"fmt"
	"sync"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// row is one model × retriever combination of an eval while it runs.
type row struct {
	res         *EvalResult
	journalName string // the row's name in the journal: unique within the run
	model       *modelHandle
	retriever   sdk.Retriever // nil: full context
	retrName    string

	// unjournaled: PutEval failed, so nothing of the row can be journaled.
	unjournaled bool
	// prefixMetrics is its server's prefix-cache counters over the phase
	// (prefixmetrics.go); nil when not read.
	prefixMetrics *store.PrefixMetrics
	// expected is how many samples the row is to run; 0 when the task
	// cannot say or the run is a shard, whose share is only estimated.
	expected int

	mu     sync.Mutex
	scores map[string][]indexedScore // by scorer ref
	// use sums the prefix-cache figures of the answers of the samples
	// journaled (prefixUse).
	use       store.PrefixUse
	successes int
	failures  int
	blind     int // failures that say the server is unusable, before any success
	cancel    context.CancelCauseFunc
	ctx       context.Context
}

type indexedScore struct {
	seq int
	sc  *sdk.ScoreResponse
	// details: sc's details as its plugin encoded them, when sc.Details
	// is nil (scoreJob.details).
	details []byte
}

type scorerHandle struct {
	ref    string // as reported: the bare name for default scorers
	scorer sdk.Scorer
	// agg is scorer as the row's metric is aggregated with (aggregator),
	// decided while the component is open: a closed plugin component no
	// longer says what it serves.
	agg sdk.Scorer
	// batch gathers the scorer's requests into batches (scorebatch.go);
	// nil for scorers asked one call per sample (the judge).
	batch *scoreBatcher
	// readsSample: the scorer gets the sample with its context
	// (sdk.SampleReader); others get it without.
	readsSample bool
}

// score scores one sample, in a batch where the scorer takes them.
// details: see scoreJob.
func (sh scorerHandle) score(ctx context.Context, req *sdk.ScoreRequest) (resp *sdk.ScoreResponse, details []byte, err error) {
	if sh.batch != nil {
		return sh.batch.Score(ctx, req)
	}
	resp, err = sh.scorer.Score(ctx, req)
	return resp, nil, err
}

// sample is smp as the scorer receives it.
func (sh scorerHandle) sample(smp *bareSample) *sdk.Sample {
	if sh.readsSample {
		return smp.full
	}
	return smp.bare()
}

// runEval runs one eval block: a row per model × retriever. Every row is
// journaled, including those that cannot start, so that a report read
// from the journal shows what failed; pos numbers the rows of the run.
// last: no eval of the run comes after this one.
func (r *Runner) runEval(ctx context.Context, runID string, ev *config.Eval, models map[string]*config.Component, comps *components, last bool, bar *progress, cost *overhead, pos *int) []*EvalResult {
	var rows []*row
	var scorers []scorerHandle
	// meanRefs are the scorers whose metric is the mean (meanOnly), by
	// reference: the last eval closes them with its task and model.
	meanRefs := map[string]bool{}
	newRow := func(m, rt *config.Component) *row {
		rw := &row{
			res:         &EvalResult{Name: ev.Name, Task: ev.Task.Ref(), Model: m.Ref(), Retriever: retrieverRef(rt), Metrics: map[string]*store.Metric{}},
			journalName: fmt.Sprintf("%s/%s/%s", ev.Name, m.Ref(), retrieverRef(rt)),
			retrName:    retrieverRef(rt),
			scores:      map[string][]indexedScore{},
		}
		info := store.EvalInfo{Name: rw.journalName, Eval: ev.Name, Position: *pos, Task: ev.Task.Ref(), Model: m.Ref(), Scorers: scorerRefs(scorers)}
		*pos++
		if rt != nil {
			info.Retriever = rt.Ref()
		}
		if err := r.opts.Store.PutEval(ctx, runID, info); err != nil {
			rw.res.Error = fmt.Sprintf("journal: %v", err)
			rw.unjournaled = true
		}
		return rw
	}
	fail := func(msg string) []*EvalResult {
		r.log.Error("eval failed", "eval", ev.Name, "error", msg)
		out := []*EvalResult{}
		for _, m := range ev.Models {
			for _, rt := range ev.Retrievers {
				rw := newRow(m, rt)
				if rw.res.Error == "" {
					rw.res.Error = msg
				}
				r.finishRow(ctx, runID, rw, nil)
				out = append(out, rw.res)
			}
		}
		return out
	}
	comps.prefetch(ctx, ev, true)
	r.learnEarly(ctx, ev, comps)
	task, err := comps.task(ctx, ev.Task)
	if err != nil {
		return fail(err.Error())
	}
	for _, sc := range ev.Scorers {
		ref := sc.Ref()
		if sc.Name == sc.Type {
			ref = sc.Type
		}
		if sc.Type == JudgeScorer {
			j, err := r.newJudge(ctx, sc, models, comps)
			if err != nil {
				return fail(err.Error())
			}
			scorers = append(scorers, scorerHandle{ref: ref, scorer: j, agg: j})
			continue
		}
		s, err := comps.scorer(ctx, sc)
		if err != nil {
			return fail(err.Error())
		}
		sh := scorerHandle{ref: ref, scorer: s, agg: aggregator(s), readsSample: readsSample(s)}
		if _, ok := sh.agg.(meanOnly); ok {
			meanRefs[sc.Ref()] = true
		}
		if bs, ok := s.(batchScorer); ok {
			sh.batch = newScoreBatcher(ctx, bs)
		}
		scorers = append(scorers, sh)
	}
	for _, m := range ev.Models {
		mh, err := comps.model(ctx, m)
		for _, rt := range ev.Retrievers {
			rw := newRow(m, rt)
			rw.model = mh
			switch {
			case rw.res.Error != "":
			case err != nil:
				rw.res.Error = err.Error()
			case rt != nil:
				ra, rerr := comps.retriever(ctx, rt)
				if rerr != nil {
					rw.res.Error = rerr.Error()
				} else {
					rw.retriever = ra
				}
			}
			rw.ctx, rw.cancel = context.WithCancelCause(ctx)
			rows = append(rows, rw)
		}
	}

	// Responses put under a key already known from here on make the
	// rows' own prefix-cache sums uncertain (prefixUses).
	repeated := r.opts.Store.RepeatedResponses()
	limit := r.limit(ev)
	// The task counts its samples (for the progress bar's total and each
	// row's expected count, journaled at its end) while they stream: a
	// task counts by reading them all, which would otherwise delay the
	// first sample by as much.
	var perRow int
	var exact bool
	counting := make(chan struct{})
	live := liveRows(rows)
	go func() {
		defer close(counting)
		var counted bool
		perRow, exact, counted = countSamples(ctx, task, limit, r.opts.Shard)
		bar.expect(perRow*live, counted)
	}()
	for _, phase := range phases(rows) {
		if ctx.Err() != nil {
			break
		}
		before := r.readCounters(ctx, phase)
		taskErr := r.stream(ctx, runID, ev.Name, ev.Order, task, limit, phase, scorers, bar, cost)
		if len(before) > 0 {
			r.recordCounters(phase, before, r.readCounters(context.WithoutCancel(ctx), phase))
		}
		if taskErr != nil && ctx.Err() == nil {
			msg := fmt.Sprintf("%s: %v", ev.Task.Ref(), taskErr)
			for _, rw := range phase {
				if rw.res.Error == "" {
					rw.res.Error = msg
				}
			}
		}
	}

	<-counting
	if last {
		// Only the scorers with an Aggregate of their own are asked
		// anything more: the other processes stop while the rows are
		// aggregated, and do not keep the run waiting for their exit
		// after it.
		comps.closeEarly(func(ref string, k sdk.Kind) bool { return k != sdk.KindScorer || meanRefs[ref] })
	}
	if exact {
		for _, rw := range rows {
			rw.expected = perRow
		}
	}
	r.feedSoon()
	for _, sh := range scorers {
		if sh.batch != nil {
			calls, reqs := sh.batch.stats()
			r.log.Debug("scorer batches", "eval", ev.Name, "scorer", sh.ref, "calls", calls, "requests", reqs)
		}
	}
	uses, summed := r.prefixUses(ctx, runID, rows, repeated)
	out := make([]*EvalResult, 0, len(rows))
	for _, rw := range rows {
		if cause := context.Cause(rw.ctx); cause != nil && rw.res.Error == "" && ctx.Err() == nil {
			rw.res.Error = cause.Error()
		}
		rw.cancel(nil)
		r.aggregate(ctx, rw, scorers)
		out = append(out, rw.res)
	}
	if last {
		// Aggregated: no component is asked anything more in this run.
		comps.closeEarly(func(string, sdk.Kind) bool { return true })
	}
	<-summed
	for i, rw := range rows {
		r.finishRow(ctx, runID, rw, uses[i])
	}
	return out
}

// prefixUses are the rows' prefix-cache sums (nil where FinishEval is to
// sum them), ready once summed is closed. Each row has summed its
// answers' figures as it journaled them, which is what the journal's join
// of the row's samples to their responses (Store.PrefixUse) gives when
// every response this process put is the one the journal kept: the
// journal keeps the first response under a key, so a response put under a
// key already known (store.RepeatedResponses moved since repeated) may not
// be the one kept, and another shard may put a key of this run's at the
// same time. The join is then read instead, while the rows are aggregated
// (the bootstrap) rather than after; a row's own sums spare the end of a
// run that join (10-20 ms for 5,000 samples) and its wait for the last
// feed.
func (r *Runner) prefixUses(ctx context.Context, runID string, rows []*row, repeated int64) ([]*store.PrefixUse, <-chan struct{}) {
	uses := make([]*store.PrefixUse, len(rows))
	summed := make(chan struct{})
	if !r.opts.Shard.Sharded() && r.opts.Store.RepeatedResponses() == repeated {
		for i, rw := range rows {
			if !rw.unjournaled {
				rw.mu.Lock()
				u := rw.use
				rw.mu.Unlock()
				uses[i] = &u
			}
		}
		close(summed)
		return uses, summed
	}
	go func() {
		defer close(summed)
		for i, rw := range rows {
			if rw.unjournaled {
				continue
			}
			if u, err := r.opts.Store.PrefixUse(context.WithoutCancel(ctx), runID, rw.journalName); err == nil {
				uses[i] = &u
			} // else FinishEval sums them, and says what failed
		}
	}()
	return uses, summed
}

// finishRow journals how a row ended and its metrics: what reports read.
// use is its prefix-cache sums, when read already (nil: FinishEval sums
// them).
func (r *Runner) finishRow(ctx context.Context, runID string, rw *row, use *store.PrefixUse) {
	if rw.unjournaled {
		return
	}
	res := rw.res
	o := store.Outcome{Samples: res.Samples, Cached: res.Cached, Errors: res.Errors, Truncated: res.Truncated, Error: res.Error,
		Expected: rw.expected, PrefixMetrics: rw.prefixMetrics, PrefixUse: use}
	if err := r.opts.Store.FinishEval(context.WithoutCancel(ctx), runID, rw.journalName, o, res.Metrics); err != nil {
		r.log.Error("journal: finish eval", "eval", rw.journalName, "error", err)
		if res.Error == "" {
			res.Error = fmt.Sprintf("journal: %v", err)
		}
	}
}

// feedSoon has the journal feed what its log holds now instead of when
// more has queued (the feed takes a few thousand records at a time): once
// the task has no more samples, while the last ones are at the model, and
// once they are done, while the rows are aggregated. What is left to feed
// when the report reads the journal is then only the last few samples,
// not up to a feed's worth on the run's critical path.
func (r *Runner) feedSoon() {
	if r.opts.Store != nil {
		r.opts.Store.FeedSoon()
	}
}

// lastSamples is called once a phase's task has no more samples to give:
// what the log holds is fed now (feedSoon), and from then on each answer's
// records as they are synced (store.FeedFollow), while the last samples
// are at the model and no request follows their answers, rather than
// together at the end, where the feed held up the bootstrap of the
// metrics and the report.
func (r *Runner) lastSamples() {
	r.feedSoon()
	r.feedFollow(true)
}

func (r *Runner) feedFollow(on bool) {
	if r.opts.Store != nil {
		r.opts.Store.FeedFollow(on)
	}
}
