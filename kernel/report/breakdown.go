package report

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"

	"github.com/hayloft/hayloft/kernel/store"
)

// Bucket is the mean of each metric over the samples at one length or depth,
// or, in a row's Grid, at one length and depth together.
// Invalid scores are left out of the means, as in the eval-level metric.
type Bucket struct {
	Length  *int               `json:"length,omitempty"`
	Depth   *float64           `json:"depth,omitempty"`
	N       int                `json:"n"`
	Metrics map[string]float64 `json:"metrics"`
}

type acc struct {
	n     int
	sums  map[string]float64
	valid map[string]int
}

// breakdown groups a row's journaled scores by the length and by the depth
// of their samples: the grid point the task asked for (sdk.Sample.Grid;
// reached values vary a little per sample), or else the measured length and
// depth. Depths are rounded to 0.1 %, so that float noise splits no bucket.
// A bucket's n is its samples (those scored by every scorer, as the runner
// scores them all). Rows whose samples all share one length (or have none)
// get no length breakdown: a single bucket repeats the eval-level metric.
func breakdown(ctx context.Context, st *store.Store, runID string, e store.EvalInfo) (byLength, byDepth []*Bucket, err error) {
	// A row whose samples share one length and one depth gets neither
	// breakdown: a cheap look at the samples spares summing their scores.
	spans, err := st.BucketSpan(ctx, runID, e.Name)
	if err != nil || !spans {
		return nil, nil, err
	}
	sums, err := st.BucketSums(ctx, runID, e.Name)
	if err != nil || len(sums) == 0 {
		return nil, nil, err
	}
	lengths := map[int]*acc{}
	depths := map[float64]*acc{}
	// Samples per bucket and scorer: rounding may merge journaled keys.
	type key struct {
		depth  bool
		k      float64
		scorer string
	}
	samples := map[key]int{}
	for _, b := range sums {
		var a *acc
		k := key{b.Depth, b.Key, b.Scorer}
		if b.Depth {
			k.k = DepthKey(b.Key)
			a = accFor(depths, k.k)
		} else {
			a = accFor(lengths, int(b.Key))
		}
		samples[k] += b.Samples
		a.n = max(a.n, samples[k])
		a.sums[b.Scorer] += b.Sum
		a.valid[b.Scorer] += b.Valid
	}
	byLength = buckets(lengths, func(b *Bucket, k int) { b.Length = &k })
	byDepth = buckets(depths, func(b *Bucket, k float64) { b.Depth = &k })
	return byLength, byDepth, nil
}

// DepthKey is the bucket of a depth (a fraction): rounded to 1e-5, the
// 3 decimals of a percent the NIAH spec rounds sigmoid depths to, so that
// float noise does not split a depth and distinct asked depths stay apart
// (rounded to 0.001, six of a 150-depth sigmoid grid's merged).
func DepthKey(d float64) float64 { return math.Round(d*1e5) / 1e5 }

func bucket(a *acc) *Bucket {
	b := &Bucket{N: a.n, Metrics: map[string]float64{}}
	for name, sum := range a.sums {
		if a.valid[name] > 0 {
			b.Metrics[name] = sum / float64(a.valid[name])
		}
	}
	return b
}
func accFor[K comparable](m map[K]*acc, k K) *acc {
	if m[k] == nil {
		m[k] = &acc{sums: map[string]float64{}, valid: map[string]int{}}
	}
	return m[k]
}

// buckets lists the accumulators in key order; a single bucket would only
// repeat the eval-level metric, so it gives none.
func buckets[K cmp.Ordered](m map[K]*acc, key func(*Bucket, K)) []*Bucket {
	if len(m) < 2 {
		return nil
	}
	var out []*Bucket
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b := bucket(m[k])
		key(b, k)
		out = append(out, b)
	}
	return out
}

// cell is a grid cell's key: a length and a rounded depth.
type cell struct {
	length int
	depth  float64
}

// grid groups a row's journaled scores by length and depth together, as
// breakdown does by each alone: the cells a length × depth heatmap draws,
// in length then depth order. A row with fewer than two cells gets none.
func grid(ctx context.Context, st *store.Store, runID string, e store.EvalInfo) ([]*Bucket, error) {
	sums, err := st.GridSums(ctx, runID, e.Name)
	if err != nil || len(sums) == 0 {
		return nil, err
	}
	cells := map[cell]*acc{}
	// Samples per cell and scorer: rounding may merge journaled depths.
	type key struct {
		c      cell
		scorer string
	}
	samples := map[key]int{}
	for _, g := range sums {
		c := cell{g.Length, DepthKey(g.Depth)}
		a := accFor(cells, c)
		k := key{c, g.Scorer}
		samples[k] += g.Samples
		a.n = max(a.n, samples[k])
		a.sums[g.Scorer] += g.Sum
		a.valid[g.Scorer] += g.Valid
	}
	if len(cells) < 2 {
		return nil, nil
	}
	keys := slices.SortedFunc(maps.Keys(cells), func(a, b cell) int {
		return cmp.Or(cmp.Compare(a.length, b.length), cmp.Compare(a.depth, b.depth))
	})
	out := make([]*Bucket, 0, len(keys))
	for _, c := range keys {
		b := bucket(cells[c])
		b.Length, b.Depth = &c.length, &c.depth
		out = append(out, b)
	}
	return out, nil
}
