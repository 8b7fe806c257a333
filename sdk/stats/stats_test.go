package stats

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

func TestMean(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{1, 2, 3, 4}, 2.5},
		{[]float64{0.1, 0.2}, 0.15000000000000002},
	} {
		if got := Mean(tc.in); got != tc.want {
			t.Errorf("Mean(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	sorted := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	// Values from numpy.percentile(range(1, 11), p).
	for _, tc := range []struct{ p, want float64 }{
		{0, 1}, {100, 10}, {50, 5.5}, {2.5, 1.225}, {97.5, 9.775}, {25, 3.25},
	} {
		if got := Percentile(sorted, tc.p); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil) = %v", got)
	}
}

func meanOf(values []float64) func([]int) float64 {
	return func(idx []int) float64 {
		s := 0.0
		for _, i := range idx {
			s += values[i]
		}
		return s / float64(len(idx))
	}
}

func TestBootstrap(t *testing.T) {
	values := make([]float64, 200)
	for i := range values {
		values[i] = float64(i%7) / 6
	}
	lo1, hi1 := Bootstrap(len(values), 500, 42, meanOf(values))
	lo2, hi2 := Bootstrap(len(values), 500, 42, meanOf(values))
	if lo1 != lo2 || hi1 != hi2 {
		t.Errorf("same seed, different intervals: [%v,%v] vs [%v,%v]", lo1, hi1, lo2, hi2)
	}
	lo3, hi3 := Bootstrap(len(values), 500, 43, meanOf(values))
	if lo1 == lo3 && hi1 == hi3 {
		t.Errorf("seeds 42 and 43 gave the same interval [%v,%v]", lo1, hi1)
	}
	m := Mean(values)
	if !(lo1 < m && m < hi1) {
		t.Errorf("interval [%v,%v] does not contain the mean %v", lo1, hi1, m)
	}
	// The standard error of this mean is about 0.024, so a 95% interval is
	// about ±0.047; allow generous slack but catch a wrong percentile.
	if w := hi1 - lo1; w < 0.05 || w > 0.15 {
		t.Errorf("interval width %v, want about 0.09", w)
	}
	if lo, hi := Bootstrap(5, 100, 1, meanOf([]float64{2, 2, 2, 2, 2})); lo != 2 || hi != 2 {
		t.Errorf("constant data: [%v,%v], want [2,2]", lo, hi)
	}
	if lo, hi := Bootstrap(0, 100, 1, nil); lo != 0 || hi != 0 {
		t.Errorf("no data: [%v,%v]", lo, hi)
	}
	calls := 0
	Bootstrap(3, 0, 1, func([]int) float64 { calls++; return 0 })
	if calls != DefaultResamples {
		t.Errorf("resamples 0 ran %d resamples, want %d", calls, DefaultResamples)
	}
}

func TestAggregateMean(t *testing.T) {
	scores := []*sdk.ScoreResponse{
		{Value: 1}, {Value: 0}, {Value: 1}, {Invalid: true, Value: 99}, nil, {Value: 1},
	}
	agg := AggregateMean(scores, 7)
	if agg.N != 6 || agg.Invalid != 2 {
		t.Errorf("N=%d Invalid=%d, want 6 and 2", agg.N, agg.Invalid)
	}
	if agg.Value != 0.75 {
		t.Errorf("Value = %v, want 0.75 (invalid scores excluded)", agg.Value)
	}
	if !(agg.CILow <= agg.Value && agg.Value <= agg.CIHigh) || agg.CILow < 0 || agg.CIHigh > 1 {
		t.Errorf("CI [%v,%v] around %v", agg.CILow, agg.CIHigh, agg.Value)
	}
	if again := AggregateMean(scores, 7); again.Value != agg.Value || again.CILow != agg.CILow || again.CIHigh != agg.CIHigh {
		t.Errorf("not reproducible: %+v vs %+v", again, agg)
	}
	empty := AggregateMean(nil, 1)
	if empty.N != 0 || empty.Value != 0 || empty.CILow != 0 || empty.CIHigh != 0 {
		t.Errorf("empty aggregate = %+v", empty)
	}
}

// AggregateMean's interval is Bootstrap's of the mean, to the last bit,
// whatever the number of scores.
func TestAggregateMeanIsBootstrap(t *testing.T) {
	for _, n := range []int{1, 2, 5, 97, 1000, 4099} {
		scores := make([]*sdk.ScoreResponse, n)
		var vals []float64
		for i := range scores {
			scores[i] = &sdk.ScoreResponse{Value: float64((i*7919)%101) / 7}
			if i%13 == 5 {
				scores[i].Invalid = true
				continue
			}
			vals = append(vals, scores[i].Value)
		}
		for _, seed := range []uint64{0, 7, math.MaxUint64} {
			got := AggregateMean(scores, seed)
			lo, hi := Bootstrap(len(vals), DefaultResamples, seed, func(idx []int) float64 {
				var s float64
				for _, i := range idx {
					s += vals[i]
				}
				return s / float64(len(idx))
			})
			if got.CILow != lo || got.CIHigh != hi {
				t.Errorf("n=%d seed=%d: interval (%v, %v), Bootstrap's (%v, %v)", n, seed, got.CILow, got.CIHigh, lo, hi)
			}
		}
	}
}

// BenchmarkAggregateMean is the aggregate `hayloft run` computes for a
// scorer over a row of 5,000 samples.
func BenchmarkAggregateMean(b *testing.B) {
	scores := make([]*sdk.ScoreResponse, 5000)
	for i := range scores {
		scores[i] = &sdk.ScoreResponse{Value: float64(i % 2)}
	}
	for b.Loop() {
		AggregateMean(scores, DefaultSeed)
	}
}

// The Resampler must draw exactly what math/rand/v2 draws from the same
// PCG stream, or every bootstrap interval would move.
func TestResamplerMatchesRandIntN(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 64, 1000, 10000, 1 << 20, 1<<31 - 1, 1 << 31} {
		for _, seed := range []uint64{0, 1, 0x5354415253, math.MaxUint64} {
			want := rand.New(rand.NewPCG(seed, bootstrapStream))
			got := NewResampler(n, seed)
			idx := make([]int32, 777)
			for i := 0; i < 5000; i += len(idx) { // several calls: the state carries over
				got.Fill(idx)
				for k, g := range idx {
					if w := want.IntN(n); int(g) != w {
						t.Fatalf("n=%d seed=%d draw %d: got %d, want %d", n, seed, i+k, g, w)
					}
				}
			}
		}
	}
}

