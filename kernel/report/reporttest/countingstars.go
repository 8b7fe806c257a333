package reporttest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/plugins/scorers/countingstars"
	"github.com/hayloft/hayloft/sdk"
)

// The Counting-Stars fixture's grid: nominal lengths across, counting
// indices down.
var (
	CSLengths = []int{4000, 8000, 16000}
	CSCounts  = []int{1, 5, 9, 13} // one count per index, as the task places them
)

// CSKnown is the mean credit the fixture's answers earn at counting index i
// (0-based) and nominal length l: 1, 0.5 or 0, whose colours are fixed
// (WantColour).
func CSKnown(i, l int) float64 {
	switch {
	case i == 0, i == 2 && l != 16000:
		return 1
	case i == 1:
		return 0.5
	}
	return 0
}

// CountingStars journals a run of one Counting-Stars acquisition eval: two
// samples per length, answered so that each index × length cell has its
// CSKnown credit, scored by the real scorer, with the aggregate the runner
// would journal (FinishEval). It returns the run's ID.
func CountingStars(ctx context.Context, st *store.Store) (string, error) {
	sc, err := countingstars.New(ctx, sdk.MustOptions(map[string]any{"mode": "acquisition", "language": "en"}))
	if err != nil {
		return "", err
	}
	ev := Eval{Base: "stars", Model: "model.test.a", Scorers: []string{countingstars.Name}}
	var scores []*sdk.ScoreResponse
	for _, l := range CSLengths {
		for k := range 2 {
			// The first answer finds every count with credit ≥ 0.5, the
			// second only those with credit 1.
			var found []int
			for i, c := range CSCounts {
				if v := CSKnown(i, l); v == 1 || (k == 0 && v == 0.5) {
					found = append(found, c)
				}
			}
			answer, _ := json.Marshal(map[string][]int{countingstars.KeyEN: found})
			meta := map[string]any{"references": map[string]any{"counts": slices.Clone(CSCounts)}, "nominal_length": l, "mode": "acquisition"}
			smp := &sdk.Sample{ID: fmt.Sprintf("stars-%d-%d", l, k), Question: "How many stars did the little penguin count?",
				Length: sdk.Length{Tokens: l}, Depth: -1, Metadata: meta}
			resp, err := sc.Score(ctx, &sdk.ScoreRequest{Sample: smp, Prediction: string(answer)})
			if err != nil {
				return "", err
			}
			scores = append(scores, resp)
			ev.Samples = append(ev.Samples, Sample{ID: smp.ID, Length: l, Depth: -1, Context: "the stars of the haystack",
				Question: smp.Question, Metadata: meta, Response: string(answer),
				Scores:  map[string]float64{countingstars.Name: resp.Value},
				Details: map[string]map[string]any{countingstars.Name: resp.Details}})
		}
	}
	agg, err := sc.(sdk.Aggregator).Aggregate(ctx, &sdk.AggregateRequest{Scores: scores})
	if err != nil {
		return "", err
	}
	id, err := Write(ctx, st, Run{ConfigPath: "stars.hcl", ConfigText: `eval "stars" {}`, Evals: []Eval{ev}})
	if err != nil {
		return "", err
	}
	err = st.FinishEval(ctx, id, ev.JournalName(), store.Outcome{Samples: len(ev.Samples)}, map[string]*store.Metric{countingstars.Name: agg})
	return id, err
}
