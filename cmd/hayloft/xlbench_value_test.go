package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/plugins/tasks/xlbench/xlbenchgen"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

// An XLBench row of one scenario and language whose subtasks are all MAE
// (Paper-EN's rating_score, as `subtasks = ["rating_score"]` selects it)
// has no mean in details.means, yet `hayloft run` reports the value 0.000
// [0.000, 0.000] for it in the summary and "value": 0 in --json: a
// higher-is-better score of zero for a row whose only metric is an error.
func TestXLBenchRatingOnlyRowHasNoValue(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "xlbench.jsonl")
	if _, err := xlbenchgen.Write(data, xlbenchgen.Config{English: sdktest.Opticks(t), DocUnits: 3000, PerSubtask: 3, Scenarios: []string{"paper"}}); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, fmt.Sprintf(`
task "xlbench" "rating" {
  path      = %q
  scenarios = ["paper"]
  subtasks  = ["rating_score"]
}
model "baseline" "extractive" {}
scorer "xlbench" "paper" {}
eval "rating" {
  task    = task.xlbench.rating
  models  = [model.baseline.extractive]
  scorers = [scorer.xlbench.paper]
}
`, data))
	store := filepath.Join(dir, "j.db")
	res := decodeResult(t, hayloft(t, dir, "run", cfg, "--json", "--store", store))
	m := res.Evals[0].Metrics["scorer.xlbench.paper"]
	if m == nil {
		t.Fatalf("no xlbench metric: %+v", res.Evals[0])
	}
	means, _ := m.Details["means"].(map[string]any)
	if m.HasValue() && len(means) == 0 {
		sum := hayloft(t, dir, "run", cfg, "--store", store)
		line := ""
		for _, l := range strings.Split(sum.stdout, "\n") {
			if strings.Contains(l, "baseline.extractive") {
				line = l
				break
			}
		}
		t.Errorf("a rating_score-only row (n %d, invalid %d, means %v) reports value %v [%v, %v]; summary: %q", m.N, m.Invalid, means, m.Value, m.CILow, m.CIHigh, line)
	}
}
