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

// goalFloor is the least heap goal (live heap plus headroom) the tuner
// allows, in bytes; 0, the default, sets none. A process whose own work
// allocates for every sample, and whose live heap is small, may set one:
// hayloft's kernel in a run allocates some 10 KB per sample over a live
// heap of 10 MB (the journal's feed queue, the run's state), so the rule
// above collected it every 10 MB, 26 times in a 20,000-sample run, each
// collection marking the whole live heap: some 20 µs of CPU per sample.
// A floor costs nothing where the live heap is large (the NIAH row's
// kernel, whose goal is above it anyway), and at most the floor where it
// is small.
var goalFloor atomic.Uint64

// SetGoalFloor lets the heap reach floor bytes before it is collected,
// however small its live part (see goalFloor). It takes effect at the next
// collection; 0 removes the floor.
func SetGoalFloor(floor uint64) { goalFloor.Store(floor) }

// WithFloor is the GOGC percent p, raised where needed so that a live heap
// of live bytes is not collected before it reaches floor bytes.
func WithFloor(p int, live, floor uint64) int {
	if live == 0 || floor <= live {
		return p
	}
	need := (floor - live) * 100 / live
	if need <= uint64(p) {
		return p
	}
	// The runtime's least heap goal is 4 MB × GOGC/100: capped so, a
	// nearly empty heap's goal is the floor, not a multiple of it.
	return int(max(uint64(p), min(need, floor*100/runtimeMinHeap)))
}

// runtimeMinHeap is the runtime's least heap goal at GOGC=100.
const runtimeMinHeap = 4 << 20

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
	live := t.sample[0].Value.Uint64()
	p := WithFloor(Percent(live, t.sample[1].Value.Uint64()), live, goalFloor.Load())
	if p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
		if t.tuned != nil {
			t.tuned <- p
		}
	}
}
