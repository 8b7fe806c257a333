package bleu

import (
	"math"
	"runtime"
	"sync"

	"github.com/hayloft/hayloft/sdk/stats"
)

// bootstrapSums is stats.Bootstrap for a statistic of the column sums of
// rows, and gives the same interval to the last bit: it takes the same draws
// (stats.Resampler) and BLEU's statistics are whole numbers, whose float64
// sums are exact in any order. What it saves is the work per draw: the
// columns are packed four to a uint64 as 16-bit lanes, so a draw costs one
// index and (width+3)/4 integer adds instead of width float adds through a
// closure. A lane holds the sum of at most flush draws; then the lanes are
// added into one 64-bit total per column.
//
// ok is false when a value does not fit a lane (not a whole number in
// [0, 2^16): a segment of 65,536 tokens or more); the caller then uses
// stats.Bootstrap.
func bootstrapSums(rows [][]float64, resamples int, seed uint64, stat func(sum []float64) float64) (lo, hi float64, ok bool) {
	n := len(rows)
	if n == 0 {
		return 0, 0, true
	}
	if n > math.MaxInt32 {
		return 0, 0, false
	}
	width := len(rows[0])
	words := (width + 3) / 4
	packed := make([]uint64, n*words)
	maxVal := 1.0
	for i, row := range rows {
		for j, v := range row {
			if v < 0 || v >= 1<<16 || v != math.Trunc(v) {
				return 0, 0, false
			}
			maxVal = max(maxVal, v)
			packed[i*words+j/4] |= uint64(v) << (16 * (j % 4))
		}
	}
	flush := int((1<<16 - 1) / maxVal) // draws a lane can sum without overflow
	if resamples <= 0 {
		resamples = stats.DefaultResamples
	}
	l := lanes{packed: packed, n: n, width: width, words: words, flush: flush}
	vals := make([]float64, resamples)
	// The resamples are shared among the processors, each share starting
	// where the draws before it leave the generator (Advance). That holds
	// unless a share rejected a product and so took an extra step (about
	// once in 2^64/n draws); the shares after it are then drawn again, in
	// order, from where it ended.
	shares := min(runtime.GOMAXPROCS(0), max(1, resamples/64))
	draws := make([]*stats.Resampler, shares)
	var wg sync.WaitGroup
	for p := range shares {
		r0, r1 := p*resamples/shares, (p+1)*resamples/shares
		draws[p] = stats.NewResampler(n, seed)
		if p > 0 && !draws[p].Advance(uint64(r0)*uint64(n)) {
			draws[p] = nil // no Advance here: drawn in order below
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.resample(draws[p], vals[r0:r1], stat)
		}()
	}
	wg.Wait()
	for p := 1; p < shares; p++ {
		prev := draws[p-1]
		r0, r1 := p*resamples/shares, (p+1)*resamples/shares
		if draws[p] != nil && prev.Steps() == uint64(r0-(p-1)*resamples/shares)*uint64(n) {
			continue
		}
		// This share's start was wrong: draw it, and the rest, in order.
		for ; p < shares; p++ {
			r0, r1 = p*resamples/shares, (p+1)*resamples/shares
			l.resample(prev, vals[r0:r1], stat)
		}
	}
	lo, hi = stats.Interval(vals)
	return lo, hi, true
}

// lanes is the packed statistics of bootstrapSums.
type lanes struct {
	packed          []uint64
	n, width, words int
	flush           int // draws a lane can sum without overflow
}

// resample sets vals to the statistic of the next len(vals) resamples of
// draw. The draws are taken a chunk at a time (at most flush, so a chunk's
// lanes never overflow) and summed while the chunk's indices are still in
// the first-level cache, rather than a resample's worth written out and read
// back.
func (l lanes) resample(draw *stats.Resampler, vals []float64, stat func(sum []float64) float64) {
	packed, words := l.packed, l.words
	sum := make([]float64, l.width)
	total := make([]uint64, l.width)
	acc := make([]uint64, words)
	chunk := min(l.flush, resampleChunk)
	idx := make([]int32, min(chunk, l.n))
	for r := range vals {
		clear(total)
		for start := 0; start < l.n; start += chunk {
			part := idx[:min(chunk, l.n-start)]
			draw.Fill(part)
			if words == 3 { // max order 4, the default: unrolled
				var a0, a1, a2 uint64
				for _, k := range part {
					w := packed[int(k)*3:]
					w = w[:3:3]
					a0 += w[0]
					a1 += w[1]
					a2 += w[2]
				}
				acc[0], acc[1], acc[2] = a0, a1, a2
			} else {
				clear(acc)
				for _, k := range part {
					k := int(k) * words
					for j, v := range packed[k : k+words] {
						acc[j] += v
					}
				}
			}
			for j := range total {
				total[j] += acc[j/4] >> (16 * (j % 4)) & 0xffff
			}
		}
		for j, t := range total {
			sum[j] = float64(t)
		}
		vals[r] = stat(sum)
	}
}

// resampleChunk is the most draws resample takes at a time: 4 KiB of
// indices.
const resampleChunk = 1024
