package runner

import (
	"context"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/sendorder"
	"github.com/hayloft/hayloft/kernel/shard"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/workers"
)

// countSamples is how many samples each row of an eval will process, when
// its task can say; exact is false for a shard's share, which is estimated.
func countSamples(ctx context.Context, task sdk.Task, limit int, sh shard.Spec) (n int, exact, ok bool) {
	sc, ok := task.(sdk.SampleCounter)
	if !ok {
		return 0, false, false
	}
	n, err := sc.CountSamples(ctx, &sdk.SamplesRequest{Limit: limit})
	if err != nil {
		return 0, false, false
	}
	if sh.Sharded() {
		// The hash spreads samples evenly: close enough for an ETA, not
		// for a row's "95 of 330".
		return (n + sh.Count - 1 - sh.Index) / sh.Count, false, true
	}
	return n, true, true
}

// liveRows is how many of an eval's rows will run: those that opened.
func liveRows(rows []*row) int {
	live := 0
	for _, rw := range rows {
		if rw.res.Error == "" {
			live++
		}
	}
	return live
}

// phases splits an eval's rows into groups that run one after another. Rows
// whose models share a server but name different models go to different
// phases: a server that holds one model at a time (Ollama, llama-swap)
// would otherwise reload models between every pair of requests. Within a
// phase, every row runs at once over one pass of the task.
func phases(rows []*row) [][]*row {
	var out [][]*row
	for _, rw := range rows {
		placed := false
		for i, ph := range out {
			if !swaps(ph, rw) {
				out[i] = append(ph, rw)
				placed = true
				break
			}
		}
		if !placed {
			out = append(out, []*row{rw})
		}
	}
	return out
}

// swaps reports whether rw's model would make a server of the phase switch
// models.
func swaps(phase []*row, rw *row) bool {
	if rw.model == nil || rw.model.identity.Endpoint == "" {
		return false
	}
	for _, other := range phase {
		if other.model == nil {
			continue
		}
		a, b := other.model.identity, rw.model.identity
		if a.Endpoint == b.Endpoint && a.Model != b.Model {
			return true
		}
	}
	return false
}

// stream makes one pass over the task, sending every sample to every live
// row of the phase, and waits for all of them. Samples go in the task's
// order except where a server's prefix cache gains from another (order.go).
func (r *Runner) stream(ctx context.Context, runID, evalName, order string, task sdk.Task, limit int, rows []*row, scorers []scorerHandle, bar *progress, cost *overhead) error {
	slots := 1
	for _, rw := range rows {
		if rw.model != nil {
			slots += 2 * rw.model.settings.MaxConcurrency
		}
	}
	// Reusable workers, not a goroutine per sample: see package workers.
	// The models' job slots (startJob) and post slots (job.answered) bound
	// how many samples run at once: a worker for each.
	pool := workers.New(slots)
	defer pool.Wait()
	next, stop := iter.Pull2(task.Samples(ctx, &sdk.SamplesRequest{Limit: limit}))
	defer stop()
	win := r.newWindow(ctx, order, rows) // see order.go
	// Workers report here each sample prefilled and answered by every row;
	// the window releases a group's siblings when its leader is prefilled.
	// Only the prefix order listens for the prefill (a streamed first
	// token), and only of a sample others read ahead share a prefix with:
	// for the rest a model need not stream.
	done := newDoneQueue()
	listen := order == config.OrderPrefix
	read, exhausted := 0, false
	// The journal feeds in large batches while samples are read; the last
	// ones are fed as they come (see Runner.lastSamples).
	r.feedFollow(false)
	for {
		for !exhausted && !win.Full() {
			smp, err, ok := next()
			if !ok {
				exhausted = true
				r.lastSamples()
				break
			}
			if err != nil {
				return err
			}
			if read++; limit > 0 && read >= limit {
				exhausted = true
				r.lastSamples()
			}
			if !r.opts.Shard.Has(smp.ID) {
				continue // another shard's; read counts it, so --limit means the same samples in every shard
			}
			prompt := ""
			if order != config.OrderTask {
				// The task's order decides on nothing: no long prompt
				// rendered and joined once more just to be ignored.
				prompt = orderPrompt(smp)
			}
			win.Push(read-1, prompt, smp)
		}
		// Hold a job slot of the first live row before choosing the sample:
		// by the time one frees, the samples in flight may have warmed
		// their groups.
		first := slices.IndexFunc(rows, func(rw *row) bool { return rw.res.Error == "" && rw.ctx.Err() == nil })
		if first < 0 {
			return nil
		}
		if err := rows[first].model.startJob(rows[first].ctx); err != nil {
			continue // the row ended meanwhile
		}
		done.drain(win)
		p, st := win.Pop()
		if st != sendorder.Popped || ctx.Err() != nil {
			rows[first].model.endJob()
			if st == sendorder.Empty && exhausted || ctx.Err() != nil {
				return nil
			}
			if st == sendorder.Empty && !win.Full() {
				// Everything read ahead was in flight (more slots than the
				// look-ahead holds) and some of it is answered now: read on.
				continue
			}
			select { // everything read ahead waits for a sample in flight
			case <-done.ready:
			case <-ctx.Done():
				return nil
			}
			continue
		}
		// A sample counts its jobs down, the dispatch holding one reference
		// until every row has its job; whoever ends last reports it done.
		// Prefills count down alike: each job's first token, or its end.
		d := &dispatched{it: p, done: done}
		d.refs.Store(1)
		d.pre.Store(1)
		for i, rw := range rows[first:] {
			if i > 0 {
				if rw.res.Error != "" || rw.ctx.Err() != nil {
					continue
				}
				// Acquire before spawning: the task stream is throttled to
				// what the models can take, so memory stays bounded.
				if err := rw.model.startJob(rw.ctx); err != nil {
					continue
				}
			}
			cost.start()
			d.refs.Add(1)
			d.pre.Add(1)
			pool.Go(func() {
				j := job{d: d, rw: rw}
				defer j.finish()
				it := d.sample() // not p: what the worker holds after the answer is dropped (job.answered)
				var hook func()
				if listen && it.Leads {
					hook = j.prefilled
				}
				t0 := time.Now()
				wait := r.process(rw.ctx, runID, evalName, rw, scorers, it.Value, it.Seq, rw.model.slot(it.Slot), hook, j.answered)
				cost.done(time.Since(t0) - wait)
				bar.add()
			})
		}
		d.prefilled()
		d.release()
	}
}

