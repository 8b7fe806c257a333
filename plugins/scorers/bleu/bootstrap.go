package bleu

import (
	"math"

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
	maxVal := 1.0
	for _, row := range rows {
		for _, v := range row {
			if v < 0 || v >= 1<<16 || v != math.Trunc(v) {
				return 0, 0, false
			}
			maxVal = max(maxVal, v)
		}
	}
	flush := int((1<<16 - 1) / maxVal) // draws a lane can sum without overflow
	derived := derivedTotals(rows)
	if derived {
		words = 2
		flush = min(flush, 1<<10-1)
	}
	var packed []uint64
	var pairs [][2]uint64
	if derived {
		pairs = make([][2]uint64, n)
		for i, row := range rows {
			pairs[i][0], pairs[i][1] = packDerived(row)
		}
	} else {
		packed = make([]uint64, n*words)
		for i, row := range rows {
			for j, v := range row {
				packed[i*words+j/4] |= uint64(v) << (16 * (j % 4))
			}
		}
	}
	if resamples <= 0 {
		resamples = stats.DefaultResamples
	}
	l := lanes{packed: packed, pairs: pairs, n: n, width: width, words: words, flush: flush, derived: derived}
	vals := make([]float64, resamples)
	// stats.Resample shares the resamples among the processors with the
	// serial result to the last bit.
	stats.Resample(n, seed, vals, func(draw *stats.Resampler, out []float64) {
		l.resample(draw, out, stat)
	})
	lo, hi = stats.Interval(vals)
	return lo, hi, true
}

// derivedTotals reports whether every row is max order 4's statistics
// [sys_len, ref_len, correct_1..4, total_1..4] with total_k the number of
// k-grams of the hypothesis, max(sys_len-k+1, 0), as sacrebleu counts them.
// The totals of a resample then follow from its sum of sys_len and its
// numbers of hypotheses of 0, 1 and 2 tokens, which pack with the other six
// columns in two words (packDerived) instead of three: a draw reads a
// third less, and a row never straddles two cache lines.
func derivedTotals(rows [][]float64) bool {
	for _, row := range rows {
		if len(row) != 10 {
			return false
		}
		for k := range 4 {
			if row[6+k] != max(row[0]-float64(k), 0) {
				return false
			}
		}
	}
	return true
}

// packDerived packs a row that derivedTotals accepts: sys_len, ref_len and
// correct_1..4 in 16-bit lanes, then whether sys_len is 0, 1 or 2 in three
// 10-bit fields (so a chunk sums at most 1,023 draws).
func packDerived(row []float64) (w0, w1 uint64) {
	w0 = uint64(row[0]) | uint64(row[1])<<16 | uint64(row[2])<<32 | uint64(row[3])<<48
	w1 = uint64(row[4]) | uint64(row[5])<<16
	if sys := row[0]; sys < 3 {
		w1 |= 1 << (32 + 10*int(sys))
	}
	return w0, w1
}

// lanes is the packed statistics of bootstrapSums.
type lanes struct {
	packed          []uint64
	pairs           [][2]uint64 // derived: the rows, packDerived's two words each
	n, width, words int
	flush           int  // draws a lane can sum without overflow
	derived         bool // pairs, not packed
}

// resample sets vals to the statistic of the next len(vals) resamples of
// draw. The draws are taken a chunk at a time (at most flush, so a chunk's
// lanes never overflow) and summed while the chunk's indices are still in
// the first-level cache, rather than a resample's worth written out and read
// back.
func (l lanes) resample(draw *stats.Resampler, vals []float64, stat func(sum []float64) float64) {
	packed, pairs, words := l.packed, l.pairs, l.words
	sum := make([]float64, l.width)
	total := make([]uint64, l.width)
	acc := make([]uint64, words)
	var short [3]uint64 // derived: draws of 0, 1 and 2 tokens
	chunk := min(l.flush, resampleChunk)
	idx := make([]int32, min(chunk, l.n))
	for r := range vals {
		clear(total)
		for start := 0; start < l.n; start += chunk {
			part := idx[:min(chunk, l.n-start)]
			draw.Fill(part)
			if l.derived { // max order 4, the default: two words a row
				var a0, a1 uint64
				for _, k := range part {
					w := &pairs[k] // one bounds check a draw
					a0 += w[0]
					a1 += w[1]
				}
				for j := range 4 {
					total[j] += a0 >> (16 * j) & 0xffff
				}
				total[4] += a1 & 0xffff
				total[5] += a1 >> 16 & 0xffff
				for j := range 3 {
					short[j] += a1 >> (32 + 10*j) & 0x3ff
				}
				continue
			}
			if words == 3 { // max order 4, not derivedTotals: unrolled
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
		if l.derived {
			// total_k = sum over draws of max(sys_len-k+1, 0): the sum of
			// sys_len less k-1 a draw, plus what that takes off the draws
			// of fewer than k-1 tokens.
			sys, n := int64(total[0]), int64(l.n)
			e0, e1, e2 := int64(short[0]), int64(short[1]), int64(short[2])
			clear(short[:])
			total[6] = uint64(sys)
			total[7] = uint64(sys - n + e0)
			total[8] = uint64(sys - 2*n + 2*e0 + e1)
			total[9] = uint64(sys - 3*n + 3*e0 + 2*e1 + e2)
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