// Bootstrap's interval is pinned: a change of draws would show here.
func TestBootstrapPinned(t *testing.T) {
	vals := make([]float64, 997)
	for i := range vals {
		vals[i] = float64((i * 7919) % 101)
	}
	lo, hi := Bootstrap(len(vals), 0, 42, func(idx []int) float64 {
		var s float64
		for _, i := range idx {
			s += vals[i]
		}
		return s / float64(len(idx))
	})
	// An independent computation with math/rand/v2 itself.
	rng := rand.New(rand.NewPCG(42, 0x9e3779b97f4a7c15))
	res := make([]float64, DefaultResamples)
	for r := range res {
		var s float64
		for range vals {
			s += vals[rng.IntN(len(vals))]
		}
		res[r] = s / float64(len(vals))
	}
	wlo, whi := Interval(res)
	if lo != wlo || hi != whi {
		t.Fatalf("Bootstrap = (%v, %v), want (%v, %v)", lo, hi, wlo, whi)
	}
}

// BenchmarkResamplerFill is the draws of one bootstrap of 1,000 resamples of
// 10,000 items.
func BenchmarkResamplerFill(b *testing.B) {
	idx := make([]int32, 10000)
	for b.Loop() {
		r := NewResampler(len(idx), 0)
		for range DefaultResamples {
			r.Fill(idx)
		}
	}
}

