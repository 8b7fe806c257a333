// Package stats holds the aggregation helpers scorers and the kernel share:
// the mean of sample values and a seeded percentile bootstrap, so every
// eval-level number comes with its sample count, invalid count and a 95%
// confidence interval that is the same on every run with the same seed.
package stats

import (
	"context"
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/hayloft/hayloft/sdk"
)

// DefaultResamples is the bootstrap resample count used when a caller passes 0.
const DefaultResamples = 1000

// Mean returns the arithmetic mean of values, or 0 for no values: an eval
// with nothing valid to average must still encode as JSON, which NaN cannot.
func Mean(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	// Summing in float64 left to right matches numpy/statistics closely
	// enough for means of a few million values in [0, 100].
	var s float64
	for _, v := range values {
		s += v
	}
	return s / float64(len(values))
}

// Bootstrap returns the 2.5th and 97.5th percentiles of stat over resamples
// bootstrap draws of n indices (with replacement) from 0..n-1. The draws come
// from a PCG generator seeded with seed, so the interval is reproducible.
// idx is reused between calls: stat must not keep it. resamples <= 0 means
// DefaultResamples; n <= 0 gives (0, 0).
func Bootstrap(n int, resamples int, seed uint64, stat func(idx []int) float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 0
	}
	if resamples <= 0 {
		resamples = DefaultResamples
	}
	rng := rand.New(rand.NewPCG(seed, bootstrapStream))
	idx := make([]int, n)
	vals := make([]float64, resamples)
	for r := range vals {
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		vals[r] = stat(idx)
	}
	return Interval(vals)
}

// Interval sorts the resampled statistics vals in place and returns their
// 2.5th and 97.5th percentiles: the last step of Bootstrap, for callers that
// draw with a Resampler themselves.
func Interval(vals []float64) (lo, hi float64) {
	slices.Sort(vals)
	return Percentile(vals, 2.5), Percentile(vals, 97.5)
}

// Resampler yields Bootstrap's index draws: resample r is draws r*n to
// r*n+n-1. It lets a statistic that only sums per-item values skip the call
// per resample, and still give Bootstrap's interval to the last bit.
//
// The draws are exactly rand.New(rand.NewPCG(seed, c)).IntN(n), with c the
// fixed constant below (a test holds them to it). They are computed here,
// the generator's state in registers, because a bootstrap of 1,000 resamples
// of 10,000 items is ten million draws, and through rand.Rand each costs an
// interface call and a round trip of the state through memory.
type Resampler struct {
	hi, lo uint64 // the PCG state, as rand.PCG keeps it
	n      uint64
	steps  uint64     // generator steps taken by Fill
	compat *rand.Rand // 32-bit platforms: math/rand/v2 draws differently there
}

// Steps is the number of generator steps the draws so far took: one per
// draw, plus one per rejected product (about one in 2^64/n draws).
func (r *Resampler) Steps() uint64 { return r.steps }

// Advance moves the generator k steps ahead, where k draws that reject
// nothing would leave it, so that resamples can be drawn in parallel: a
// share that starts at resample r0 is Advance(r0*n), and its draws are
// exactly Bootstrap's if the shares before it took one step per draw
// (Steps). It returns false, and does nothing, on 32-bit platforms, whose
// draws come from math/rand/v2 itself.
func (r *Resampler) Advance(k uint64) bool {
	if r.compat != nil {
		return false
	}
	// state·mul^k + inc·(mul^(k-1) + … + 1), by squaring.
	m, c := u128{0, 1}, u128{} // the steps taken so far: state -> m·state + c
	pm, pc := pcgMul, pcgInc   // 2^i steps
	for ; k > 0; k >>= 1 {
		if k&1 != 0 {
			m, c = m.mul(pm), c.mul(pm).add(pc)
		}
		pm, pc = pm.mul(pm), pc.mul(pm).add(pc)
	}
	x := u128{r.hi, r.lo}.jump(m, c)
	r.hi, r.lo = x.hi, x.lo
	return true
}

