package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/hayloft/hayloft/sdk"
)

// MaxCheckedSamples bounds how many samples CheckTask reads per pass, so it
// stays quick on tasks with large datasets.
const MaxCheckedSamples = 1000

// CheckTask checks the contracts the kernel relies on from a task: samples
// are non-nil with unique non-empty IDs, Depth is in [0,1] or negative,
// Length is not negative, metadata is JSON-encodable, message roles are
// known, the order is the same on every read (a restarted plugin resumes by
// count), Limit is honoured, and stopping early or cancelling ends the
// stream. It reads at most MaxCheckedSamples samples per pass.
func CheckTask(t testing.TB, task sdk.Task) {
	t.Helper()
	checkTask(context.Background(), task, t.Errorf)
}

// errorf reports one broken contract.
type errorf func(format string, args ...any)

func checkTask(ctx context.Context, task sdk.Task, fail errorf) {
	ids, ok := readIDs(ctx, task, 0, fail)
	if !ok {
		return
	}
	if len(ids) == 0 {
		fail("task produced no samples")
		return
	}

	// Deterministic order.
	if again, ok := readIDs(ctx, task, 0, fail); ok {
		if len(again) != len(ids) {
			fail("second read gave %d samples, first %d", len(again), len(ids))
		} else {
			for i := range ids {
				if ids[i] != again[i] {
					fail("order differs between reads: sample %d was %q, then %q", i, ids[i], again[i])
					break
				}
			}
		}
	}

	// A count, where the task gives one, is what it yields.
	if sc, ok := task.(sdk.SampleCounter); ok {
		n, err := sc.CountSamples(ctx, &sdk.SamplesRequest{})
		switch {
		case errors.Is(err, sdk.ErrUnsupported):
		case err != nil:
			fail("CountSamples: %v", err)
		case n != len(ids):
			fail("CountSamples says %d, Samples yielded %d", n, len(ids))
		}
		if n, err := sc.CountSamples(ctx, &sdk.SamplesRequest{Limit: 1}); err == nil && n != 1 {
			fail("CountSamples with Limit 1 says %d", n)
		}
	}

	// Limit.
	if got, ok := readIDs(ctx, task, 1, fail); ok {
		switch {
		case len(got) != 1:
			fail("Limit 1 gave %d samples", len(got))
		case got[0] != ids[0]:
			fail("Limit 1 gave %q, want the first sample %q", got[0], ids[0])
		}
	}

	// Early stop. A task that ignores yield's false makes the range loop
	// panic, which the recover turns into a report.
	if !within(30*time.Second, func() {
		defer func() {
			if r := recover(); r != nil {
				fail("Samples kept yielding after yield returned false: %v", r)
			}
		}()
		for _, err := range task.Samples(ctx, &sdk.SamplesRequest{}) {
			if err != nil {
				fail("first sample: %v", err)
			}
			break
		}
	}) {
		fail("Samples did not return 30s after the consumer stopped")
	}

	// Cancellation.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 0
	if !within(30*time.Second, func() {
		for _, err := range task.Samples(cctx, &sdk.SamplesRequest{}) {
			if err != nil {
				return // the task reported the cancellation: fine
			}
			n++
			if n == 1 {
				cancel()
			}
			if n > MaxCheckedSamples {
				return
			}
		}
	}) {
		fail("Samples did not return 30s after ctx was cancelled")
	} else if len(ids) > 64 && len(ids) < MaxCheckedSamples && n == len(ids) {
		// A few samples in flight may still arrive; the whole set means the
		// task never looked at ctx.
		fail("all %d samples arrived after ctx was cancelled after the first: the task ignores ctx", n)
	}
}

