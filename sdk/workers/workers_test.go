package workers

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPool(t *testing.T) {
	for _, tc := range []struct {
		name    string
		max     int
		jobs    int
		blocked int // jobs held running at once before the rest go
	}{
		{"bounded", 4, 100, 4},
		{"one worker", 1, 20, 1},
		{"unbounded", 0, 100, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(tc.max)
			var ran, running, peak atomic.Int64
			release := make(chan struct{})
			var held sync.WaitGroup
			held.Add(tc.blocked)
			for i := range tc.jobs {
				p.Go(func() {
					n := running.Add(1)
					for {
						old := peak.Load()
						if n <= old || peak.CompareAndSwap(old, n) {
							break
						}
					}
					if i < tc.blocked {
						held.Done()
						<-release
					}
					running.Add(-1)
					ran.Add(1)
				})
				if i == tc.blocked-1 {
					held.Wait() // the first jobs all run at once
					close(release)
				}
			}
			p.Wait()
			if got := ran.Load(); got != int64(tc.jobs) {
				t.Errorf("ran %d jobs, want %d", got, tc.jobs)
			}
			if tc.max > 0 && peak.Load() > int64(tc.max) {
				t.Errorf("%d jobs ran at once, bound %d", peak.Load(), tc.max)
			}
			if p.n > max(tc.max, tc.blocked+1) && tc.max > 0 {
				t.Errorf("started %d workers", p.n)
			}
		})
	}
}

// A worker is reused: sequential jobs do not start a goroutine each.
func TestPoolReusesWorkers(t *testing.T) {
	p := New(0)
	for range 1000 {
		done := make(chan struct{})
		p.Go(func() { close(done) })
		<-done
		time.Sleep(time.Microsecond) // let the worker get back to waiting
	}
	p.Wait()
	if p.n > 10 {
		t.Errorf("1000 sequential jobs started %d workers", p.n)
	}
}
