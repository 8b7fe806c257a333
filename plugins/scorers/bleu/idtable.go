package bleu

import "math/bits"

// idTable interns uint64 keys as dense uint32 ids (0, 1, 2, … in order of
// first sight). It is an open-addressing hash table whose slots are marked
// with a generation, so reset is O(1) and a pooled table is reused without
// clearing: segment after segment, that is most of the cost a Go map would
// add to n-gram counting.
type idTable struct {
	keys []uint64
	vals []uint32
	gens []uint32
	gen  uint32
	n    int
	bits uint
}

func (t *idTable) reset() {
	t.gen++
	t.n = 0
	if t.gen == 0 { // wrapped: old marks could look current
		clear(t.gens)
		t.gen = 1
	}
}

func (t *idTable) len() int { return t.n }

func (t *idTable) slot(key uint64) uint64 {
	// Fibonacci hashing spreads the packed (prefix, token) ids well.
	return (key * 0x9e3779b97f4a7c15) >> (64 - t.bits)
}

// get returns the id of key, if interned since the last reset.
func (t *idTable) get(key uint64) (uint32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.keys) - 1)
	for i := t.slot(key); ; i = (i + 1) & mask {
		if t.gens[i] != t.gen {
			return 0, false
		}
		if t.keys[i] == key {
			return t.vals[i], true
		}
	}
}

// intern returns the id of key, assigning the next id if it is new.
func (t *idTable) intern(key uint64) uint32 {
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	mask := uint64(len(t.keys) - 1)
	for i := t.slot(key); ; i = (i + 1) & mask {
		if t.gens[i] != t.gen {
			t.keys[i], t.vals[i], t.gens[i] = key, uint32(t.n), t.gen
			t.n++
			return t.vals[i]
		}
		if t.keys[i] == key {
			return t.vals[i]
		}
	}
}

// grow doubles the table (at least 64 slots) and reinserts live entries.
func (t *idTable) grow() {
	oldKeys, oldVals, oldGens, oldGen := t.keys, t.vals, t.gens, t.gen
	size := max(64, 2*len(oldKeys))
	t.keys, t.vals, t.gens = make([]uint64, size), make([]uint32, size), make([]uint32, size)
	t.bits = uint(bits.TrailingZeros(uint(size)))
	t.gen = 1
	mask := uint64(size - 1)
	for j, g := range oldGens {
		if g != oldGen || t.n == 0 {
			continue
		}
		for i := t.slot(oldKeys[j]); ; i = (i + 1) & mask {
			if t.gens[i] != t.gen {
				t.keys[i], t.vals[i], t.gens[i] = oldKeys[j], oldVals[j], t.gen
				break
			}
		}
	}
}
