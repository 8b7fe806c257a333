package bleu

import "math/bits"

// idTable interns uint64 keys as dense uint32 ids (0, 1, 2, … in order of
// first sight). It is an open-addressing hash table whose slots are marked
// with a generation, so reset is O(1) and a pooled table is reused without
// clearing: segment after segment, that is most of the cost a Go map would
// add to n-gram counting. A slot holds its key, id and mark together, so a
// probe reads one cache line, not one per field.
type idTable struct{ marked[idSlot, *idSlot] }

type idSlot struct {
	key uint64
	val uint32
	gen uint32
}

func (t *idTable) len() int { return t.n }

func (s *idSlot) mark() (uint64, *uint32) { return s.key, &s.gen }

// get returns the id of key, if interned since the last reset.
func (t *idTable) get(key uint64) (uint32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.gen != t.gen {
			return 0, false
		}
		if s.key == key {
			return s.val, true
		}
	}
}

// intern returns the id of key, assigning the next id if it is new.
func (t *idTable) intern(key uint64) uint32 {
	if 2*(t.n+1) > len(t.slots) {
		t.grow(64)
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.gen != t.gen {
			*s = idSlot{key: key, val: uint32(t.n), gen: t.gen}
			t.n++
			return s.val
		}
		if s.key == key {
			return s.val
		}
	}
}

// gramTable counts the n-grams of a segment's references and matches its
// hypothesis against them, for max orders up to 4 and up to 65,534 distinct
// tokens per segment: an n-gram's key is its token ids plus one, packed as
// 16-bit lanes, which is exact (a k-gram's top 4-k lanes are zero, so
// orders never collide) and needs no table per order. Slots are marked with
// a generation like idTable's.
type gramTable struct{ marked[gramSlot, *gramSlot] }

// A gramSlot is one n-gram; packedStats probes the slots itself.
type gramSlot struct {
	key uint64
	gen uint32
	ref uint32 // the reference cur counts in
	cur int32  // count in reference ref
	max int32  // highest count in any one reference
	hyp int32  // count in the hypothesis so far
}

func (s *gramSlot) mark() (uint64, *uint32) { return s.key, &s.gen }

// marked is the part of idTable and gramTable that is the same: slots
// marked with a generation, so reset is O(1) and a pooled table is reused
// without clearing. P is the slot type's pointer, which gives a slot's key
// and mark to grow.
type marked[S any, P interface {
	*S
	mark() (key uint64, gen *uint32)
}] struct {
	slots []S
	gen   uint32
	n     int
	bits  uint
}

func (t *marked[S, P]) reset() {
	t.gen++
	t.n = 0
	if t.gen == 0 { // wrapped: old marks could look current
		clear(t.slots)
		t.gen = 1
	}
}

// fibonacci is the multiplier of Fibonacci hashing, which spreads the
// packed ids well: a key's first slot is the top bits of key·fibonacci.
const fibonacci = 0x9e3779b97f4a7c15

func (t *marked[S, P]) slot(key uint64) uint64 {
	return (key * fibonacci) >> (64 - t.bits)
}

// reserve makes room for entries more keys (and at least minSize slots),
// so that that many can be added without a check per key.
func (t *marked[S, P]) reserve(entries, minSize int) {
	for 2*(t.n+entries+1) > len(t.slots) || len(t.slots) < minSize {
		t.grow(minSize)
	}
}

// grow doubles the table (at least minSize slots) and reinserts live
// entries.
func (t *marked[S, P]) grow(minSize int) {
	old, oldGen := t.slots, t.gen
	size := max(minSize, 2*len(old))
	t.slots = make([]S, size)
	t.bits = uint(bits.TrailingZeros(uint(size)))
	t.gen = 1
	if t.n == 0 {
		return
	}
	mask := uint64(size - 1)
	for j := range old {
		key, gen := P(&old[j]).mark()
		if *gen != oldGen {
			continue
		}
		*gen = t.gen
		for i := t.slot(key); ; i = (i + 1) & mask {
			if _, g := P(&t.slots[i]).mark(); *g != t.gen {
				t.slots[i] = old[j]
				break
			}
		}
	}
}
