package tokenizer

import (
	"hash/maphash"
	"sync/atomic"
)

// heapMergeMin is the piece length above which the merge uses a heap: the
// scan merge is quadratic in the piece's length, and a pre-token can be
// arbitrarily long (a run of 100 000 spaces, a Chinese paragraph without
// punctuation). Below it the scan is faster.
const heapMergeMin = 128

// The merges work on token ids rather than byte strings: every part of a
// piece is a token at every step (single bytes all are, and a merge yields a
// token), so "is bytes(a)+bytes(b) a token, of which rank?" is a lookup of
// the pair (a, b) in pairTable, which hashes one integer instead of a string
// and needs no pointers for the garbage collector to scan.

// mergeScan is tiktoken's byte-pair merge: repeatedly join the adjacent pair
// whose joined bytes have the lowest rank, the leftmost on ties, until no
// joined pair is a token.
func (e *Encoding) mergeScan(dst []int, piece string) []int {
	type part struct{ id, rank int } // rank of joining this part with the next
	var buf [heapMergeMin]part
	parts := buf[:0]
	if len(piece) > len(buf) {
		parts = make([]part, 0, len(piece))
	}
	for i := 0; i < len(piece); i++ {
		parts = append(parts, part{e.byteID[piece[i]], noRank})
	}
	for i := 0; i+1 < len(parts); i++ {
		parts[i].rank = e.pairs.get(parts[i].id, parts[i+1].id)
	}
	for len(parts) > 1 {
		best, at := noRank, -1
		for i, p := range parts[:len(parts)-1] {
			if p.rank < best {
				best, at = p.rank, i
			}
		}
		if at < 0 {
			break
		}
		parts[at].id = best
		parts = append(parts[:at+1], parts[at+2:]...)
		parts[at].rank = noRank
		if at+1 < len(parts) {
			parts[at].rank = e.pairs.get(best, parts[at+1].id)
		}
		if at > 0 {
			parts[at-1].rank = e.pairs.get(parts[at-1].id, best)
		}
	}
	for _, p := range parts {
		dst = append(dst, p.id)
	}
	return dst
}

// mergeHeap gives the same result as mergeScan in O(n log n): parts form a
// linked list, candidate pairs sit in a min-heap ordered by (rank, position),
// and entries made stale by a neighbour's merge are skipped when popped.
func (e *Encoding) mergeHeap(dst []int, piece string) []int {
	n := len(piece)
	// Node i starts at byte i; next[i] is the following node, n after the
	// last; prev[i] is -1 for the first. Merged-away nodes are dead.
	next := make([]int, n)
	prev := make([]int, n)
	dead := make([]bool, n)
	id := make([]int, n)
	rank := make([]int, n)
	for i := range n {
		next[i], prev[i], id[i] = i+1, i-1, e.byteID[piece[i]]
	}
	pairRank := func(i int) int {
		if j := next[i]; j < n {
			return e.pairs.get(id[i], id[j])
		}
		return noRank
	}
	h := make(pairHeap, 0, n)
	for i := range n {
		rank[i] = pairRank(i)
		if rank[i] != noRank {
			h = append(h, pair{rank[i], i})
		}
	}
	h.init()
	for len(h) > 0 {
		p := h.pop()
		if dead[p.start] || rank[p.start] != p.rank {
			continue // stale: the pair changed since it was pushed
		}
		i, j := p.start, next[p.start]
		id[i] = p.rank
		dead[j] = true
		next[i] = next[j]
		if next[i] < n {
			prev[next[i]] = i
		}
		rank[i] = pairRank(i)
		if rank[i] != noRank {
			h.push(pair{rank[i], i})
		}
		if k := prev[i]; k >= 0 {
			rank[k] = pairRank(k)
			if rank[k] != noRank {
				h.push(pair{rank[k], k})
			}
		}
	}
	for i := 0; i < n; i = next[i] {
		dst = append(dst, id[i])
	}
	return dst
}

// pairTable maps a pair of token ids to the rank of their joined bytes. It is
// open addressing with linear probing over one uint64 per slot: the key
// (a<<idBits | b) + 1 in the high bits, so that 0 marks an empty slot, and
// the rank in the low idBits.
type pairTable struct {
	slots []uint64
	shift uint
}

// idBits holds every id of the known encodings (o200k's highest is 200018).
const idBits = 18

func newPairTable(n int) pairTable {
	size, shift := 1, uint(64)
	for size < n+n/2 {
		size <<= 1
		shift--
	}
	return pairTable{slots: make([]uint64, size), shift: shift}
}

func (t *pairTable) index(k uint64) uint64 {
	if t.shift == 64 {
		return 0
	}
	return (k * 0x9E3779B97F4A7C15) >> t.shift // Fibonacci hashing
}

func (t *pairTable) put(a, b, rank int) {
	k := uint64(a)<<idBits | uint64(b) + 1
	mask := uint64(len(t.slots) - 1)
	for i := t.index(k); ; i = (i + 1) & mask {
		if t.slots[i] == 0 || t.slots[i]>>idBits == k {
			t.slots[i] = k<<idBits | uint64(rank)
			return
		}
	}
}

// get returns the rank of a's and b's bytes joined, or noRank.
func (t *pairTable) get(a, b int) int {
	k := uint64(a)<<idBits | uint64(b) + 1
	mask := uint64(len(t.slots) - 1)
	for i := t.index(k); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return noRank
		}
		if s>>idBits == k {
			return int(s & (1<<idBits - 1))
		}
	}
}

type pair struct{ rank, start int }

// pairHeap is a binary min-heap of pairs by (rank, start): the lowest rank,
// leftmost on ties. Hand-rolled rather than container/heap, whose
// interface{} arguments allocate on every push.
type pairHeap []pair

func (h pairHeap) less(a, b int) bool {
	return h[a].rank < h[b].rank || h[a].rank == h[b].rank && h[a].start < h[b].start
}

func (h *pairHeap) init() {
	for i := len(*h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *pairHeap) push(p pair) {
	*h = append(*h, p)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *pairHeap) pop() pair {
	q := *h
	top := q[0]
	q[0] = q[len(q)-1]
	*h = q[:len(q)-1]
	h.down(0)
	return top
}

func (h pairHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// pieceCache is a direct-mapped cache of piece → ids. Words repeat, and a
// merge costs dozens of map lookups where a hit costs one hash. Slots are
// replaced without locking: a reader sees either the old or the new entry,
// each immutable, and checks the key.
type pieceCache struct {
	seed  maphash.Seed
	slots [1 << 14]atomic.Pointer[cacheEntry]
}

func newPieceCache() *pieceCache { return &pieceCache{seed: maphash.MakeSeed()} }

type cacheEntry struct {
	piece string
	ids   []int
}

// cacheMaxPiece bounds what is cached: long pieces rarely repeat.
const cacheMaxPiece = 48

func (c *pieceCache) slot(piece string) *atomic.Pointer[cacheEntry] {
	return &c.slots[maphash.String(c.seed, piece)&(uint64(len(c.slots))-1)]
}

func (c *pieceCache) get(piece string) ([]int, bool) {
	if len(piece) > cacheMaxPiece {
		return nil, false
	}
	if ent := c.slot(piece).Load(); ent != nil && ent.piece == piece {
		return ent.ids, true
	}
	return nil, false
}

func (c *pieceCache) put(piece string, ids []int) {
	if len(piece) > cacheMaxPiece {
		return
	}
	// Clone both: piece points into the caller's text, ids into its slice.
	c.slot(piece).Store(&cacheEntry{piece: string([]byte(piece)), ids: append([]int(nil), ids...)})
}
