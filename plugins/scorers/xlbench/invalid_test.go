package xlbench_test

import (
	"context"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// metrics.md: "Every aggregate comes with its sample count, the invalid
// count". When a scorer call fails with a per-sample error the runner
// journals {Invalid: true, Details: {"error": ...}} (kernel/runner/sample.go),
// with no subtask: XLBench's Aggregate counts it invalid, as any, instead of
// failing the whole row.
func TestRunnerInvalidScoreIsCounted(t *testing.T) {
	s := scorer(t, nil)
	ok := score(t, s, sample("fiction", "content_location", "en", "chapter 3"), "chapter 3")
	bad := &sdk.ScoreResponse{Invalid: true, Details: map[string]any{"error": "scorer timed out"}}
	agg, err := s.Aggregate(context.Background(), &sdk.AggregateRequest{Scores: []*sdk.ScoreResponse{ok, bad}})
	if err != nil {
		t.Fatalf("Aggregate: %v (want the score counted as invalid)", err)
	}
	if agg.N != 2 || agg.Invalid != 1 || agg.Value != 1 {
		t.Errorf("N %d invalid %d value %v, want 2, 1, 1", agg.N, agg.Invalid, agg.Value)
	}
}