// bootstrapStream is the second PCG word: a fixed odd constant so that seed
// alone picks the stream; any constant works, it only has to never change.
const bootstrapStream = 0x9e3779b97f4a7c15

// NewResampler starts the draws of indices 0..n-1 for seed. The indices
// are int32, so 0 < n <= 2^31.
func NewResampler(n int, seed uint64) *Resampler {
	if n <= 0 || n > math.MaxInt32+1 {
		panic("stats: NewResampler wants 0 < n <= 2^31")
	}
	r := &Resampler{hi: seed, lo: bootstrapStream, n: uint64(n)}
	if strconv.IntSize == 32 {
		r.compat = rand.New(rand.NewPCG(seed, bootstrapStream))
	}
	return r
}

// Fill sets idx to the next len(idx) draws.
func (r *Resampler) Fill(idx []int32) {
	if r.compat != nil {
		for i := range idx {
			idx[i] = int32(r.compat.IntN(int(r.n)))
		}
		return
	}
	x, n := u128{r.hi, r.lo}, r.n
	i := 0
	if n&(n-1) != 0 && len(idx) >= 8 {
		// Four draws at a time from four interleaved LCG chains (state k+4
		// is A·state k + C), so the multiplies of one draw do not wait for
		// the previous draw's. A product that might be rejected (lo < n,
		// once in some 2^64/n draws) ends the interleaving: the rest is
		// drawn one by one from the state before its group, exactly as
		// math/rand/v2 would.
		s0 := x.step()
		s1 := s0.step()
		s2 := s1.step()
		s3 := s2.step()
		start := i
		for ; len(idx)-i >= 4; i += 4 {
			h0, l0 := bits.Mul64(s0.out(), n)
			h1, l1 := bits.Mul64(s1.out(), n)
			h2, l2 := bits.Mul64(s2.out(), n)
			h3, l3 := bits.Mul64(s3.out(), n)
			if l0 < n || l1 < n || l2 < n || l3 < n {
				break
			}
			out := idx[i : i+4 : i+4]
			out[0], out[1], out[2], out[3] = int32(h0), int32(h1), int32(h2), int32(h3)
			x = s3
			s0, s1, s2, s3 = s0.jump4(), s1.jump4(), s2.jump4(), s3.jump4()
		}
		r.steps += uint64(i - start)
	}
	// One by one: math/rand/v2's uint64n (Lemire's multiply, rejecting the
	// few products that would bias the result, or a mask for a power of two).
	next := func() uint64 {
		x = x.step()
		r.steps++
		return x.out()
	}
	if n&(n-1) == 0 {
		for ; i < len(idx); i++ {
			idx[i] = int32(next() & (n - 1))
		}
	} else {
		for ; i < len(idx); i++ {
			h, l := bits.Mul64(next(), n)
			if l < n {
				thresh := -n % n
				for l < thresh {
					h, l = bits.Mul64(next(), n)
				}
			}
			idx[i] = int32(h)
		}
	}
	r.hi, r.lo = x.hi, x.lo
}

// addValues is sum plus vals[k] for each of the next count draws k, added
// one after another in the order drawn (a float sum's bits depend on its
// order), as Fill would draw them. Drawing and adding in one loop hides
// each add's latency behind the next draws' multiplies.
func (r *Resampler) addValues(vals []float64, count int, sum float64) float64 {
	i := 0
	if x, n := (u128{r.hi, r.lo}), r.n; r.compat == nil && n&(n-1) != 0 && count >= 8 {
		s0 := x.step()
		s1 := s0.step()
		s2 := s1.step()
		s3 := s2.step()
		for ; count-i >= 4; i += 4 {
			h0, l0 := bits.Mul64(s0.out(), n)
			h1, l1 := bits.Mul64(s1.out(), n)
			h2, l2 := bits.Mul64(s2.out(), n)
			h3, l3 := bits.Mul64(s3.out(), n)
			if l0 < n || l1 < n || l2 < n || l3 < n {
				break // drawn one by one below, from the state before this group
			}
			sum += vals[h0]
			sum += vals[h1]
			sum += vals[h2]
			sum += vals[h3]
			x = s3 // the state before the next group
			s0, s1, s2, s3 = s0.jump4(), s1.jump4(), s2.jump4(), s3.jump4()
		}
		r.hi, r.lo = x.hi, x.lo
		r.steps += uint64(i)
	}
	var buf [64]int32
	for i < count {
		part := buf[:min(len(buf), count-i)]
		r.Fill(part)
		for _, k := range part {
			sum += vals[k]
		}
		i += len(part)
	}
	return sum
}

