package sendorder

// blockSet is the set of block names the planner has seen, for the
// shared-prefix tree: a scalable Bloom filter, a sequence of filters each
// twice the capacity of the one before, so that it holds any number of
// blocks in bloomBits bits each. A false positive makes a prompt's shared
// run one block longer than it is, with a chance of about 1e-4 per prompt
// and filter; the tree is understated by that little. An exact set of
// 8-byte names (a Go map) took most of the planner's memory on a 35 × 35
// NIAH grid to 128K tokens (177 of 180 MB of heap; this set, 50 in all).
//
// Each filter is blocked: the probes of a name fall in one 512-bit block,
// one cache line, so a lookup costs one memory access per filter.
type blockSet struct {
	filters []*bloom
}

const (
	bloomBits     = 24 // bits per name
	bloomProbes   = 8  // of 9 bits each, from one 64-bit mix and a second
	bloomFirstCap = 1 << 16
)

type bloom struct {
	blocks   [][8]uint64
	cap, len int
}

func newBloom(capacity int) *bloom {
	n := (capacity*bloomBits + 511) / 512
	return &bloom{blocks: make([][8]uint64, n), cap: capacity}
}

// mix spreads a name's bits (splitmix64's finaliser); names are hashes
// already, but the block and the probes must not share bits.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// where is the block of key and its probes' bit positions within it.
func (b *bloom) where(key uint64) (*[8]uint64, [bloomProbes]uint16) {
	blk := &b.blocks[key%uint64(len(b.blocks))]
	var pos [bloomProbes]uint16
	h := mix(key)
	for i := range bloomProbes {
		if i == 7 {
			h = mix(h)
		}
		pos[i] = uint16(h & 511)
		h >>= 9
	}
	return blk, pos
}

func (b *bloom) has(key uint64) bool {
	blk, pos := b.where(key)
	for _, p := range pos {
		if blk[p/64]&(1<<(p%64)) == 0 {
			return false
		}
	}
	return true
}

func (b *bloom) add(key uint64) {
	blk, pos := b.where(key)
	for _, p := range pos {
		blk[p/64] |= 1 << (p % 64)
	}
	b.len++
}

func (s *blockSet) has(key uint64) bool {
	for _, f := range s.filters {
		if f.has(key) {
			return true
		}
	}
	return false
}

func (s *blockSet) add(key uint64) {
	n := len(s.filters)
	if n == 0 || s.filters[n-1].len >= s.filters[n-1].cap {
		s.filters = append(s.filters, newBloom(bloomFirstCap<<n))
	}
	s.filters[len(s.filters)-1].add(key)
}
