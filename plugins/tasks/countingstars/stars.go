package countingstars

import (
	_ "embed"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
)

// The star lists are reference data from nick7nlp/Counting-Stars (MIT; the
// licence is in data/LICENSE.Counting-Stars.MIT.txt). Each file is one line,
// a Python dict literal keyed by M.
var (
	//go:embed data/a_stars.txt
	aStarsFile string
	//go:embed data/r_stars.txt
	rStarsFile string
)

// listRE matches one `'M': [n, n, …]` entry of a star-list dict literal.
var listRE = regexp.MustCompile(`'(\d+)'\s*:\s*\[([^\]]*)\]`)

// parseStarLists reads a star-list dict literal into M → counts.
func parseStarLists(name, src string) (map[int][]int, error) {
	out := map[int][]int{}
	for _, m := range listRE.FindAllStringSubmatch(src, -1) {
		key, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("%s: key %q: %w", name, m[1], err)
		}
		var counts []int
		for f := range strings.SplitSeq(m[2], ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			n, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("%s: list %d: %w", name, key, err)
			}
			counts = append(counts, n)
		}
		if len(counts) != key {
			return nil, fmt.Errorf("%s: list %d has %d counts", name, key, len(counts))
		}
		out[key] = counts
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no star lists found", name)
	}
	return out, nil
}

// Counts are the star counts of one dataset: Correct[i] is the count of star
// sentence i; Wrong[i] is the first, mistaken count a reasoning sentence gives
// before correcting itself (always Correct[i] ± 1).
type Counts struct {
	Correct []int
	Wrong   []int
	// Source is "reference" for the upstream lists, "generated" otherwise.
	Source string
	// Seed is the seed generated lists came from; meaningful only when
	// Source is "generated".
	Seed int64
}

// ReferenceCounts returns the upstream lists for m ∈ {32, 64, …, 1024}, and
// false for any other m.
func ReferenceCounts(m int) (Counts, bool) {
	a, err := parseStarLists("a_stars.txt", aStarsFile)
	if err != nil {
		return Counts{}, false
	}
	r, err := parseStarLists("r_stars.txt", rStarsFile)
	if err != nil {
		return Counts{}, false
	}
	ca, okA := a[m]
	cr, okR := r[m]
	if !okA || !okR {
		return Counts{}, false
	}
	return Counts{Correct: ca, Wrong: cr, Source: "reference"}, true
}

// GenerateCounts follows the upstream rule for lists it does not ship: count
// i is 4i + a uniform draw from {1, 2, 3}, so each bucket (4i, 4i+3] holds
// exactly one count and all counts differ; the list is then shuffled, and
// each wrong count is the correct one ± 1. The same seed gives the same
// lists.
func GenerateCounts(m int, seed int64) Counts {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x636f756e74737461)) // "countsta"
	a := make([]int, m)
	for i := range a {
		a[i] = 4*i + 1 + rng.IntN(3)
	}
	rng.Shuffle(m, func(i, j int) { a[i], a[j] = a[j], a[i] })
	r := make([]int, m)
	for i, v := range a {
		if rng.IntN(2) == 0 {
			r[i] = v - 1
		} else {
			r[i] = v + 1
		}
	}
	return Counts{Correct: a, Wrong: r, Source: "generated", Seed: seed}
}

// countsFor picks the reference lists when they exist, else generates.
func countsFor(m int, seed int64) Counts {
	if c, ok := ReferenceCounts(m); ok {
		return c
	}
	return GenerateCounts(m, seed)
}