// u128 is a PCG state: math/rand/v2's PCG is a 128-bit LCG with DXSM
// output, reproduced here with its constants.
type u128 struct{ hi, lo uint64 }

var (
	pcgMul = u128{2549297995355413924, 4865540595714422341}
	pcgInc = u128{6364136223846793005, 1442695040888963407}
)

func (a u128) mul(b u128) u128 {
	h, l := bits.Mul64(a.lo, b.lo)
	return u128{h + a.hi*b.lo + a.lo*b.hi, l}
}

func (a u128) add(b u128) u128 {
	l, c := bits.Add64(a.lo, b.lo, 0)
	h, _ := bits.Add64(a.hi, b.hi, c)
	return u128{h, l}
}

// step is the LCG: state·mul + inc.
func (a u128) step() u128 { return a.mul(pcgMul).add(pcgInc) }

// jump is state·m + c: several steps at once (Advance).
func (a u128) jump(m, c u128) u128 { return a.mul(m).add(c) }

// out is the DXSM output of a state.
func (a u128) out() uint64 {
	const cheapMul = 0xda942042e4dd58b5
	h := a.hi
	h ^= h >> 32
	h *= cheapMul
	h ^= h >> 48
	return h * (a.lo | 1)
}

// jump4 is four LCG steps at once, state·mul^4 + inc·(mul^3 + mul^2 + mul
// + 1), with those constants written out (TestJump4 holds them to the
// steps) so the draw loop keeps no register for them.
func (a u128) jump4() u128 {
	const (
		mHi, mLo = 0xf4dd417327db7a9b, 0xd194dfbe42d45771
		cHi, cLo = 0x93d2c4665cea0ea8, 0xca268d515f068aa4
	)
	h, l := bits.Mul64(a.lo, mLo)
	l, carry := bits.Add64(l, cLo, 0)
	return u128{h + a.hi*mLo + a.lo*mHi + cHi + carry, l}
}

// Percentile returns the p-th percentile (0..100) of sorted values with
// linear interpolation between closest ranks (numpy's default method), the
// usual definition of the percentile bootstrap interval. Empty input gives 0.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := p / 100 * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	if i < 0 {
		return sorted[0]
	}
	frac := pos - float64(i)
	return sorted[i] + frac*(sorted[i+1]-sorted[i])
}

// AggregateMean is the aggregate of a scorer without its own Aggregator: the
// mean of the valid values with a seeded 95% bootstrap interval over them.
// N counts every score given (nil entries count as invalid), Invalid those
// the scorer could not interpret; they are left out of the mean rather than
// scored 0.
func AggregateMean(scores []*sdk.ScoreResponse, seed uint64) *sdk.AggregateResponse {
	valid := make([]float64, 0, len(scores))
	invalid := 0
	for _, s := range scores {
		if s == nil || s.Invalid {
			invalid++
			continue
		}
		valid = append(valid, s.Value)
	}
	lo, hi := bootstrapMean(valid, seed)
	return &sdk.AggregateResponse{
		Value:   Mean(valid),
		N:       len(scores),
		Invalid: invalid,
		CILow:   lo,
		CIHigh:  hi,
	}
}

