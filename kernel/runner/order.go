package runner

import (
	"hash/maphash"
	"slices"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/sdk"
)

// Samples whose contexts begin alike form a group, and a server's prefix
// cache (vLLM's automatic prefix caching, SGLang's radix cache, llama.cpp's
// slots, hosted APIs' prompt caching) should compute the shared part once:
// several questions about one document, or a haystack cut to many lengths.
// So the runner
//
//   - sends a group's samples one after another, looking ahead in the
//     task's stream for them, and otherwise keeps the task's order;
//   - sends a group's first sample alone and the rest only once it is
//     answered (a warm-up): requests sent together would each compute the
//     shared prefix, as none of them is cached yet. Other groups fill the
//     concurrency meanwhile.
//
// The look-ahead is bounded in samples and in context bytes, so a
// long-context task does not pile documents up in memory. An eval with
// order = "task" sends samples strictly in the task's order instead.
const (
	lookaheadSamples = 256
	lookaheadBytes   = 16 << 20
	// prefixBytes of a context decide its group: enough to tell documents
	// apart, little enough to hash for free.
	prefixBytes = 2048
	// maxGroups bounds the groups remembered as warm; past it they are
	// forgotten, and a forgotten group's next sample warms it again.
	maxGroups = 4096
)

// prefixWindow holds the samples read ahead of dispatch.
type prefixWindow struct {
	seed  maphash.Seed
	items []pending
	bytes int
	// groups counts the window's samples by group, so that the common
	// case (the last group has no more samples here, the oldest is ready)
	// costs no scan.
	groups map[uint64]int
	last   uint64 // the group of the sample dispatched last
	begun  bool
	// inOrder: the task's order, no look-ahead, no warm-up.
	inOrder bool
	// warm is true for groups whose first sample has been answered, false
	// while it is in flight.
	warm map[uint64]bool
}

type pending struct {
	smp    *sdk.Sample
	seq    int // position in the task's stream
	key    uint64
	leader bool // the group's first sample: call warmed when it is done
}

func newPrefixWindow(order string) *prefixWindow {
	return &prefixWindow{seed: maphash.MakeSeed(), groups: map[uint64]int{}, warm: map[uint64]bool{},
		inOrder: order == config.OrderTask}
}

// full reports whether the window holds as much as it may; an empty window
// always takes one more sample, however large.
func (w *prefixWindow) full() bool {
	if w.inOrder {
		return len(w.items) > 0
	}
	return len(w.items) >= lookaheadSamples || w.bytes >= lookaheadBytes
}

func (w *prefixWindow) push(smp *sdk.Sample, seq int) {
	if w.inOrder {
		w.items = append(w.items, pending{smp: smp, seq: seq})
		return
	}
	c := smp.Context
	if len(c) > prefixBytes {
		c = c[:prefixBytes]
	}
	key := maphash.String(w.seed, c)
	w.items = append(w.items, pending{smp: smp, seq: seq, key: key})
	w.bytes += len(smp.Context)
	w.groups[key]++
}

type popResult int

const (
	popped  popResult = iota
	empty             // nothing read ahead
	waiting           // everything read ahead waits for its group's first sample
)

// pop takes the oldest sample of the group dispatched last, or else the
// oldest sample, passing over groups whose first sample is in flight.
func (w *prefixWindow) pop() (pending, popResult) {
	if len(w.items) == 0 {
		return pending{}, empty
	}
	if w.inOrder {
		p := w.items[0]
		w.items = w.items[:0]
		return p, popped
	}
	ready := func(p pending) bool {
		warm, known := w.warm[p.key]
		return warm || !known
	}
	i := -1
	if w.begun && w.groups[w.last] > 0 {
		i = slices.IndexFunc(w.items, func(p pending) bool { return p.key == w.last && ready(p) })
	}
	if i < 0 {
		i = slices.IndexFunc(w.items, ready)
	}
	if i < 0 {
		return pending{}, waiting
	}
	p := w.items[i]
	if i == 0 {
		w.items[0] = pending{}
		w.items = w.items[1:] // append reallocates once the front is used up
	} else {
		w.items = slices.Delete(w.items, i, i+1)
	}
	w.bytes -= len(p.smp.Context)
	if w.groups[p.key]--; w.groups[p.key] == 0 {
		delete(w.groups, p.key)
	}
	w.last, w.begun = p.key, true
	if _, known := w.warm[p.key]; !known {
		if len(w.warm) >= maxGroups {
			w.forgetWarm()
		}
		w.warm[p.key] = false
		p.leader = true
	}
	return p, popped
}

// warmed records that the first sample of group key has been answered.
func (w *prefixWindow) warmed(key uint64) { w.warm[key] = true }

func (w *prefixWindow) forgetWarm() {
	for k, warm := range w.warm {
		if warm {
			delete(w.warm, k)
		}
	}
}
