// Package gctune keeps the garbage collector's headroom in proportion in
// processes that hold long contexts.
//
// Go's default (GOGC=100) lets the heap grow to twice what the last
// collection found live before collecting again. A hayloft process with 64
// requests of 128K tokens in flight holds some 32 MB of prompt text, so the
// default let it reach twice that, and the same in each process on the
// prompt's way (kernel, model plugin). Prompt text is strings, which the
// collector does not scan: what a collection costs is mostly the scannable
// part of the heap (objects with pointers), so that part alone sets how
// much headroom keeps the collector cheap.
//
// The rule: the headroom is the scannable heap plus a quarter of the rest,
// but at least MinHeadroom and at most the live heap (GOGC 100, the
// default). A heap of pointers thus keeps the default, and so does any heap
// of MinHeadroom/2 to MinHeadroom; 40 MB of prompts in flight get
// MinHeadroom. A smaller heap may grow to MinHeadroom: the default
// collected a plugin's 2-4 MB heap every 2-4 MB allocated, a hundred
// collections in the 20,000-sample zero-latency row of bench/throughput
// (about twenty so), some 10 % of the row's CPU per request. Marking then
// costs at most one scanned byte per byte allocated. It is re-applied
// after every collection.
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

// Percent is the GOGC the rule gives for a live heap of live bytes, scan of
// them scannable.
func Percent(live, scan uint64) int {
	scan = min(scan, live)
	headroom := max(MinHeadroom, scan+(live-scan)/4)
	if headroom >= live {
		// A heap of less than half MinHeadroom may grow to MinHeadroom
		// before it is collected, rather than to twice its size: the
		// runtime's own floor (a 4 MB goal) collected a plugin's 2-4 MB
		// heap every 2-4 MB allocated. The floor grows with GOGC (4 MB ×
		// GOGC/100), hence the cap, with which it is MinHeadroom.
		if live < MinHeadroom/2 {
			if live == 0 {
				return maxSmallPercent
			}
			return min(maxSmallPercent, int(100*(MinHeadroom-live)/live))
		}
		return 100
	}
	return max(1, int(100*headroom/live))
}

// maxSmallPercent caps the GOGC of a small heap: with it the runtime's
// least heap goal is 4 MB × 4 = MinHeadroom.
const maxSmallPercent = 100 * MinHeadroom / (4 << 20)

var start sync.Once

// Start tunes GOGC after every collection from now on, unless the GOGC
// environment variable sets it: a user's choice wins. It is for a
// process's main, not for a library.
func Start() {
	if os.Getenv("GOGC") != "" {
		return
	}
	start.Do(func() { arm(newTuner()) })
}

func newTuner() *tuner {
	return &tuner{percent: 100, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/heap:bytes"}}}
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
		// Armed first: whoever hears of this tuning (a test) may then
		// count on the next collection to tune again.
		arm(t)
		t.tune()
	}, t)
}

func (t *tuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 || t.sample[1].Value.Kind() != metrics.KindUint64 {
		return
	}
	if p := Percent(t.sample[0].Value.Uint64(), t.sample[1].Value.Uint64()); p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
		if t.tuned != nil {
			t.tuned <- p
		}
	}
}