// bootstrapMean is Bootstrap's interval of the mean of vals, to the last
// bit: the same draws (a Resampler's, without Bootstrap's call per draw)
// summed in the same order. Every `hayloft run` computes it for each
// scorer of each row at its end, on the run's critical path: 20,000
// samples are twenty million draws, so the resamples are shared among the
// processors (Resample).
func bootstrapMean(vals []float64, seed uint64) (lo, hi float64) {
	n := len(vals)
	if n == 0 || n > math.MaxInt32+1 {
		return Bootstrap(n, DefaultResamples, seed, func(idx []int) float64 {
			var sum float64
			for _, i := range idx {
				sum += vals[i]
			}
			return sum / float64(len(idx))
		})
	}
	means := make([]float64, DefaultResamples)
	Resample(n, seed, means, func(draw *Resampler, out []float64) {
		for k := range out {
			// The sum runs left to right over the resample, as
			// Bootstrap's does.
			out[k] = draw.addValues(vals, n, 0) / float64(n)
		}
	})
	return Interval(means)
}

// Resample computes len(vals) bootstrap resamples of n items drawn for
// seed, as Bootstrap's draws: resample(draw, out) must set each of out to
// the statistic of the next resample, taking exactly n draws from draw for
// each. The resamples are shared among the processors, each share starting
// where the draws before it leave the generator (Resampler.Advance); the
// result is the serial one to the last bit. A share can start wrong only
// when a share before it rejected a product and so took an extra step
// (about once in 2^64/n draws): it is then drawn again, with the shares
// after it, in order from where the one before ended.
func Resample(n int, seed uint64, vals []float64, resample func(draw *Resampler, out []float64)) {
	resamples := len(vals)
	if resamples == 0 {
		return
	}
	// Shares of fewer than 64 resamples, or of few draws, are not worth
	// a goroutine.
	shares := min(runtime.GOMAXPROCS(0), max(1, resamples/64), max(1, resamples*n/(1<<18)))
	bound := func(p int) int { return p * resamples / shares }
	draws := make([]*Resampler, shares)
	var wg sync.WaitGroup
	for p := range shares {
		draws[p] = NewResampler(n, seed)
		if p > 0 && !draws[p].Advance(uint64(bound(p))*uint64(n)) {
			draws[p] = nil // no Advance here: drawn in order below
			continue
		}
		if p == shares-1 {
			resample(draws[p], vals[bound(p):bound(p+1)]) // this goroutine takes the last
			continue
		}
		wg.Go(func() { resample(draws[p], vals[bound(p):bound(p+1)]) })
	}
	wg.Wait()
	for p := 1; p < shares; p++ {
		prev := draws[p-1]
		if draws[p] != nil && prev.Steps() == uint64(bound(p)-bound(p-1))*uint64(n) {
			continue
		}
		// This share's start was wrong: draw it, and the rest, in order.
		for ; p < shares; p++ {
			resample(prev, vals[bound(p):bound(p+1)])
		}
	}
}

// DefaultSeed seeds the bootstrap interval of every aggregate the kernel
// computes, so `hayloft run` and `hayloft score --aggregate` agree on the
// same scores, and two runs agree with each other.
const DefaultSeed uint64 = 0

// Aggregate is a scorer's eval-level metric: its own corpus-level
// aggregation when it has one (corpus BLEU), else AggregateMean. A remote
// scorer always has an Aggregate method and answers sdk.ErrUnsupported when
// the component behind it has none, which also falls back to the mean.
func Aggregate(ctx context.Context, sc sdk.Scorer, scores []*sdk.ScoreResponse, seed uint64) (*sdk.AggregateResponse, error) {
	if a, ok := sc.(sdk.Aggregator); ok {
		resp, err := a.Aggregate(ctx, &sdk.AggregateRequest{Scores: scores})
		if err == nil {
			return resp, nil
		}
		if !errors.Is(err, sdk.ErrUnsupported) {
			return nil, err
		}
	}
	return AggregateMean(scores, seed), nil
}
