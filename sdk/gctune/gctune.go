// Package gctune keeps the garbage collector's headroom in proportion in
// processes that hold long contexts.
//
// Go's default (GOGC=100) lets the heap grow to twice what the last
// collection found live before collecting again. A hayloft process with 64
// requests of 128K tokens in flight holds some 32 MB of prompt text, so the
// default let it reach twice that, and the same in each process on the
// prompt's way (kernel, model plugin). Prompt text is strings, which the
// collector does not scan, so collecting more often costs little there.
// Small heaps, as in a run of short samples where the collector's cost per
// byte is highest, keep the default.
//
// The rule: the headroom is the live heap while that is at most
// MinHeadroom, then MinHeadroom until the live heap is twice that, then half
// the live heap (GOGC 50). It is re-applied after every collection.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// MinHeadroom is the headroom every heap may have, whatever its size.
const MinHeadroom = 16 << 20

// minPercent is the lowest GOGC the tuner sets.
const minPercent = 50

// Percent is the GOGC the rule gives for a live heap of live bytes.
func Percent(live uint64) int {
	if live <= MinHeadroom {
		return 100
	}
	return max(minPercent, int(100*MinHeadroom/live))
}

var start sync.Once

// Start tunes GOGC after every collection from now on, unless the GOGC
// environment variable sets it: a user's choice wins. It is for a
// process's main, not for a library.
func Start() {
	if os.Getenv("GOGC") != "" {
		return
	}
	start.Do(func() { arm(&tuner{percent: 100, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}) })
}

type tuner struct {
	percent int
	sample  []metrics.Sample
	// tuned, when set (tests), hears each GOGC the tuner sets.
	tuned chan<- int
	// stop ends the re-arming (tests).
	stop atomic.Bool
}

// sentinel is garbage from the moment arm returns; its cleanup runs after
// the collection that finds it so, which is the tuner's hook into every
// collection. It holds a pointer so that it is never a tiny allocation,
// which could share a block with live data and not be collected.
type sentinel struct{ _ *tuner }

func arm(t *tuner) {
	runtime.AddCleanup(&sentinel{}, func(t *tuner) {
		if t.stop.Load() {
			return
		}
		t.tune()
		arm(t)
	}, t)
}

func (t *tuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if p := Percent(t.sample[0].Value.Uint64()); p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
		if t.tuned != nil {
			t.tuned <- p
		}
	}
}