// dispatched is a sample sent to the rows of a phase: it counts down their
// jobs (refs) and their prefills (pre), each holding one reference for the
// dispatch until every row has its job, and tells the window (through the
// done queue) when the last of each ends: a job ends for the window once
// its model has answered. One allocation per sample.
type dispatched struct {
	mu        sync.Mutex
	it        sendorder.Item[*sdk.Sample]
	done      *doneQueue
	refs, pre atomic.Int32
}

// sample is the item a job runs: read by each job as it starts, before
// its release.
func (d *dispatched) sample() sendorder.Item[*sdk.Sample] {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.it
}

func (d *dispatched) release() {
	if d.refs.Add(-1) == 0 {
		d.mu.Lock()
		it := d.it
		// Every job has its copy: the sample, and its context, are the
		// window's and theirs alone from now on.
		d.it.Value = nil
		d.mu.Unlock()
		d.done.put(it)
	}
}

func (d *dispatched) prefilled() {
	if d.pre.Add(-1) == 0 {
		d.done.prefill(d.sample())
	}
}

// job is one row's part of a dispatched sample. Its model's job slot
// bounds the samples on their way to the model and at it; once the model
// has answered, the slot goes to the next sample while this one is
// journaled and scored under a slot of the model's post-processing
// (modelHandle.post), so that what follows an answer does not keep the
// server from its next request: with 50 ms answers, journaling and scoring
// took the slot for another 10-30 ms.
type job struct {
	d    *dispatched
	rw   *row
	once atomic.Bool // the prefill is counted
	// Set by the job's own goroutine only.
	released bool // d.release done (at the answer)
	posting  bool // holds a post slot, and no job slot
}

// prefilled counts the job's prefill once: its model's first token, or its
// answer (which implies it), whichever comes first.
func (j *job) prefilled() {
	if !j.once.Swap(true) {
		j.d.prefilled()
	}
}

// answered hands the job slot on once the model has answered, holding a
// post slot instead; if none is free (journaling falls behind), it waits
// for one, and so does the next sample.
func (j *job) answered() {
	if j.posting {
		return
	}
	j.prefilled()
	select {
	case j.rw.model.post <- struct{}{}:
	case <-j.rw.ctx.Done():
		return // the row ends: finish frees the job slot
	}
	j.posting = true
	j.released = true
	j.d.release() // before endJob frees the slot the next choice waits on
	j.rw.model.endJob()
}

// finish ends the job: what answered has not done yet, and the post slot.
func (j *job) finish() {
	j.prefilled() // an answer implies the prefill, reported first
	if !j.released {
		j.d.release()
	}
	if j.posting {
		<-j.rw.model.post
	} else {
		j.rw.model.endJob()
	}
}
