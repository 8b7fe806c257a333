package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

// Scorers that run as plugins are asked in batches: samples that finish at
// about the same time share one ScoreBatch call instead of one call each, so
// the plugin pays its per-call costs (a message, a goroutine, a decode) once
// per batch. Each sample still waits for its own score, which it journals
// with the sample as before, and a request that fails fails alone: batching
// changes how many calls carry the requests, nothing a sample sees.
//
// A batch leaves when it is full, when no other batch of the scorer is in
// flight (an idle scorer never makes a sample wait), or scoreBatchDelay
// after its first request (a slow scorer does not hold samples back for
// long). Under load, requests queue while a batch is out, and batches grow
// with the load.
const (
	scoreBatchMax   = 64
	scoreBatchBytes = 4 << 20 // the plugin connection's messages stay well below its limit
	scoreBatchDelay = 2 * time.Millisecond
)

// batchScorer is a scorer that takes many requests per call:
// *pluginhost.Scorer.
type batchScorer interface {
	ScoreBatch(ctx context.Context, reqs []*sdk.ScoreRequest) ([]plugin.ScoreResult, error)
}

// scoreBatcher gathers one scorer's requests into batches.
type scoreBatcher struct {
	bs batchScorer
	// ctx is the eval's: a batch carries several rows' samples, and a
	// row that ends stops waiting for its own without cancelling the rest.
	ctx context.Context

	mu          sync.Mutex
	queue       []*scoreJob
	queuedBytes int
	inFlight    int         // batches sent and not answered
	timer       *time.Timer // the queue's deadline, while it waits
	batches     int         // calls made, for the debug log
	requests    int         // requests they carried
}

// stats is how many calls carried how many requests.
func (b *scoreBatcher) stats() (batches, requests int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.batches, b.requests
}

type scoreJob struct {
	req  *sdk.ScoreRequest
	size int
	resp *sdk.ScoreResponse
	// details is resp's details as the plugin encoded them (resp.Details
	// is then nil): journaled as they are, decoded only for a scorer's
	// own Aggregate (aggregate.go).
	details []byte
	err     error
	done    chan struct{}
}

func newScoreBatcher(ctx context.Context, bs batchScorer) *scoreBatcher {
	return &scoreBatcher{bs: bs, ctx: ctx}
}

// Score queues req for the next batch and waits for its score, or for ctx.
// details: see scoreJob.
func (b *scoreBatcher) Score(ctx context.Context, req *sdk.ScoreRequest) (resp *sdk.ScoreResponse, details []byte, err error) {
	j := &scoreJob{req: req, size: requestSize(req), done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, j)
	b.queuedBytes += j.size
	b.dispatchLocked(false)
	b.mu.Unlock()
	select {
	case <-j.done:
		return j.resp, j.details, j.err
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// requestSize estimates what req weighs in a batch message.
func requestSize(req *sdk.ScoreRequest) int {
	n := 256 + len(req.Prediction)
	if s := req.Sample; s != nil {
		n += len(s.Context) + len(s.Question)
		for _, t := range s.Targets {
			n += len(t)
		}
		for _, m := range s.Messages {
			n += len(m.Content)
		}
	}
	return n
}

// dispatchLocked sends what the rules above let go; expired: the queue's
// deadline has passed.
func (b *scoreBatcher) dispatchLocked(expired bool) {
	for len(b.queue) > 0 {
		full := len(b.queue) >= scoreBatchMax || b.queuedBytes >= scoreBatchBytes
		if !full && b.inFlight > 0 && !expired {
			if b.timer == nil {
				b.timer = time.AfterFunc(scoreBatchDelay, b.expire)
			}
			return
		}
		n, size := 0, 0
		for n < len(b.queue) && n < scoreBatchMax {
			if n > 0 && size+b.queue[n].size > scoreBatchBytes {
				break
			}
			size += b.queue[n].size
			n++
		}
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		b.queuedBytes -= size
		b.inFlight++
		b.batches++
		b.requests += n
		go b.send(batch)
	}
	b.queue = nil // let the sent batches' backing array go
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
}

func (b *scoreBatcher) expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.timer = nil
	b.dispatchLocked(true)
}

// send scores one batch and hands each job its result. An error of the
// whole call (the connection, the eval's end) is every job's error, as it
// would have been each one's own call's.
func (b *scoreBatcher) send(batch []*scoreJob) {
	reqs := make([]*sdk.ScoreRequest, len(batch))
	for i, j := range batch {
		reqs[i] = j.req
	}
	results, err := b.bs.ScoreBatch(b.ctx, reqs)
	if err == nil && len(results) != len(batch) {
		err = fmt.Errorf("scorer answered %d of %d requests of a batch", len(results), len(batch))
	}
	for i, j := range batch {
		switch {
		case err != nil:
			j.err = err
		case results[i].Err != nil:
			j.err = results[i].Err
		default:
			j.resp = results[i].Response
			if j.resp != nil && j.resp.Details == nil && len(results[i].DetailsJSON) > 0 {
				j.details = results[i].DetailsJSON
				if !isJSONObject(j.details) {
					j.err = fmt.Errorf("scorer's details are not a JSON object: %.100q", j.details)
				}
			}
		}
		close(j.done)
	}
	b.mu.Lock()
	b.inFlight--
	b.dispatchLocked(false)
	b.mu.Unlock()
}

// isJSONObject reports whether b is one valid JSON object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}
