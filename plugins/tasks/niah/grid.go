package niah

import "math"

// linspace is numpy.linspace(start, stop, num) with endpoint=True, computed
// in the same order of float64 operations (i·step + start, last = stop), so
// that rounding it reproduces upstream grids bit for bit.
func linspace(start, stop float64, num int) []float64 {
	if num <= 0 {
		return nil
	}
	out := make([]float64, num)
	if num == 1 {
		out[0] = start
		return out
	}
	step := (stop - start) / float64(num-1)
	for i := range out {
		// The conversion forbids fusing into an FMA, which numpy does not do.
		out[i] = float64(float64(i)*step) + start
	}
	out[num-1] = stop
	return out
}

// roundInts is numpy.round(xs).astype(int): round half to even.
func roundInts(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(math.RoundToEven(x))
	}
	return out
}

// logistic is upstream's sigmoid depth: 0 and 100 stay, anything else is
// round(L / (1 + exp(k·(x − x0))), 3) with L=100, x0=50, k=0.1. The sign makes
// the curve run from ~99 down to ~1, so sigmoid grids are generated in
// descending order between the two endpoints, as upstream's are.
func logistic(x float64) float64 {
	if x == 0 || x == 100 {
		return x
	}
	const l, x0, k = 100, 50, 0.1
	z := -k * (x - x0)
	v := l * (1 / (1 + math.Exp(-z)))
	// numpy.round(v, 3) scales, rounds half to even, and scales back.
	return math.RoundToEven(v*1000) / 1000
}

// linearDepths is round(linspace(lo, hi, n)).
func linearDepths(lo, hi float64, n int) []float64 {
	ints := roundInts(linspace(lo, hi, n))
	out := make([]float64, len(ints))
	for i, d := range ints {
		out[i] = float64(d)
	}
	return out
}

// sigmoidDepths is [logistic(x) for x in linspace(lo, hi, n)].
func sigmoidDepths(lo, hi float64, n int) []float64 {
	xs := linspace(lo, hi, n)
	for i, x := range xs {
		xs[i] = logistic(x)
	}
	return xs
}

// needleDepths spreads n needles from depth in steps of (100 − depth)/n,
// accumulating the step as upstream's multi-needle tester does.
func needleDepths(depth float64, n int) []float64 {
	out := make([]float64, n)
	step := (100 - depth) / float64(n)
	for i := range out {
		out[i] = depth
		depth += step
	}
	return out
}
