// Package limiter bounds the requests in flight to a model server and adapts
// the bound to what the server sustains (AIMD, as TCP congestion control).
//
// The limit grows while latency holds near the best seen and the server
// reports no queue, and halves when the server says it is overloaded (429 or
// 503). It starts with TCP-style slow start (+1 per success, doubling each
// round trip) until the first sign of congestion, then grows by one per
// round trip (+1/limit per success). It never goes below Min, and Max is a
// hard cap on requests in flight: a GPU server's batch size, or a provider's
// rate limit.
package limiter

import (
	"container/list"
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Limiter.
type Options struct {
	// Initial is the starting limit, clamped to [Min, Max]; default Min.
	Initial int
	// Min is the lowest limit (default 1); Max the hard cap (default Min).
	Min, Max int
	// Tolerance is how much slower than the baseline (the lowest recent
	// latency) a request may be and still count as "latency holds";
	// default 1.5.
	Tolerance float64
	// Backoff multiplies the limit on overload; default 0.5.
	Backoff float64
	// ProbeInterval is how often the load probe runs at most; default 1s.
	ProbeInterval time.Duration
}

// Outcome is how a request went, reported when its slot is released.
type Outcome struct {
	// Latency of the request; zero means the time since Acquire returned.
	Latency time.Duration
	// Overloaded reports the server refusing for load (HTTP 429 or 503).
	Overloaded bool
	// Err is any other failure; it neither grows nor shrinks the limit.
	Err error
}

// Limiter is an adaptive concurrency limit. Safe for concurrent use.
type Limiter struct {
	opts Options

	mu           sync.Mutex
	limit        float64
	inFlight     int
	waiters      list.List // of chan struct{}, FIFO
	slowStart    bool
	baseline     time.Duration // lowest recent latency; 0 until the first success
	lastDecrease time.Time

	probe      func(ctx context.Context) (int, error)
	probing    bool
	probedAt   time.Time
	waiting    int // the server's queue at the last probe
	maxSeen    int
	decreases  int
	overloaded int
}

// New returns a limiter at opts.Initial.
func New(opts Options) *Limiter {
	opts.Min = max(opts.Min, 1)
	opts.Max = max(opts.Max, opts.Min)
	if opts.Initial == 0 {
		opts.Initial = opts.Min
	}
	opts.Initial = min(max(opts.Initial, opts.Min), opts.Max)
	if opts.Tolerance <= 1 {
		opts.Tolerance = 1.5
	}
	if opts.Backoff <= 0 || opts.Backoff >= 1 {
		opts.Backoff = 0.5
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = time.Second
	}
	return &Limiter{opts: opts, limit: float64(opts.Initial), slowStart: true}
}

// SetLoadProbe installs a function reporting how many requests the server
// has queued (e.g. VLLMWaiting). While it reports a queue the limit
// does not grow: more requests would only wait there. It runs in the
// background at most once per ProbeInterval; an error counts as no queue.
func (l *Limiter) SetLoadProbe(probe func(ctx context.Context) (waiting int, err error)) {
	l.mu.Lock()
	l.probe = probe
	l.mu.Unlock()
}

// Acquire waits for a slot and returns the function that gives it back;
// call it exactly once (later calls do nothing) with the request's outcome.
// It fails only when ctx ends first.
func (l *Limiter) Acquire(ctx context.Context) (release func(Outcome), err error) {
	l.mu.Lock()
	if l.waiters.Len() == 0 && l.inFlight < l.slots() {
		l.inFlight++
		l.maxSeen = max(l.maxSeen, l.inFlight)
		l.mu.Unlock()
		return l.releaser(), nil
	}
	ch := make(chan struct{})
	e := l.waiters.PushBack(ch)
	l.mu.Unlock()

	select {
	case <-ch:
		return l.releaser(), nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		select {
		case <-ch:
			// Granted while we gave up: hand the slot on.
			l.inFlight--
			l.dispatch()
		default:
			l.waiters.Remove(e)
		}
		return nil, ctx.Err()
	}
}

// slots is the whole number of requests the limit allows.
func (l *Limiter) slots() int { return int(math.Floor(l.limit)) }

// dispatch grants free slots to waiters in order. Caller holds mu.
func (l *Limiter) dispatch() {
	for l.inFlight < l.slots() && l.waiters.Len() > 0 {
		ch := l.waiters.Remove(l.waiters.Front()).(chan struct{})
		l.inFlight++
		l.maxSeen = max(l.maxSeen, l.inFlight)
		close(ch)
	}
}

func (l *Limiter) releaser() func(Outcome) {
	start := time.Now()
	var done atomic.Bool
	return func(o Outcome) {
		if done.Swap(true) {
			return
		}
		if o.Latency <= 0 {
			o.Latency = time.Since(start)
		}
		l.release(start, o)
	}
}

func (l *Limiter) release(start time.Time, o Outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// As Netflix's concurrency-limits does: using at least half the limit
	// counts as using it; below that the caller, not the server, is the
	// bottleneck and success proves nothing about a higher limit.
	saturated := 2*l.inFlight >= l.slots() || l.waiters.Len() > 0
	l.inFlight--
	switch {
	case o.Overloaded:
		l.overloaded++
		// Requests sent before the last decrease saw the old limit; their
		// refusals are the same congestion event (TCP: one cut per round
		// trip), so they must not cut again.
		if start.After(l.lastDecrease) {
			l.limit = max(float64(l.opts.Min), l.limit*l.opts.Backoff)
			l.lastDecrease = time.Now()
			l.slowStart = false
			l.decreases++
		}
	case o.Err != nil:
	default:
		l.observe(o.Latency, saturated)
	}
	l.maybeProbe()
	l.dispatch()
}

// observe updates the baseline with a success and grows the limit when the
// latency holds. Caller holds mu.
func (l *Limiter) observe(lat time.Duration, saturated bool) {
	switch {
	case l.baseline == 0 || lat < l.baseline:
		l.baseline = lat
	default:
		// Drift up slowly, so a lasting change (longer prompts, a busier
		// GPU) becomes the new normal instead of freezing growth forever.
		l.baseline += (lat - l.baseline) / 64
	}
	if float64(lat) > l.opts.Tolerance*float64(l.baseline) {
		l.slowStart = false
		return
	}
	// A queue on the server means it is already full.
	if !saturated || l.waiting > 0 {
		return
	}
	if l.slowStart {
		l.limit++
	} else {
		l.limit += 1 / l.limit
	}
	l.limit = min(l.limit, float64(l.opts.Max))
}

// maybeProbe starts the load probe in the background when it is due.
// Caller holds mu.
func (l *Limiter) maybeProbe() {
	if l.probe == nil || l.probing || time.Since(l.probedAt) < l.opts.ProbeInterval {
		return
	}
	l.probing = true
	probe := l.probe
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), l.opts.ProbeInterval)
		defer cancel()
		n, err := probe(ctx)
		if err != nil {
			n = 0
		}
		l.mu.Lock()
		l.waiting, l.probing, l.probedAt = n, false, time.Now()
		l.mu.Unlock()
	}()
}

// Stats is a snapshot of the limiter, for progress displays and tests.
type Stats struct {
	Limit       int           // current limit, whole requests
	InFlight    int           // slots held now
	Waiting     int           // callers blocked in Acquire
	MaxInFlight int           // most slots ever held at once
	Decreases   int           // multiplicative decreases so far
	Overloaded  int           // overloaded outcomes reported
	Baseline    time.Duration // the latency growth is judged against
	ServerQueue int           // the load probe's last answer
}

// Stats returns a snapshot.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{
		Limit: l.slots(), InFlight: l.inFlight, Waiting: l.waiters.Len(), MaxInFlight: l.maxSeen,
		Decreases: l.decreases, Overloaded: l.overloaded, Baseline: l.baseline, ServerQueue: l.waiting,
	}
}

// Limit is the current limit.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.slots()
}
