package runner

import "sort"

// Bucket is the mean of each metric over the samples at one length or depth.
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

// breakdown groups a row's sample scores by length and by depth. Rows whose
// samples all share one length (or have none) get no length breakdown: a
// single bucket repeats the eval-level metric.
func breakdown(rw *row) (byLength, byDepth []*Bucket) {
	lengths := map[int]*acc{}
	depths := map[float64]*acc{}
	get := func(m map[int]*acc, k int) *acc {
		if m[k] == nil {
			m[k] = &acc{sums: map[string]float64{}, valid: map[string]int{}}
		}
		return m[k]
	}
	getD := func(m map[float64]*acc, k float64) *acc {
		if m[k] == nil {
			m[k] = &acc{sums: map[string]float64{}, valid: map[string]int{}}
		}
		return m[k]
	}
	seen := map[int]bool{}
	for scorer, list := range rw.scores {
		for _, is := range list {
			p, ok := rw.positions[is.seq]
			if !ok {
				continue
			}
			var as []*acc
			if p.length > 0 {
				as = append(as, get(lengths, p.length))
			}
			if p.depth >= 0 {
				as = append(as, getD(depths, p.depth))
			}
			for _, a := range as {
				if !seen[is.seq] {
					a.n++
				}
				if !is.sc.Invalid {
					a.sums[scorer] += is.sc.Value
					a.valid[scorer]++
				}
			}
			seen[is.seq] = true
		}
	}
	if len(lengths) > 1 {
		keys := make([]int, 0, len(lengths))
		for k := range lengths {
			keys = append(keys, k)
		}
		sort.Ints(keys)
		for _, k := range keys {
			b := bucket(lengths[k])
			b.Length = &k
			byLength = append(byLength, b)
		}
	}
	if len(depths) > 1 {
		keys := make([]float64, 0, len(depths))
		for k := range depths {
			keys = append(keys, k)
		}
		sort.Float64s(keys)
		for _, k := range keys {
			b := bucket(depths[k])
			b.Depth = &k
			byDepth = append(byDepth, b)
		}
	}
	return byLength, byDepth
}

func bucket(a *acc) *Bucket {
	b := &Bucket{N: a.n, Metrics: map[string]float64{}}
	for name, sum := range a.sums {
		b.Metrics[name] = sum / float64(a.valid[name])
	}
	return b
}
