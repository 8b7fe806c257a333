package jsonstr

import (
	"math"
	"strconv"
)

// AppendFloat appends json.Marshal(f)'s bytes: the shortest
// representation, in exponent form below 1e-6 or from 1e21, with a
// two-digit negative exponent shortened ("1e-07" becomes "1e-7"). ok is
// false for NaN and ±Inf, which JSON cannot hold.
func AppendFloat(b []byte, f float64) ([]byte, bool) {
	// Whole numbers below 2^53 (counts, lengths: most of a score's
	// numbers) print as their integer, which AppendInt writes without the
	// shortest-digits search; -0 keeps its sign the slow way.
	if i := int64(f); float64(i) == f && i > -1<<53 && i < 1<<53 && (i != 0 || !math.Signbit(f)) {
		return strconv.AppendInt(b, i, 10), true
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
