// Package workers runs functions on goroutines that outlive them.
//
// A goroutine starts with a small stack and grows it by copying as calls go
// deeper; JSON encoding, gRPC and SQLite go deep. Code that starts a
// goroutine per item at thousands of items a second pays for that growth on
// every item (runtime.copystack showed up at over 10 µs of CPU per sample
// in hayloft's kernel and model plugins). A Pool's goroutines keep their
// grown stacks from one function to the next.
package workers

import "sync"

// Pool runs functions on up to Max goroutines, started as needed. The zero
// value is not usable; create one with New.
type Pool struct {
	jobs chan func() // unbuffered: a send succeeds only when a worker is idle
	wg   sync.WaitGroup
	mu   sync.Mutex
	n    int
	max  int
}

// New returns a pool of at most max goroutines; max <= 0 means no bound
// (the caller bounds the functions in flight some other way).
func New(max int) *Pool {
	return &Pool{jobs: make(chan func()), max: max}
}

// Go runs f on an idle worker, on a new one if none is idle and the bound
// allows, and otherwise waits until a worker is free. Go must not be called
// after Wait.
func (p *Pool) Go(f func()) {
	select {
	case p.jobs <- f:
		return
	default:
	}
	p.mu.Lock()
	start := p.max <= 0 || p.n < p.max
	if start {
		p.n++
		p.wg.Add(1)
	}
	p.mu.Unlock()
	if start {
		go p.work(f)
		return
	}
	p.jobs <- f
}

func (p *Pool) work(f func()) {
	defer p.wg.Done()
	f()
	for f := range p.jobs {
		f()
	}
}

// Wait waits for the functions already started to return, then stops the
// workers.
func (p *Pool) Wait() {
	close(p.jobs)
	p.wg.Wait()
}
