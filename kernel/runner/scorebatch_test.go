package runner

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

// batchMatch is matchScorer taking batches, as a plugin's scorer does
// through pluginhost; each batch takes a millisecond, so that samples
// finishing meanwhile queue for the next.
type batchMatch struct {
	matchScorer
	batches, requests, largest atomic.Int64
	// fail, when set, is a request's own error; batchErr the whole call's.
	fail     func(id string) error
	batchErr error
}

func (b *batchMatch) ScoreBatch(ctx context.Context, reqs []*sdk.ScoreRequest) ([]plugin.ScoreResult, error) {
	b.batches.Add(1)
	b.requests.Add(int64(len(reqs)))
	for {
		old := b.largest.Load()
		if int64(len(reqs)) <= old || b.largest.CompareAndSwap(old, int64(len(reqs))) {
			break
		}
	}
	time.Sleep(time.Millisecond)
	if b.batchErr != nil {
		return nil, b.batchErr
	}
	out := make([]plugin.ScoreResult, len(reqs))
	for i, req := range reqs {
		if b.fail != nil {
			if err := b.fail(req.Sample.ID); err != nil {
				out[i].Err = err
				continue
			}
		}
		out[i].Response, out[i].Err = b.Score(ctx, req)
	}
	return out, nil
}

func runBatched(t *testing.T, n int, sc *batchMatch) (*fixture, *Result) {
	t.Helper()
	f := newFixture(t, n, map[string]*echoModel{"good": {delay: time.Millisecond}})
	f.set.RegisterScorer("batched", func(context.Context, sdk.Options) (sdk.Scorer, error) { return sc, nil })
	res, err := f.run(t, context.Background(), `
task "counting" "t" {}
model "good" "g" { max_concurrency = 32 }
eval "e" {
  task    = task.counting.t
  models  = [model.good.g]
  scorers = ["batched"]
}`)
	if err != nil {
		t.Fatal(err)
	}
	return f, res
}

func TestScorerCalledInBatches(t *testing.T) {
	sc := &batchMatch{}
	f, res := runBatched(t, 300, sc)
	ev := res.Evals[0]
	if ev.Samples != 300 || ev.Error != "" {
		t.Fatalf("samples %d, error %q", ev.Samples, ev.Error)
	}
	if m := ev.Metrics["batched"]; m == nil || m.N != 300 || m.Value != 1 {
		t.Fatalf("metric %+v, want 300 scores of 1", m)
	}
	if got := sc.requests.Load(); got != 300 {
		t.Errorf("%d requests scored, want each of the 300 samples once", got)
	}
	if b := sc.batches.Load(); b >= 300 {
		t.Errorf("%d calls for 300 samples: no batching", b)
	}
	if l := sc.largest.Load(); l > scoreBatchMax {
		t.Errorf("a batch of %d, above the limit of %d", l, scoreBatchMax)
	}
	// Every score is journaled with its sample.
	scores, err := f.store.Scores(context.Background(), res.RunID, "e/model.good.g/none", "batched")
	if err != nil || len(scores) != 300 {
		t.Fatalf("journaled %d scores (%v), want 300", len(scores), err)
	}
}

func TestBatchedScorerErrors(t *testing.T) {
	t.Run("a request's own error", func(t *testing.T) {
		// As with one call per sample: the sample's score is invalid and
		// says why; the row goes on.
		sc := &batchMatch{fail: func(id string) error {
			if id == "3" || id == "7" {
				return &sdk.RequestError{Code: sdk.CodeBadRequest, Msg: "cannot score " + id}
			}
			return nil
		}}
		f, res := runBatched(t, 100, sc)
		ev := res.Evals[0]
		if ev.Samples != 100 || ev.Error != "" {
			t.Fatalf("samples %d, error %q", ev.Samples, ev.Error)
		}
		if m := ev.Metrics["batched"]; m == nil || m.N != 100 || m.Invalid != 2 || m.Value != 1 {
			t.Fatalf("metric %+v, want 100 of which 2 invalid, the rest matching", m)
		}
		scores, err := f.store.Scores(context.Background(), res.RunID, "e/model.good.g/none", "batched")
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, s := range scores {
			if s.Score.Invalid {
				bad++
				if !strings.Contains(s.Score.Details["error"].(string), "cannot score "+s.SampleID) {
					t.Errorf("sample %s: details %v", s.SampleID, s.Score.Details)
				}
			}
		}
		if bad != 2 {
			t.Errorf("%d invalid scores journaled, want 2", bad)
		}
	})
	t.Run("the call's error", func(t *testing.T) {
		// A scorer that cannot answer at all ends its row, as a failed
		// call per sample did.
		sc := &batchMatch{batchErr: errors.New("plugin crashed twice")}
		_, res := runBatched(t, 100, sc)
		ev := res.Evals[0]
		if !strings.Contains(ev.Error, "scorer batched: plugin crashed twice") {
			t.Fatalf("row error %q", ev.Error)
		}
	})
}

// gateScorer holds every score until its gate opens, counting how many it
// holds at once.
type gateScorer struct {
	matchScorer
	gate          chan struct{}
	held, maxHeld atomic.Int64
}

func (g *gateScorer) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	n := g.held.Add(1)
	defer g.held.Add(-1)
	for {
		old := g.maxHeld.Load()
		if n <= old || g.maxHeld.CompareAndSwap(old, n) {
			break
		}
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.matchScorer.Score(ctx, req)
}

// A sample the model has answered gives its slot to the next sample while
// it is scored and journaled: with every answered sample's score held, the
// model is still asked for the next ones (here the gate opens only once it
// has been asked twice max_concurrency times, which holding the slots
// through scoring would never let happen). Scoring has slots of its own,
// as many: no more samples than that are scored at once.
func TestAnsweredSampleGivesItsSlotOn(t *testing.T) {
	m := &echoModel{}
	f := newFixture(t, 12, map[string]*echoModel{"good": m})
	g := &gateScorer{gate: make(chan struct{})}
	f.set.RegisterScorer("gated", func(context.Context, sdk.Options) (sdk.Scorer, error) { return g, nil })
	var timedOut atomic.Bool
	go func() {
		deadline := time.After(30 * time.Second)
		for m.calls.Load() < 4 {
			select {
			case <-deadline:
				timedOut.Store(true)
				close(g.gate) // let the run end, failed below
				return
			case <-time.After(time.Millisecond):
			}
		}
		close(g.gate)
	}()
	res, err := f.run(t, context.Background(), `
task "counting" "t" {}
model "good" "g" { max_concurrency = 2 }
eval "e" {
  task    = task.counting.t
  models  = [model.good.g]
  scorers = ["gated"]
}`)
	if err != nil {
		t.Fatal(err)
	}
	if ev := res.Evals[0]; ev.Error != "" || ev.Samples != 12 {
		t.Fatalf("%d samples, error %q", ev.Samples, ev.Error)
	}
	if timedOut.Load() {
		t.Error("the model was not asked for more samples while the answered ones were held at scoring")
	}
	if n := m.maxInFlight.Load(); n > 2 {
		t.Errorf("%d requests at the model at once, max_concurrency 2", n)
	}
	if n := g.maxHeld.Load(); n > 2 {
		t.Errorf("%d samples scored at once, want at most max_concurrency (2)", n)
	}
}
