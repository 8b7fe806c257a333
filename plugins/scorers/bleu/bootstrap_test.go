package bleu

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk/stats"
)

// bootstrapSums must give stats.Bootstrap's interval to the last bit, for
// the default width (unrolled) and others (the generic loop).
func TestBootstrapSumsMatchesBootstrap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct {
		name     string
		n, width int
		seed     uint64
	}{
		{"order4", 2000, 10, 0},
		{"order4_seed", 2000, 10, 12345},
		{"order1", 500, 4, 3},
		{"order6", 300, 14, 0},
		{"one_row", 1, 10, 0},
		{"long_segments", 700, 10, 5}, // values near 2^16: a flush every draw or two
		// Real statistics: the totals follow from sys_len (derivedTotals),
		// with hypotheses of 0, 1 and 2 tokens among them.
		{"derived", 3000, 10, 9},
		{"derived_short", 400, 10, 1},
		{"derived_long", 700, 10, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := make([][]float64, tc.n)
			for i := range rows {
				rows[i] = make([]float64, tc.width)
				for j := range rows[i] {
					rows[i][j] = float64(rng.IntN(80))
					if tc.name == "long_segments" {
						rows[i][j] = float64(1<<16 - 1 - rng.IntN(30000))
					}
				}
				if strings.HasPrefix(tc.name, "derived") {
					row := rows[i]
					switch tc.name {
					case "derived_short":
						row[0] = float64(rng.IntN(4))
					case "derived_long":
						row[0] = float64(1<<16 - 1 - rng.IntN(30000))
					}
					for k := range 4 {
						row[6+k] = max(row[0]-float64(k), 0)
						row[2+k] = float64(rng.IntN(int(row[6+k]) + 1))
					}
				}
			}
			if got, want := derivedTotals(rows), strings.HasPrefix(tc.name, "derived"); got != want {
				t.Fatalf("derivedTotals = %v, want %v", got, want)
			}
			// A statistic that is sensitive to every column.
			stat := func(sum []float64) float64 {
				var v float64
				for j, s := range sum {
					v += s * float64(j+1) / 7
				}
				return v
			}
			lo, hi, ok := bootstrapSums(rows, 300, tc.seed, stat)
			if !ok {
				t.Fatal("packed path refused whole numbers")
			}
			sum := make([]float64, tc.width)
			wlo, whi := stats.Bootstrap(tc.n, 300, tc.seed, func(idx []int) float64 {
				clear(sum)
				for _, i := range idx {
					for j, v := range rows[i] {
						sum[j] += v
					}
				}
				return stat(sum)
			})
			if lo != wlo || hi != whi {
				t.Fatalf("got (%v, %v), want (%v, %v)", lo, hi, wlo, whi)
			}
		})
	}
}

// Values the packing cannot hold send the caller to stats.Bootstrap.
func TestBootstrapSumsRefuses(t *testing.T) {
	for name, rows := range map[string][][]float64{
		"fraction": {{1, 2.5}, {3, 4}},
		"negative": {{1, -2}, {3, 4}},
		"huge":     {{1, 1 << 16}, {3, 4}},
	} {
		if _, _, ok := bootstrapSums(rows, 10, 0, func([]float64) float64 { return 0 }); ok {
			t.Errorf("%s: packed path accepted %v", name, rows)
		}
	}
}
