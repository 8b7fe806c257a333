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
	draw := stats.NewResampler(n, seed)
	vals := make([]float64, resamples)
	sum := make([]float64, width)
	total := make([]uint64, width)
	acc := make([]uint64, words)
	idx := make([]int32, n)
	for r := range vals {
		draw.Fill(idx)
		clear(total)
		for start := 0; start < n; start += flush {
			part := idx[start:min(start+flush, n)]
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
	lo, hi = stats.Interval(vals)
	return lo, hi, true
}
