package xlbench_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// scoreRow scores (scenario, subtask, language, target, prediction) items
// and round-trips them through JSON, as the journal and plugins carry them.
func scoreRow(t *testing.T, items [][5]string) []*sdk.ScoreResponse {
	t.Helper()
	s := scorer(t, nil)
	var out []*sdk.ScoreResponse
	for _, it := range items {
		sc := score(t, s, sample(it[0], it[1], it[2], it[3]), it[4])
		raw, _ := json.Marshal(sc)
		var back sdk.ScoreResponse
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		out = append(out, &back)
	}
	return out
}

// A row with no 0–1 subtask (Paper's rating_score alone, an MAE) has no
// mean in details.means, yet the aggregate reports Value 0 with the
// interval [0, 0] as a value: the terminal summary prints "0.000 [0.000,
// 0.000]", --json "value": 0, and compare takes a difference against it.
// The commit's rule is "a value only for a row of one scenario and
// language: the paper's own mean (details.means)"; there is none here.
func TestNoMeanNoValue(t *testing.T) {
	s := scorer(t, nil)
	scores := scoreRow(t, [][5]string{
		{"paper", "rating_score", "en", "7", "6"},
		{"paper", "rating_score", "en", "4", "7"},
	})
	agg, err := s.Aggregate(context.Background(), &sdk.AggregateRequest{Scores: scores})
	if err != nil {
		t.Fatal(err)
	}
	means := agg.Details["means"].(map[string]float64)
	if agg.HasValue() && len(means) == 0 {
		raw, _ := json.Marshal(agg)
		t.Errorf("value %v [%v, %v] for a row with no mean (means %v): %.80s…", agg.Value, agg.CILow, agg.CIHigh, means, raw)
	}
}

// A row of two (scenario, language) pairs, one of which has no 0–1 cell
// (Paper-EN's rating_score, an MAE; or every score invalid), gets the
// other pair's mean as the whole row's one value, with no reason: the
// check counts means, not the row's (scenario, language) pairs. The
// commit's claim: "a value only for a row of exactly one (scenario,
// language); otherwise it declines with a reason".
func TestTwoScenarioLanguagesOneMean(t *testing.T) {
	s := scorer(t, nil)
	scores := scoreRow(t, [][5]string{
		{"fiction", "content_location", "zh", "3", "3"},
		{"fiction", "content_location", "zh", "3", "4"},
		{"paper", "rating_score", "en", "7", "6"},
	})
	agg, err := s.Aggregate(context.Background(), &sdk.AggregateRequest{Scores: scores})
	if err != nil {
		t.Fatal(err)
	}
	if agg.HasValue() {
		t.Errorf("a row of fiction/zh and paper/en has the one value %v (means %v, subtasks %v); want none, with a reason", agg.Value, agg.Details["means"], keys(agg.Details["subtasks"]))
	}
}

func keys(v any) []string {
	var out []string
	for k := range v.(map[string]any) {
		out = append(out, k)
	}
	return out
}
