package sendorder

import (
	"hash/maphash"
	"slices"
)

// groupsWindow is hayloft's earlier order, kept as the baseline that
// bench/prefix measures against: samples whose first prefixBytes of prompt
// agree form a group; a group's first sample goes alone and the rest once
// it is answered, and the group dispatched last is preferred. It knows
// nothing of the server's cache or of prefixes nested in each other.
type groupsWindow[T any] struct {
	seed   maphash.Seed
	items  []groupItem[T]
	bytes  int
	groups map[uint64]int // samples in the window by group
	last   uint64
	begun  bool
	warm   map[uint64]bool // false while the group's first sample is in flight
	keys   map[int]uint64  // leaders in flight: item id -> group
	nextID int
}

type groupItem[T any] struct {
	it    Item[T]
	key   uint64
	bytes int
}

const (
	prefixBytes = 2048
	maxGroups   = 4096
)

func newGroups[T any]() *groupsWindow[T] {
	return &groupsWindow[T]{seed: maphash.MakeSeed(), groups: map[uint64]int{}, warm: map[uint64]bool{}, keys: map[int]uint64{}}
}

func (w *groupsWindow[T]) Full() bool {
	return len(w.items) >= LookaheadSamples || w.bytes >= LookaheadBytes
}

func (w *groupsWindow[T]) Push(seq int, prompt string, v T) {
	c := prompt
	if len(c) > prefixBytes {
		c = c[:prefixBytes]
	}
	key := maphash.String(w.seed, c)
	w.nextID++
	w.items = append(w.items, groupItem[T]{it: Item[T]{Seq: seq, Value: v, Slot: -1, id: w.nextID}, key: key, bytes: len(prompt)})
	w.bytes += len(prompt)
	w.groups[key]++
}

func (w *groupsWindow[T]) Pop() (Item[T], Status) {
	if len(w.items) == 0 {
		return Item[T]{}, Empty
	}
	ready := func(p groupItem[T]) bool {
		warm, known := w.warm[p.key]
		return warm || !known
	}
	i := -1
	if w.begun && w.groups[w.last] > 0 {
		i = slices.IndexFunc(w.items, func(p groupItem[T]) bool { return p.key == w.last && ready(p) })
	}
	if i < 0 {
		i = slices.IndexFunc(w.items, ready)
	}
	if i < 0 {
		return Item[T]{}, Waiting
	}
	p := w.items[i]
	w.items = slices.Delete(w.items, i, i+1)
	w.bytes -= p.bytes
	if w.groups[p.key]--; w.groups[p.key] == 0 {
		delete(w.groups, p.key)
	}
	w.last, w.begun = p.key, true
	if _, known := w.warm[p.key]; !known {
		if len(w.warm) >= maxGroups {
			for k, warm := range w.warm {
				if warm {
					delete(w.warm, k)
				}
			}
		}
		w.warm[p.key] = false
		w.keys[p.it.id] = p.key
	}
	return p.it, Popped
}

// Prefilled: the earlier order waited for the answer, not the first token.
func (w *groupsWindow[T]) Prefilled(Item[T]) {}

func (w *groupsWindow[T]) Done(it Item[T]) {
	if key, ok := w.keys[it.id]; ok {
		delete(w.keys, it.id)
		w.warm[key] = true
	}
}
