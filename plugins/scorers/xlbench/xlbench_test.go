package xlbench_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/plugins/scorers/bleu"
	"github.com/hayloft/hayloft/plugins/scorers/exact"
	"github.com/hayloft/hayloft/plugins/scorers/rougel"
	"github.com/hayloft/hayloft/plugins/scorers/xlbench"
	task "github.com/hayloft/hayloft/plugins/tasks/xlbench"
	"github.com/hayloft/hayloft/sdk"
)

func scorer(t testing.TB, opts map[string]any) *xlbench.Scorer {
	t.Helper()
	s, err := xlbench.NewScorer(context.Background(), sdk.MustOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sample(scenario, subtask, lang string, targets ...string) *sdk.Sample {
	st, _ := task.Lookup(scenario, subtask)
	return &sdk.Sample{ID: scenario + "/" + subtask, Subtask: subtask, Language: lang, Targets: targets,
		Choices:  []string{"w", "x", "y", "z"},
		Metadata: map[string]any{"scenario": scenario, "family": st.Family, "doc_length": 120000, "doc_length_unit": "words", "layout": "inline", "mode": "zero_shot"}}
}

func score(t testing.TB, s sdk.Scorer, smp *sdk.Sample, pred string) *sdk.ScoreResponse {
	t.Helper()
	r, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: smp, Prediction: pred})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func direct(t testing.TB, f sdk.ScorerFactory, opts map[string]any, smp *sdk.Sample, pred string) *sdk.ScoreResponse {
	t.Helper()
	s, err := f(context.Background(), sdk.MustOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	return score(t, s, smp, pred)
}

// Every one of the 27 subtasks, in each of its languages, is scored by the
// spec's metric, with the value the metric's own scorer gives.
func TestEverySubtaskRoutesToItsMetric(t *testing.T) {
	s := scorer(t, nil)
	const pred, target = "The keeper counted 12 ships at night.", "The keeper counted twelve ships at night."
	seen := 0
	for _, st := range task.Subtasks {
		for _, lang := range task.Languages[st.Scenario] {
			seen++
			smp := sample(st.Scenario, st.Name, lang, target)
			p := pred
			switch st.Metric {
			case task.MetricMAE:
				smp.Targets, p = []string{"7"}, "I would give it 5 out of 10"
			case task.MetricChoiceF1:
				smp.Targets, p = []string{"AC"}, "A"
			}
			got := score(t, s, smp, p)
			if got.Details["metric"] != st.Metric || got.Details["family"] != st.Family {
				t.Fatalf("%s/%s/%s: metric %v family %v, want %s %s", st.Scenario, st.Name, lang, got.Details["metric"], got.Details["family"], st.Metric, st.Family)
			}
			var want float64
			switch st.Metric {
			case task.MetricAccuracy:
				want = direct(t, exact.New, map[string]any{"lowercase": true, "remove_punctuation": true, "normalize_whitespace": true}, smp, p).Value
			case task.MetricRougeL:
				opts := map[string]any{}
				if lang == "zh" {
					opts["tokenizer"] = "char"
				}
				want = direct(t, rougel.New, opts, smp, p).Value
			case task.MetricBLEU:
				want = direct(t, bleu.New, nil, smp, p).Value / 100
			case task.MetricMAE:
				want = 2
			case task.MetricChoiceF1:
				want = 2.0 / 3
			}
			if math.Abs(got.Value-want) > 1e-12 {
				t.Errorf("%s/%s/%s: value %v, want %v", st.Scenario, st.Name, lang, got.Value, want)
			}
		}
	}
	if seen != 27+13 {
		t.Fatalf("%d subtask-languages, want 40", seen)
	}
}

// Chinese ROUGE-L counts characters: rouge_score's tokenizer would score
// any Chinese pair 0.
func TestChineseRougeUsesCharacters(t *testing.T) {
	s := scorer(t, nil)
	smp := sample("fiction", "chapter_summarization", "zh", "今天天气很好")
	got := score(t, s, smp, "今天天气不好")
	// 5 of 6 characters in common: P = R = F = 5/6.
	if math.Abs(got.Value-5.0/6) > 1e-12 {
		t.Fatalf("zh ROUGE-L %v, want 5/6", got.Value)
	}
	if en := score(t, s, sample("fiction", "chapter_summarization", "en", "今天天气很好"), "今天天气不好"); en.Value != 0 {
		t.Fatalf("the English tokenizer scored Chinese %v; the test no longer shows the difference", en.Value)
	}
}

func TestMAEDirection(t *testing.T) {
	s := scorer(t, nil)
	smp := sample("paper", "rating_score", "en", "7")
	cases := []struct {
		pred    string
		want    float64
		invalid bool
	}{
		{"7", 0, false}, {"Rating: 9", 2, false}, {"3.5", 3.5, false}, {"no idea", 0, true}, {"11", 0, true},
	}
	for _, c := range cases {
		got := score(t, s, smp, c.pred)
		if got.Invalid != c.invalid || (!c.invalid && math.Abs(got.Value-c.want) > 1e-12) {
			t.Errorf("%q: value %v invalid %v, want %v %v", c.pred, got.Value, got.Invalid, c.want, c.invalid)
		}
	}
	// Closer ratings score lower: MAE is an error, and the table says so.
	if score(t, s, smp, "6").Value >= score(t, s, smp, "2").Value {
		t.Fatal("a closer rating did not get a lower error")
	}
}

func TestChoiceF1(t *testing.T) {
	s := scorer(t, nil)
	smp := sample("law", "multiple_choice_qa", "zh", "AC")
	cases := []struct {
		pred string
		want float64
	}{
		{"AC", 1}, {"A, C", 1}, {"C", 2.0 / 3}, {"ABC", 0.8}, {"B", 0}, {"BD", 0}, {"我不知道", 0},
	}
	for _, c := range cases {
		got := score(t, s, smp, c.pred)
		if got.Invalid || math.Abs(got.Value-c.want) > 1e-12 {
			t.Errorf("%q: %v (invalid %v), want %v", c.pred, got.Value, got.Invalid, c.want)
		}
	}
}

func TestOverrides(t *testing.T) {
	s := scorer(t, map[string]any{"metrics": map[string]any{"question_answering": "rougel", "paper/content_retrieval": "contains"}})
	if m := score(t, s, sample("fiction", "question_answering", "en", "a b"), "a b").Details["metric"]; m != "rougel" {
		t.Fatalf("override: %v", m)
	}
	if got := score(t, s, sample("paper", "content_retrieval", "en", "ships"), "There were ships."); got.Details["metric"] != "contains" || got.Value != 1 {
		t.Fatalf("scenario-qualified override: %v %v", got.Details["metric"], got.Value)
	}
	if m := score(t, s, sample("fiction", "content_retrieval", "en", "x"), "x").Details["metric"]; m != "accuracy" {
		t.Fatalf("the fiction subtask of the same name changed: %v", m)
	}
	for _, bad := range []map[string]any{
		{"metrics": map[string]any{"question_answerin": "rougel"}},
		{"metrics": map[string]any{"question_answering": "meteor"}},
		{"length_bins": []int{100, 50}},
		{"rougel": map[string]any{"tokenizer": "nope"}},
	} {
		if _, err := xlbench.NewScorer(context.Background(), sdk.MustOptions(bad)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	_, err := xlbench.NewScorer(context.Background(), sdk.MustOptions(map[string]any{"rougel": map[string]any{"tokenizer": "nope"}}))
	if err == nil || !strings.Contains(err.Error(), "rougel.tokenizer") {
		t.Errorf("nested option error %v does not name rougel.tokenizer", err)
	}
}

// aggregate scores a fixed set and returns its tables, round-tripped
// through JSON as a report receives them.
func aggregate(t *testing.T, s *xlbench.Scorer, variant string) *sdk.AggregateResponse {
	t.Helper()
	agg, err := s.Aggregate(context.Background(), &sdk.AggregateRequest{Scores: rowScores(t, s, variant)})
	if err != nil {
		t.Fatal(err)
	}
	return agg
}

// rowScores scores a row of every scenario and language, as the journal and
// the plugin boundary carry the scores.
func rowScores(t *testing.T, s *xlbench.Scorer, variant string) []*sdk.ScoreResponse {
	t.Helper()
	type item struct {
		scenario, subtask, lang, target, pred string
		length                                int
	}
	items := []item{
		{"fiction", "content_location", "en", "3", "3", 40000},
		{"fiction", "content_location", "en", "3", "4", 120000},
		{"fiction", "chapter_counting", "en", "12", "12.", 120000},
		{"fiction", "question_answering", "en", "He went to the sea.", "He went to sea.", 120000},
		{"fiction", "chapter_summarization", "zh", "今天天气很好", "今天天气不好", 300000},
		{"fiction", "poem_generation", "zh", "床前明月光", "月光", 300000},
		{"paper", "rating_score", "en", "7", "no rating", 90000},
		{"paper", "paper_counting", "en", "5", "6", 90000},
		{"law", "multiple_choice_qa", "zh", "AC", "A", 250000},
		{"law", "legal_number_qa", "zh", "3", "3", 250000},
	}
	var scores []*sdk.ScoreResponse
	for _, it := range items {
		smp := sample(it.scenario, it.subtask, it.lang, it.target)
		smp.Metadata["doc_length"] = it.length
		if variant != "" {
			smp.Metadata["variant"] = variant
		}
		sc := score(t, s, smp, it.pred)
		raw, _ := json.Marshal(sc) // as the journal and the plugin boundary carry it
		var back sdk.ScoreResponse
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		scores = append(scores, &back)
	}
	return scores
}

func TestTables(t *testing.T) {
	s := scorer(t, nil)
	agg := aggregate(t, s, "")
	tables, err := sdk.TablesOf(agg.Details)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]sdk.Table{}
	var ids []string
	for _, tb := range tables {
		byID[tb.ID] = tb
		ids = append(ids, tb.ID)
	}
	want := "xlbench.fiction.en xlbench.fiction.zh xlbench.paper.en xlbench.law.zh xlbench.variants xlbench.length.fiction.en xlbench.length.fiction.zh xlbench.length.paper.en xlbench.length.law.zh"
	if strings.Join(ids, " ") != want {
		t.Fatalf("tables %v\nwant %s", ids, want)
	}
	en := byID["xlbench.fiction.en"]
	var groups, keys []string
	for _, c := range en.Columns {
		groups, keys = append(groups, c.Group), append(keys, c.Key)
		if c.Scale != 100 || c.Floor != 1 {
			t.Errorf("column %s: scale %v floor %v, want ×100 with <1", c.Key, c.Scale, c.Floor)
		}
	}
	if strings.Join(keys, ",") != "content_location,question_answering,chapter_counting" || strings.Join(groups, ",") != "MR,DU,OU" {
		t.Fatalf("fiction-en columns %v groups %v", keys, groups)
	}
	row := en.Rows[0]
	if row.Label != sdk.ModelSlot || *row.Cells["content_location"].Value != 0.5 || row.Cells["content_location"].N != 2 || *row.Cells["chapter_counting"].Value != 1 {
		t.Fatalf("fiction-en row %+v", row)
	}
	paper := byID["xlbench.paper.en"]
	for _, c := range paper.Columns {
		if c.Key == "rating_score" && (c.Scale > 1 || c.Floor != 0 || !c.LowerIsBetter) {
			t.Errorf("MAE column %+v: want raw, no floor, lower is better", c)
		}
	}
	if c := paper.Rows[0].Cells["rating_score"]; c.Text != "None" || c.Value != nil {
		t.Errorf("MAE with no usable rating: %+v, want None", c)
	}
	if law := byID["xlbench.law.zh"].Rows[0].Cells; math.Abs(*law["multiple_choice_qa"].Value-2.0/3) > 1e-12 {
		t.Errorf("law mc %v", *law["multiple_choice_qa"].Value)
	}
	for id, want := range map[string]string{"xlbench.fiction.en": "mean rank mean_rank", "xlbench.law.zh": "mean rank mean_rank", "xlbench.paper.en": "mean_rank"} {
		if d := strings.Join(byID[id].Derived, " "); d != want {
			t.Errorf("%s derived %q, want %q (no mean across an MAE column)", id, d, want)
		}
	}
	if ln := byID["xlbench.length.fiction.en"]; len(ln.Columns) != 2 || ln.Columns[0].Label != "<50K" || ln.Columns[1].Label != "100K–150K" {
		t.Errorf("length bins %+v", ln.Columns)
	}
	// Four scenario-language means: no one value pools them (the spec's
	// Corrections: never across languages), and JSON says so with nulls.
	if agg.HasValue() || agg.Value != 0 || agg.CILow != 0 || agg.CIHigh != 0 {
		t.Errorf("a row of four scenario-language means has value %v [%v, %v], want none", agg.Value, agg.CILow, agg.CIHigh)
	}
	if r, _ := agg.Details[sdk.NoValueKey].(string); !strings.Contains(r, "fiction/en, fiction/zh, law/zh, paper/en") {
		t.Errorf("no-value reason %q, want the four means named", r)
	}
	if raw, _ := json.Marshal(agg); !strings.Contains(string(raw), `"value":null`) || !strings.Contains(string(raw), `"ci_low":null`) {
		t.Errorf("JSON of a row without a value: %.120s…, want value and interval null", raw)
	}
	if m := agg.Details["means"].(map[string]float64); len(m) != 4 || m["fiction/zh"] != (0.8333333333333334+0)/2 {
		t.Errorf("per scenario-language means %v", m)
	}
	if _, ok := agg.Details["implementations"]; !ok {
		t.Error("implementations not recorded")
	}
	raw, _ := json.MarshalIndent(tables, "", " ")
	golden(t, "tables.golden.json", string(raw)+"\n")

	// A variant's rows carry its name, so they never merge into the
	// original's; its family means land in their own column.
	v, _ := sdk.TablesOf(aggregate(t, s, "fiction_c(seed=1)").Details)
	for _, tb := range v {
		switch tb.ID {
		case "xlbench.fiction.en":
			if tb.Rows[0].Label != sdk.ModelSlot+" · fiction_c(seed=1)" {
				t.Errorf("variant row %q", tb.Rows[0].Label)
			}
		case "xlbench.variants":
			if tb.Columns[0].Key != "en.MR.fiction_c(seed=1)" || tb.Rows[0].Label != sdk.ModelSlot {
				t.Errorf("variant table %+v", tb)
			}
		}
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		os.WriteFile(p, []byte(got), 0o644)
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs:\n%s", p, got)
	}
}

// A row of one scenario and language has the paper's mean for it as its
// value, with an interval computed the same way; two languages of one
// scenario (Fiction-EN and Fiction-ZH) have none.
func TestValueIsOneScenarioLanguageMean(t *testing.T) {
	s := scorer(t, nil)
	all := rowScores(t, s, "")
	only := func(keep ...string) []*sdk.ScoreResponse {
		var out []*sdk.ScoreResponse
		for _, sc := range all {
			if slices.Contains(keep, sc.Details["scenario"].(string)+"/"+sc.Details["language"].(string)) {
				out = append(out, sc)
			}
		}
		return out
	}
	for _, tc := range []struct {
		keep  []string
		value bool
	}{
		{[]string{"fiction/en"}, true},
		{[]string{"fiction/zh"}, true},
		{[]string{"paper/en"}, true}, // its MAE cell is left out of the mean
		{[]string{"law/zh"}, true},
		{[]string{"fiction/en", "fiction/zh"}, false},
		{[]string{"fiction/en", "paper/en"}, false},
	} {
		agg, err := s.Aggregate(context.Background(), &sdk.AggregateRequest{Scores: only(tc.keep...)})
		if err != nil {
			t.Fatal(err)
		}
		means := agg.Details["means"].(map[string]float64)
		if !tc.value {
			if agg.HasValue() {
				t.Errorf("%v: value %v, want none", tc.keep, agg.Value)
			}
			continue
		}
		want := means[tc.keep[0]]
		if !agg.HasValue() || math.Abs(agg.Value-want) > 1e-12 || agg.CILow > agg.Value || agg.CIHigh < agg.Value {
			t.Errorf("%v: value %v [%v, %v] (has value %v), want the mean %v inside its interval", tc.keep, agg.Value, agg.CILow, agg.CIHigh, agg.HasValue(), want)
		}
	}
}
