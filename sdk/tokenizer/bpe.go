package tokenizer

import (
	"container/heap"
	"hash/maphash"
	"sync/atomic"
)

// heapMergeMin is the piece length above which the merge uses a heap: the
// scan merge is quadratic in the piece's length, and a pre-token can be
// arbitrarily long (a run of 100 000 spaces, a Chinese paragraph without
// punctuation). Below it the scan is faster.
const heapMergeMin = 128

// mergeScan is tiktoken's byte-pair merge: repeatedly join the adjacent pair
// whose joined bytes have the lowest rank, the leftmost on ties, until no
// joined pair is a token.
func (e *Encoding) mergeScan(dst []int, piece string) []int {
	type part struct{ start, rank int }
	var buf [heapMergeMin + 1]part
	parts := buf[:0]
	if len(piece)+1 > len(buf) {
		parts = make([]part, 0, len(piece)+1)
	}
	for i := 0; i <= len(piece); i++ {
		parts = append(parts, part{i, noRank})
	}
	rankOf := func(i int) int { // rank of parts i and i+1 joined
		if i+2 >= len(parts) {
			return noRank
		}
		if r, ok := e.ranks[piece[parts[i].start:parts[i+2].start]]; ok {
			return r
		}
		return noRank
	}
	for i := 0; i+2 < len(parts); i++ {
		parts[i].rank = rankOf(i)
	}
	for len(parts) > 2 {
		best, at := noRank, -1
		for i, p := range parts[:len(parts)-1] {
			if p.rank < best {
				best, at = p.rank, i
			}
		}
		if at < 0 {
			break
		}
		parts = append(parts[:at+1], parts[at+2:]...)
		parts[at].rank = rankOf(at)
		if at > 0 {
			parts[at-1].rank = rankOf(at - 1)
		}
	}
	for i := 0; i+1 < len(parts); i++ {
		dst = append(dst, e.ranks[piece[parts[i].start:parts[i+1].start]])
	}
	return dst
}

// mergeHeap gives the same result as mergeScan in O(n log n): parts form a
// linked list, candidate pairs sit in a min-heap ordered by (rank, start),
// and entries made stale by a neighbour's merge are skipped when popped.
func (e *Encoding) mergeHeap(dst []int, piece string) []int {
	n := len(piece)
	// Node i starts at byte i; next[i] is the start of the following node,
	// n for the last; prev[i] is -1 for the first. dead[i] marks merged-away
	// nodes.
	next := make([]int, n)
	prev := make([]int, n)
	dead := make([]bool, n)
	rank := make([]int, n)
	for i := range n {
		next[i], prev[i] = i+1, i-1
	}
	pairRank := func(i int) int {
		j := next[i]
		if j >= n {
			return noRank
		}
		if r, ok := e.ranks[piece[i:next[j]]]; ok {
			return r
		}
		return noRank
	}
	// next of the last node is n; next[j] above reads next of a node < n.
	h := make(pairHeap, 0, n)
	for i := range n {
		rank[i] = pairRank(i)
		if rank[i] != noRank {
			h = append(h, pair{rank[i], i})
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		p := heap.Pop(&h).(pair)
		if dead[p.start] || rank[p.start] != p.rank {
			continue
		}
		i, j := p.start, next[p.start]
		dead[j] = true
		next[i] = next[j]
		if next[i] < n {
			prev[next[i]] = i
		}
		rank[i] = pairRank(i)
		if rank[i] != noRank {
			heap.Push(&h, pair{rank[i], i})
		}
		if k := prev[i]; k >= 0 {
			rank[k] = pairRank(k)
			if rank[k] != noRank {
				heap.Push(&h, pair{rank[k], k})
			}
		}
	}
	for i := 0; i < n; i = next[i] {
		dst = append(dst, e.ranks[piece[i:next[i]]])
	}
	return dst
}

type pair struct{ rank, start int }

type pairHeap []pair

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].start < h[b].start
}
func (h pairHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pair)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// pieceCache is a direct-mapped cache of piece → ids. Words repeat, and a
// merge costs dozens of map lookups where a hit costs one hash. Slots are
// replaced without locking: a reader sees either the old or the new entry,
// each immutable, and checks the key.
type pieceCache struct {
	seed  maphash.Seed
	slots [1 << 14]atomic.Pointer[cacheEntry]
}

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
