package store

import (
	"context"
	"strconv"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// BucketSpan says "at one position" only where BucketSums has at most one
// key on either axis, and "more" where it has more, on the same samples:
// none measured, one length and depth, several, and grid points that
// override the measured values.
func TestBucketSpanAgreesWithBucketSums(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "a.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	type pos struct {
		tokens int
		depth  float64
		grid   *sdk.GridPoint
	}
	for _, c := range []struct {
		name    string
		samples []pos
		want    bool
	}{
		{"none measured", []pos{{0, -1, nil}, {0, -1, nil}}, false},
		{"one length and depth", []pos{{100, 0.5, nil}, {100, 0.5, nil}, {0, -1, nil}}, false},
		{"two lengths", []pos{{100, -1, nil}, {200, -1, nil}, {0, -1, nil}}, true},
		{"two depths", []pos{{100, 0, nil}, {100, 0.25, nil}}, true},
		{"grid over measured", []pos{{101, 0.31, &sdk.GridPoint{Length: 100, Depth: 0.3}}, {99, 0.29, &sdk.GridPoint{Length: 100, Depth: 0.3}}}, false},
		{"grid apart", []pos{{100, 0.5, &sdk.GridPoint{Length: 100, Depth: 0}}, {100, 0.5, &sdk.GridPoint{Length: 200, Depth: 1}}}, true},
		{"no samples", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := s.PutEval(ctx, run, EvalInfo{Name: c.name, Scorers: []string{"exact"}}); err != nil {
				t.Fatal(err)
			}
			for i, p := range c.samples {
				smp := &sdk.Sample{ID: strconv.Itoa(i), Length: sdk.Length{Tokens: p.tokens, Tokenizer: "t"}, Depth: p.depth, Grid: p.grid}
				if err := s.PutResult(ctx, run, c.name, smp, SampleMeta{Index: i}, []NamedScore{{Scorer: "exact", Score: &sdk.ScoreResponse{Value: 1}}}); err != nil {
					t.Fatal(err)
				}
			}
			spans, err := s.BucketSpan(ctx, run, c.name)
			if err != nil {
				t.Fatal(err)
			}
			if spans != c.want {
				t.Errorf("BucketSpan = %v, want %v", spans, c.want)
			}
			sums, err := s.BucketSums(ctx, run, c.name)
			if err != nil {
				t.Fatal(err)
			}
			keys := map[bool]map[float64]bool{false: {}, true: {}}
			for _, b := range sums {
				keys[b.Depth][b.Key] = true
			}
			if many := len(keys[false]) > 1 || len(keys[true]) > 1; many != spans {
				t.Errorf("BucketSums has %d length and %d depth keys, BucketSpan says more than one position: %v", len(keys[false]), len(keys[true]), spans)
			}
		})
	}
}