// within runs f and reports whether it returned before d. A task that hangs
// leaves its goroutine behind; the test is failing anyway.
func within(d time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// readIDs reads up to MaxCheckedSamples samples (or limit, if set),
// checking each, and returns their IDs in order; ok is false if the stream
// failed.
func readIDs(ctx context.Context, task sdk.Task, limit int, fail errorf) (ids []string, ok bool) {
	seen := map[string]int{}
	for s, err := range task.Samples(ctx, &sdk.SamplesRequest{Limit: limit}) {
		i := len(ids)
		if err != nil {
			fail("sample %d: %v", i, err)
			return ids, false
		}
		if s == nil {
			fail("sample %d is nil", i)
			return ids, false
		}
		checkSample(i, s, fail)
		if j, dup := seen[s.ID]; dup && s.ID != "" {
			fail("samples %d and %d share ID %q", j, i, s.ID)
		}
		seen[s.ID] = i
		ids = append(ids, s.ID)
		if len(ids) >= MaxCheckedSamples {
			break
		}
	}
	return ids, true
}

func checkSample(i int, s *sdk.Sample, fail errorf) {
	if s.ID == "" {
		fail("sample %d has an empty ID", i)
	}
	if math.IsNaN(s.Depth) || s.Depth > 1 {
		fail("sample %q: Depth %v, want 0..1 or negative", s.ID, s.Depth)
	}
	if s.Length.Tokens < 0 {
		fail("sample %q: Length.Tokens %d is negative", s.ID, s.Length.Tokens)
	}
	if s.Window < 0 {
		fail("sample %q: Window %d is negative", s.ID, s.Window)
	}
	if s.MaxNewTokens < 0 {
		fail("sample %q: MaxNewTokens %d is negative", s.ID, s.MaxNewTokens)
	}
	if _, err := json.Marshal(s.Metadata); err != nil {
		fail("sample %q: metadata is not JSON-encodable: %v", s.ID, err)
	}
	for j, m := range s.Messages {
		switch m.Role {
		case "system", "user", "assistant":
		default:
			fail("sample %q: message %d has role %q, want system, user or assistant", s.ID, j, m.Role)
		}
	}
}

// ScorerCase is one expectation for CheckScorer.
type ScorerCase struct {
	Name    string
	Req     *sdk.ScoreRequest
	Want    float64
	Invalid bool    // the scorer should mark the prediction invalid; Want is ignored
	Tol     float64 // absolute tolerance; 0 means 1e-9
}

// CheckScorer scores every case, one at a time and then all at once (a
// scorer must be safe for concurrent use and give the same answers), checks
// values and that Details are JSON-encodable, and, if the scorer is an
// sdk.Aggregator, that aggregating the scores works (or reports
// sdk.ErrUnsupported) and counts at most the cases given. A scorer that
// claims to keep nothing of its requests (sdk.Borrower) is also held to
// it: see checkBorrows.
func CheckScorer(t testing.TB, scorer sdk.Scorer, cases []ScorerCase) {
	t.Helper()
	checkScorer(context.Background(), scorer, cases, t.Errorf)
}

func checkScorer(ctx context.Context, scorer sdk.Scorer, cases []ScorerCase, fail errorf) {
	failed := false
	fail0 := fail
	fail = func(format string, args ...any) { failed = true; fail0(format, args...) }
	_, borrows := scorer.(sdk.Borrower)
	if borrows {
		// First, while nothing of the cases is in any cache of the scorer.
		checkBorrows(ctx, scorer, cases, fail)
		if failed {
			return
		}
	}
	seq := make([]*sdk.ScoreResponse, len(cases))
	for i, c := range cases {
		resp, err := scorer.Score(ctx, c.Req)
		if err != nil {
			fail("%s: Score: %v", c.Name, err)
			continue
		}
		if resp == nil {
			fail("%s: Score returned nil and no error", c.Name)
			continue
		}
		seq[i] = resp
		checkScore(c, resp, fail)
	}
	if failed {
		return
	}

	par := make([]*sdk.ScoreResponse, len(cases))
	errs := make([]error, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Go(func() { par[i], errs[i] = scorer.Score(ctx, c.Req) })
	}
	wg.Wait()
	for i, c := range cases {
		switch {
		case errs[i] != nil:
			fail("%s: concurrent Score: %v", c.Name, errs[i])
		case par[i] == nil:
			fail("%s: concurrent Score returned nil", c.Name)
		case par[i].Value != seq[i].Value || par[i].Invalid != seq[i].Invalid:
			fail("%s: concurrent Score gave %v (invalid %v), sequential %v (invalid %v)",
				c.Name, par[i].Value, par[i].Invalid, seq[i].Value, seq[i].Invalid)
		}
	}

	ag, ok := scorer.(sdk.Aggregator)
	if !ok {
		return
	}
	agg, err := ag.Aggregate(ctx, &sdk.AggregateRequest{Scores: seq})
	if errors.Is(err, sdk.ErrUnsupported) {
		return
	}
	if err != nil {
		fail("Aggregate: %v", err)
		return
	}
	if agg.N < 0 || agg.N > len(cases) {
		fail("Aggregate: N = %d over %d scores", agg.N, len(cases))
	}
	if agg.Invalid < 0 || agg.Invalid > len(cases) {
		fail("Aggregate: Invalid = %d over %d scores", agg.Invalid, len(cases))
	}
	if math.IsNaN(agg.Value) && agg.N > 0 {
		fail("Aggregate: value is NaN over %d scores", agg.N)
	}
	if _, err := json.Marshal(agg.Details); err != nil {
		fail("Aggregate: details are not JSON-encodable: %v", err)
	}
	// Reports draw the tables generically: they must read back.
	if _, err := sdk.TablesOf(agg.Details); err != nil {
		fail("Aggregate: %v", err)
	}
}

func checkScore(c ScorerCase, resp *sdk.ScoreResponse, fail errorf) {
	if _, err := json.Marshal(resp.Details); err != nil {
		fail("%s: details are not JSON-encodable: %v", c.Name, err)
	}
	if resp.Invalid != c.Invalid {
		fail("%s: invalid = %v, want %v", c.Name, resp.Invalid, c.Invalid)
		return
	}
	if c.Invalid {
		return
	}
	tol := c.Tol
	if tol == 0 {
		tol = 1e-9
	}
	if math.IsNaN(resp.Value) || math.Abs(resp.Value-c.Want) > tol {
		fail("%s: value = %v, want %v (±%g)", c.Name, resp.Value, c.Want, tol)
	}
}

// checkBorrows holds a Borrower to keeping nothing of its requests, on
// every path the SDK's plugin server may take with a batch's memory (see
// borrowPaths). Each case is scored on a copy (request and sample) whose
// strings (those a packed batch carries: id, prediction, language,
// targets) share one buffer, once per path; once a call returns, its
// buffer is overwritten with other cases' text, as the next batch reuses
// it. Two things must then hold:
//   - nothing of the copies is still reachable once the check lets go of
//     them (a weak pointer to each buffer must clear after two
//     collections, the second for sync.Pool's victim cache): a cache
//     entry, map key or remembered target cut from a copy keeps its
//     buffer alive, even when its text is never read again;
//   - scoring each case again on its own request, each way, gives the
//     same answer, details and statistics included.
//
// It runs before any other scoring, so that what a cache holds is the
// copies; and each case takes the paths in a different order (the first
// path a case takes is the one that fills a cache with it), so that with
// at least as many cases as paths, each path meets a cold cache.
func checkBorrows(ctx context.Context, scorer sdk.Scorer, cases []ScorerCase, fail errorf) {
	filler := caseText(cases)
	paths := borrowPaths(scorer)
	type lent struct {
		buf    weak.Pointer[byte]
		c, way int // the case and the path it was lent to
	}
	var held []lent
	first := make([][]borrowAnswer, len(cases))
	for i, c := range cases {
		first[i] = make([]borrowAnswer, len(paths))
		for k := range paths {
			way := (i + k) % len(paths)
			req, buf := borrowedCopy(c.Req)
			paths[way].flags(req)
			got, ok := paths[way].score(ctx, req, c, fail)
			if !ok {
				return
			}
			first[i][way] = got
			held = append(held, lent{weak.Make(&buf[0]), i, way})
			// Overwritten as the next batch would: strings, the
			// targets' array, the sample and the request.
			for j := range buf {
				buf[j] = filler[(len(held)*7+j)%len(filler)]
			}
			if req.Sample != nil {
				for j := range req.Sample.Targets {
					req.Sample.Targets[j] = "#"
				}
				*req.Sample = sdk.Sample{ID: "#"}
			}
			*req = sdk.ScoreRequest{Prediction: "#"}
		}
	}
	runtime.GC()
	runtime.GC()
	for _, l := range held {
		if l.buf.Value() != nil {
			fail("%s: sdk.Borrower: %s kept a piece of its request: the copy it was lent is still reachable after the call", cases[l.c].Name, paths[l.way].name)
			return
		}
	}
	for i, c := range cases {
		for way, path := range paths {
			req := *c.Req
			path.flags(&req)
			got, ok := path.score(ctx, &req, c, fail)
			if !ok {
				return
			}
			if want := first[i][way]; !got.same(want) {
				fail("%s: sdk.Borrower: %s again after its copy was overwritten gave %v (invalid %v, details %s, stats %s), on the copy %v (invalid %v, details %s, stats %s)",
					c.Name, path.name, got.value, got.invalid, got.details, got.stats, want.value, want.invalid, want.details, want.stats)
			}
		}
	}
}

// borrowAnswer is what checkBorrows compares of a response: copies, so that
// nothing of it holds a lent buffer.
type borrowAnswer struct {
	value   float64
	invalid bool
	details string
	stats   string
}

func (a borrowAnswer) same(b borrowAnswer) bool {
	if math.IsNaN(a.value) && math.IsNaN(b.value) {
		a.value, b.value = 0, 0
	}
	return a == b
}

// borrowPath is one way the plugin server calls a scorer on a batch's
// memory: a method, and the request flags it calls it with.
type borrowPath struct {
	name  string
	flags func(*sdk.ScoreRequest)
	score func(ctx context.Context, req *sdk.ScoreRequest, c ScorerCase, fail errorf) (borrowAnswer, bool)
}

// detailsJSONScorer and scoreObjectScorer are the methods of sdk/plugin's
// DetailsJSONScorer and ScoreObjectScorer (this package does not import
// it; a test holds them to each other): what the plugin server calls
// instead of Score when a scorer has them.
type detailsJSONScorer interface {
	ScoreDetailsJSON(ctx context.Context, req *sdk.ScoreRequest, dst []byte) (*sdk.ScoreResponse, []byte, error)
}

type scoreObjectScorer interface {
	ScoreObjectJSON(ctx context.Context, req *sdk.ScoreRequest, dst []byte) (*sdk.ScoreResponse, []byte, error)
}

// borrowPaths lists the ways the plugin server scores a request, by its
// flags: a score object (`hayloft score`'s lines), plain details (a run),
// and ForAggregate (`hayloft score --aggregate`), each through the
// method it picks for them (ScoreObjectJSON, then ScoreDetailsJSON, then
// Score). Score itself is added when the server never calls it, since a
// Borrower's promise holds for every caller.
func borrowPaths(scorer sdk.Scorer) []borrowPath {
	type method struct {
		name string
		call func(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, []byte, error)
	}
	plain := method{"Score", func(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, []byte, error) {
		resp, err := scorer.Score(ctx, req)
		return resp, nil, err
	}}
	details, object := plain, plain
	if js, ok := scorer.(detailsJSONScorer); ok {
		details = method{"ScoreDetailsJSON", func(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, []byte, error) {
			return js.ScoreDetailsJSON(ctx, req, nil)
		}}
		object = details
	}
	if so, ok := scorer.(scoreObjectScorer); ok {
		object = method{"ScoreObjectJSON", func(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, []byte, error) {
			return so.ScoreObjectJSON(ctx, req, nil)
		}}
	}
	type way struct {
		m                    method
		scoreObject, forAggr bool
	}
	ways := []way{{object, true, false}, {details, false, false}, {details, false, true}}
	if details.name != plain.name {
		ways = append(ways, way{plain, false, false}, way{plain, false, true})
	}
	paths := make([]borrowPath, len(ways))
	for k, w := range ways {
		name := w.m.name
		switch {
		case w.scoreObject:
			name += " (ScoreObject)"
		case w.forAggr:
			name += " (ForAggregate)"
		}
		paths[k] = borrowPath{
			name: name,
			flags: func(req *sdk.ScoreRequest) {
				req.ScoreObject, req.ForAggregate = w.scoreObject, w.forAggr
			},
			score: func(ctx context.Context, req *sdk.ScoreRequest, c ScorerCase, fail errorf) (borrowAnswer, bool) {
				resp, details, err := w.m.call(ctx, req)
				if err != nil || resp == nil {
					fail("%s: %s (sdk.Borrower): %v", c.Name, name, err)
					return borrowAnswer{}, false
				}
				c.Name += " (" + name + ")"
				checkScore(c, resp, fail)
				if details == nil {
					details, _ = json.Marshal(resp.Details)
				}
				stats, _ := json.Marshal(resp.Stats)
				return borrowAnswer{resp.Value, resp.Invalid, string(details), string(stats)}, true
			},
		}
	}
	return paths
}

// caseText is the cases' text, which checkBorrows writes over a copy it
// has lent: another case's strings, as the next batch would bring.
func caseText(cases []ScorerCase) []byte {
	var b []byte
	for _, c := range cases {
		b = append(b, c.Req.Prediction...)
		if c.Req.Sample != nil {
			b = append(b, c.Req.Sample.ID...)
			for _, t := range c.Req.Sample.Targets {
				b = append(b, t...)
			}
		}
	}
	if len(b) == 0 {
		b = []byte("#")
	}
	return b
}

// borrowedCopy is a copy of req whose sample is a copy too, their id,
// prediction, language and targets cut from the one buffer returned. The
// buffer has room for at least 16 bytes, so that it is never one of the
// runtime's tiny allocations, which share a block with others (and its
// weak pointer with their lifetime).
func borrowedCopy(req *sdk.ScoreRequest) (*sdk.ScoreRequest, []byte) {
	cp := *req
	size := len(req.Prediction)
	if req.Sample != nil {
		size += len(req.Sample.ID) + len(req.Sample.Language)
		for _, t := range req.Sample.Targets {
			size += len(t)
		}
	}
	buf := make([]byte, 0, max(size, 16))
	cut := func(s string) string {
		start := len(buf)
		buf = append(buf, s...)
		return unsafe.String(unsafe.SliceData(buf[start:]), len(s))
	}
	cp.Prediction = cut(req.Prediction)
	if req.Sample != nil {
		smp := *req.Sample
		cp.Sample = &smp
		smp.ID, smp.Language = cut(smp.ID), cut(smp.Language)
		if smp.Targets != nil {
			smp.Targets = make([]string, len(req.Sample.Targets))
			for i, t := range req.Sample.Targets {
				smp.Targets[i] = cut(t)
			}
		}
	}
	return &cp, buf[:cap(buf)]
}