// Advance(k) lands where k draws would, so shares of a bootstrap drawn in
// parallel see exactly the serial draws.
func TestResamplerAdvance(t *testing.T) {
	for _, n := range []int{3, 1000, 1 << 10} {
		for _, k := range []int{0, 1, 4, 5, 999, 10000} {
			serial := NewResampler(n, 42)
			skip := make([]int32, k)
			serial.Fill(skip)
			if serial.Steps() != uint64(k) {
				t.Fatalf("n=%d: %d draws took %d steps", n, k, serial.Steps())
			}
			jumped := NewResampler(n, 42)
			if !jumped.Advance(uint64(k)) {
				t.Skip("no Advance on this platform")
			}
			a, b := make([]int32, 333), make([]int32, 333)
			serial.Fill(a)
			jumped.Fill(b)
			if !slices.Equal(a, b) {
				t.Fatalf("n=%d k=%d: draws after Advance differ", n, k)
			}
		}
	}
}

// Resample's shares, however many processors draw them, give every
// resample exactly the serial draws: the statistic here is order-sensitive
// (each draw weighted by its place), so any shifted draw would show.
func TestResampleShares(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	stat := func(idx []int32) float64 {
		var s float64
		for k, i := range idx {
			s += float64(i) * float64(k%7+1)
		}
		return s
	}
	for _, procs := range []int{1, 2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{1, 5, 97, 5000} {
			for _, resamples := range []int{1, 63, 64, 1000, 1001} {
				want := make([]float64, resamples)
				serial := NewResampler(n, 9)
				idx := make([]int32, n)
				for r := range want {
					serial.Fill(idx)
					want[r] = stat(idx)
				}
				got := make([]float64, resamples)
				Resample(n, 9, got, func(draw *Resampler, out []float64) {
					idx := make([]int32, n)
					for r := range out {
						draw.Fill(idx)
						out[r] = stat(idx)
					}
				})
				if !slices.Equal(got, want) {
					t.Fatalf("GOMAXPROCS=%d n=%d resamples=%d: shares differ from the serial draws", procs, n, resamples)
				}
			}
		}
	}
}

// BenchmarkAggregateMean20k is the zero-latency throughput row's aggregate:
// 20,000 samples, one scorer.
func BenchmarkAggregateMean20k(b *testing.B) {
	scores := make([]*sdk.ScoreResponse, 20000)
	for i := range scores {
		scores[i] = &sdk.ScoreResponse{Value: float64(i % 2)}
	}
	for b.Loop() {
		AggregateMean(scores, DefaultSeed)
	}
}

// jump4's constants are four LCG steps.
func TestJump4(t *testing.T) {
	for _, x := range []u128{{0, 0}, {1, 2}, {math.MaxUint64, bootstrapStream}, {0x0123456789abcdef, 0xfedcba9876543210}} {
		want := x.step().step().step().step()
		if got := x.jump4(); got != want {
			t.Errorf("%x.jump4() = %x, want %x", x, got, want)
		}
	}
}

// addValues takes Fill's draws: the same sum (in draw order, to the bit)
// and the generator left where Fill leaves it, for counts that are not a
// multiple of four or too few to interleave, n a power of two or not, over
// several calls.
func TestAddValues(t *testing.T) {
	for _, n := range []int{1, 3, 64, 997, 10000, 1 << 20} {
		vals := make([]float64, n)
		for i := range n {
			vals[i] = float64((i*7919)%101) / 7
		}
		for _, seed := range []uint64{0, 42, math.MaxUint64} {
			fill, draw := NewResampler(n, seed), NewResampler(n, seed)
			var want, got float64
			for _, count := range []int{1, 7, 8, 9, 1023, 4, 2048, 3} {
				idx := make([]int32, count)
				fill.Fill(idx)
				for _, k := range idx {
					want += vals[k]
				}
				got = draw.addValues(vals, count, got)
				if got != want || draw.Steps() != fill.Steps() || draw.hi != fill.hi || draw.lo != fill.lo {
					t.Fatalf("n=%d seed=%d count %d: sum %v, want %v; steps %d, want %d", n, seed, count, got, want, draw.Steps(), fill.Steps())
				}
			}
		}
	}
}
