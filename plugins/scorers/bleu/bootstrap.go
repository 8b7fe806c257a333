package bleu

import (
	"math"

	"github.com/hayloft/hayloft/sdk/stats"
)

// bootstrapSums is stats.Bootstrap for a statistic of the column sums of
// rows, and gives the same interval to the last bit: it takes the same draws
// (stats.Resampler) and BLEU's statistics are whole numbers, whose float64
// sums are exact in any order. What it saves is the work per draw: the
// columns are packed two to a uint64, so a draw costs one index and
// (width+1)/2 integer adds instead of width float adds through a closure.
//
// ok is false when the packing cannot hold the sums (a value that is not a
// whole number in [0, 2^32), or a column whose sum over len(rows) draws
// could reach 2^32); the caller then uses stats.Bootstrap.
func bootstrapSums(rows [][]float64, resamples int, seed uint64, stat func(sum []float64) float64) (lo, hi float64, ok bool) {
	n := len(rows)
	if n == 0 {
		return 0, 0, true
	}
	if n > math.MaxInt32 {
		return 0, 0, false
	}
	width := len(rows[0])
	words := (width + 1) / 2
	packed := make([]uint64, n*words)
	colMax := make([]float64, width)
	for i, row := range rows {
		for j, v := range row {
			if v < 0 || v >= 1<<32 || v != math.Trunc(v) {
				return 0, 0, false
			}
			colMax[j] = max(colMax[j], v)
			packed[i*words+j/2] |= uint64(v) << (32 * (j % 2))
		}
	}
	for _, m := range colMax {
		if m*float64(n) >= 1<<32 { // the largest sum a resample can reach
			return 0, 0, false
		}
	}
	if resamples <= 0 {
		resamples = stats.DefaultResamples
	}
	draw := stats.NewResampler(n, seed)
	vals := make([]float64, resamples)
	sum := make([]float64, width)
	acc := make([]uint64, words)
	idx := make([]int32, n)
	for r := range vals {
		draw.Fill(idx)
		if words == 5 { // max order 4, the default: unrolled
			var a0, a1, a2, a3, a4 uint64
			for _, k := range idx {
				w := packed[int(k)*5:]
				w = w[:5:5]
				a0 += w[0]
				a1 += w[1]
				a2 += w[2]
				a3 += w[3]
				a4 += w[4]
			}
			acc[0], acc[1], acc[2], acc[3], acc[4] = a0, a1, a2, a3, a4
		} else {
			clear(acc)
			for _, k := range idx {
				k := int(k) * words
				for j, v := range packed[k : k+words] {
					acc[j] += v
				}
			}
		}
		for j := range sum {
			sum[j] = float64(uint32(acc[j/2] >> (32 * (j % 2))))
		}
		vals[r] = stat(sum)
	}
	lo, hi = stats.Interval(vals)
	return lo, hi, true
}
