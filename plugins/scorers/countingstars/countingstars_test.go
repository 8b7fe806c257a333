package countingstars

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	task "github.com/hayloft/hayloft/plugins/tasks/countingstars"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

const shared = "../../../../shared"

func newScorer(t testing.TB, opts map[string]any) *Scorer {
	t.Helper()
	s, err := New(context.Background(), sdk.MustOptions(opts))
	if err != nil {
		t.Fatalf("New(%v): %v", opts, err)
	}
	return s.(*Scorer)
}

type scoringVector struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Input struct {
		Predicted []int `json:"predicted"`
		M         int   `json:"m"`
	} `json:"input"`
	Expected struct {
		Acquisition     []float64 `json:"acquisition_per_index"`
		AcquisitionMean float64   `json:"acquisition_mean"`
		Reasoning       []float64 `json:"reasoning_per_index"`
		ReasoningMean   float64   `json:"reasoning_mean"`
	} `json:"expected"`
}

// jsonRefs is the references object as the JSONL CLI delivers it: decoded
// by encoding/json, numbers as float64.
func jsonRefs(t testing.TB, counts, wrong []int) any {
	t.Helper()
	b, err := json.Marshal(map[string]any{"counts": counts, "wrong": wrong})
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestScoringVectors(t *testing.T) {
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("shared data directory absent: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(shared, "testdata/reference/counting_stars_vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []scoringVector
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	c, _ := task.ReferenceCounts(32)
	n := 0
	for _, v := range vs {
		if v.Kind != "scoring" {
			continue
		}
		n++
		for _, tc := range []struct {
			mode, lang string
			per        []float64
			mean       float64
		}{
			{Acquisition, English, v.Expected.Acquisition, v.Expected.AcquisitionMean},
			{Reasoning, English, v.Expected.Reasoning, v.Expected.ReasoningMean},
			{Acquisition, Chinese, v.Expected.Acquisition, v.Expected.AcquisitionMean},
			{Reasoning, Chinese, v.Expected.Reasoning, v.Expected.ReasoningMean},
		} {
			t.Run(v.ID+"/"+tc.lang+"_"+tc.mode, func(t *testing.T) {
				if len(c.Correct) != v.Input.M {
					t.Fatalf("m = %d, reference list has %d", v.Input.M, len(c.Correct))
				}
				key := KeyEN
				if tc.lang == Chinese {
					key = KeyZH
				}
				pred, _ := json.Marshal(map[string][]int{key: v.Input.Predicted})
				for _, refs := range []any{
					map[string]any{"counts": c.Correct, "wrong": c.Wrong}, // from the task
					jsonRefs(t, c.Correct, c.Wrong),                       // from JSONL
				} {
					s := newScorer(t, map[string]any{"mode": tc.mode, "language": tc.lang})
					resp, err := s.Score(context.Background(), &sdk.ScoreRequest{
						Prediction: string(pred),
						Sample:     &sdk.Sample{ID: v.ID, Metadata: map[string]any{"references": refs}},
					})
					if err != nil {
						t.Fatal(err)
					}
					if got := resp.Details["hits"].([]float64); !slices.Equal(got, tc.per) {
						t.Errorf("hits %v\nwant %v", got, tc.per)
					}
					if resp.Value != tc.mean || resp.Invalid || resp.Details["format_ok"] != true {
						t.Errorf("value %v invalid %v format_ok %v; want %v", resp.Value, resp.Invalid, resp.Details["format_ok"], tc.mean)
					}
				}
			})
		}
	}
	if n < 5 {
		t.Fatalf("only %d scoring vectors", n)
	}
}

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		text   string
		keys   []string
		want   []int
		items  int // len(Items) when it differs from len(want)
		format bool
	}{
		{"plain", `{"little_penguin": [15, 117, 42]}`, []string{KeyEN}, []int{15, 117, 42}, 0, true},
		{"fenced", "```json\n{\"little_penguin\": [15, 117]}\n```", []string{KeyEN}, []int{15, 117}, 0, true},
		{"fence no tag", "```\n{\"little_penguin\": [1]}\n```", []string{KeyEN}, []int{1}, 0, true},
		{"leading json", "JSON {\"little_penguin\": [3, 4]}", []string{KeyEN}, []int{3, 4}, 0, true},
		{"single quotes", `{'little_penguin': [15, 117]}`, []string{KeyEN}, []int{15, 117}, 0, true},
		{"trailing commas", `{"little_penguin": [15, 117, ], }`, []string{KeyEN}, []int{15, 117}, 0, true},
		{"missing bracket", `{"little_penguin": [15, 117, 42`, []string{KeyEN}, []int{15, 117, 42}, 0, true},
		{"missing list bracket before brace", `{"little_penguin": [15, 117}`, []string{KeyEN}, []int{15, 117}, 0, true},
		{"bare key", `{little_penguin: [5]}`, []string{KeyEN}, []int{5}, 0, true},
		{"chinese key", `{"小企鹅":[15,117,42]}`, []string{KeyZH}, []int{15, 117, 42}, 0, true},
		{"full-width separators", `{“小企鹅”：[15，117、42]}`, []string{KeyZH}, []int{15, 117, 42}, 0, true},
		{"prose around", "Here you go: {\"little_penguin\": [7, 9]} Hope it helps, 3 times.", []string{KeyEN}, []int{7, 9}, 0, true},
		{"nested", `{"answer": {"little_penguin": [7]}}`, []string{KeyEN}, []int{7}, 0, true},
		{"strings and floats", `{"little_penguin": ["15", 117.0, 42.5, "x"]}`, []string{KeyEN}, []int{15, 117}, 4, true},
		{"garbage element", `{"little_penguin": [15, ***, 20]}`, []string{KeyEN}, []int{15, 20}, 3, true},
		{"second object has the key", `{"note": 1} {"little_penguin": [8]}`, []string{KeyEN}, []int{8}, 0, true},
		{"wrong language key", `{"小企鹅": [15, 117]}`, []string{KeyEN}, []int{15, 117}, 0, false},
		{"no json", "The little penguin counted 15, then 117 and 42 stars.", []string{KeyEN}, []int{15, 117, 42}, 0, false},
		{"list only", "[15, 117]", []string{KeyEN}, []int{15, 117}, 0, false},
		{"empty", "", []string{KeyEN}, []int{}, 0, false},
		{"either key", `{"小企鹅": [2]}`, []string{KeyEN, KeyZH}, []int{2}, 0, true},
		{"deep nesting", strings.Repeat("[", 10000), []string{KeyEN}, []int{}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ParseAnswer(tc.text, tc.keys...)
			if got := a.Ints(); !slices.Equal(got, tc.want) {
				t.Errorf("ints %v, want %v", got, tc.want)
			}
			items := tc.items
			if items == 0 {
				items = len(tc.want)
			}
			if len(a.Items) != items {
				t.Errorf("%d items, want %d", len(a.Items), items)
			}
			if a.FormatOK != tc.format {
				t.Errorf("format ok %v, want %v", a.FormatOK, tc.format)
			}
		})
	}
}

func TestCredit(t *testing.T) {
	refs := References{Counts: []int{15, 117, 42, 69}, Wrong: []int{16, 116, 43, 70}}
	for _, tc := range []struct {
		name, mode string
		answer     []int
		want       []float64
	}{
		{"acquisition exact", Acquisition, []int{15, 117, 42, 69}, []float64{1, 1, 1, 1}},
		{"acquisition any order", Acquisition, []int{69, 42, 117, 15}, []float64{1, 1, 1, 1}},
		{"acquisition wrong counts miss", Acquisition, []int{16, 116, 42}, []float64{0, 0, 1, 0}},
		{"reasoning all four credits", Reasoning, []int{15, 116, 42, 43}, []float64{1, 0.25, 0.5, 0}},
		{"truncated to M before the set", Reasoning, []int{1, 1, 1, 1, 15}, []float64{0, 0, 0, 0}},
		{"duplicates inside M", Acquisition, []int{15, 15, 117, 117}, []float64{1, 1, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items := make([]Item, len(tc.answer))
			for i, v := range tc.answer {
				items[i] = Item{Value: v, OK: true}
			}
			if got := Credit(tc.mode, refs, Answer{Items: items, FormatOK: true}); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want []string
	}{
		{"clean", `{"little_penguin": [15, 117, 42, 69]}`, []string{}},
		{"repeat", `{"little_penguin": [15, 15, 15, 117]}`, []string{BadRepeat}},
		{"twice is no repeat", `{"little_penguin": [15, 15, 117]}`, []string{}},
		{"increasing", `{"little_penguin": [1, 2, 3, 4, 5]}`, []string{BadIncreasing}},
		{"two steps is no run", `{"little_penguin": [15, 16, 42]}`, []string{}},
		{"format", `15, 117`, []string{BadFormat}},
		{"format and repeat", `7 7 7 7`, []string{BadFormat, BadRepeat}},
		{"repeat and increasing", `{"little_penguin": [1, 2, 3, 3, 3]}`, []string{BadRepeat, BadIncreasing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(ParseAnswer(tc.text, KeyEN)); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	// The reference lists themselves must never look like bad cases.
	for _, m := range []int{32, 64, 128, 256, 512, 1024} {
		c, _ := task.ReferenceCounts(m)
		items := make([]Item, m)
		for i, v := range c.Correct {
			items[i] = Item{Value: v, OK: true}
		}
		if got := Classify(Answer{Items: items, FormatOK: true}); len(got) != 0 {
			t.Errorf("M = %d reference list classified %v", m, got)
		}
	}
}

func TestScoreErrors(t *testing.T) {
	s := newScorer(t, map[string]any{"mode": "reasoning"})
	for _, tc := range []struct {
		name string
		meta map[string]any
		msg  string
	}{
		{"no references", map[string]any{}, "missing"},
		{"no counts", map[string]any{"references": map[string]any{"wrong": []int{1}}}, "counts"},
		{"no wrong in reasoning", map[string]any{"references": map[string]any{"counts": []int{1, 5}}}, "wrong"},
		{"fractional count", map[string]any{"references": map[string]any{"counts": []any{1.5}, "wrong": []any{2.0}}}, "not an integer"},
		{"not a list", map[string]any{"references": map[string]any{"counts": "15", "wrong": []int{1}}}, "list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "x", Metadata: tc.meta}})
			if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), `"x"`) {
				t.Errorf("got %v, want an error naming the sample and %q", err, tc.msg)
			}
		})
	}
	for _, opts := range []map[string]any{{"mode": "counting"}, {"language": "fr"}, {"lang": "en"}} {
		_, err := New(context.Background(), sdk.MustOptions(opts))
		var ce *sdk.ConfigError
		if !errors.As(err, &ce) || ce.Field == "" {
			t.Errorf("New(%v): %v, want a *sdk.ConfigError naming the field", opts, err)
		}
	}
}

func TestReferencesShapes(t *testing.T) {
	want := References{Counts: []int{3, 9}, Wrong: []int{4, 8}}
	for name, v := range map[string]any{
		"ints":        map[string]any{"counts": []int{3, 9}, "wrong": []int{4, 8}},
		"json":        jsonRefs(t, []int{3, 9}, []int{4, 8}),
		"json text":   `{"counts": [3, 9], "wrong": [4, 8]}`,
		"raw message": json.RawMessage(`{"counts": [3, 9], "wrong": [4, 8]}`),
		"struct":      want,
		"typed map":   map[string][]int{"counts": {3, 9}, "wrong": {4, 8}},
		"int64s":      map[string]any{"counts": []int64{3, 9}, "wrong": []any{int64(4), json.Number("8")}},
	} {
		got, err := ReadReferences(v)
		if err != nil || !slices.Equal(got.Counts, want.Counts) || !slices.Equal(got.Wrong, want.Wrong) {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
}

func TestModeAndLanguageFromSample(t *testing.T) {
	s := newScorer(t, nil)
	refs := map[string]any{"counts": []int{15, 117}, "wrong": []int{16, 116}}
	for _, tc := range []struct {
		name string
		smp  *sdk.Sample
		pred string
		want float64
	}{
		{"reasoning from metadata", &sdk.Sample{Language: "zh", Metadata: map[string]any{"mode": "reasoning", "references": refs}}, `{"小企鹅": [15, 116]}`, (1 + 0.25) / 2},
		{"acquisition from metadata", &sdk.Sample{Language: "zh", Metadata: map[string]any{"mode": "acquisition", "references": refs}}, `{"小企鹅": [15, 116]}`, 0.5},
		{"reasoning when wrong given", &sdk.Sample{Metadata: map[string]any{"references": refs}}, `{"little_penguin": [15, 116]}`, (1 + 0.25) / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: tc.smp, Prediction: tc.pred})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Value != tc.want || resp.Details["format_ok"] != true {
				t.Errorf("value %v format %v, want %v", resp.Value, resp.Details["format_ok"], tc.want)
			}
		})
	}
}

func opticks(t testing.TB) string { return sdktest.OpticksFile(t) }

// TestWithTask scores answers to real task samples, in process and after a
// JSON round trip of the sample (what a plugin boundary does), and
// aggregates them.
func TestWithTask(t *testing.T) {
	ctx := context.Background()
	tk, err := task.New(ctx, sdk.MustOptions(map[string]any{
		"mode": "reasoning", "haystack": opticks(t), "max_length": 32000, "sizes": 4,
	}))
	if err != nil {
		t.Fatal(err)
	}
	sc := newScorer(t, map[string]any{"mode": "reasoning", "language": "en"})
	c, _ := task.ReferenceCounts(32)
	half := map[string][]int{KeyEN: c.Correct[:16]}
	both := map[string][]int{KeyEN: append(slices.Clone(c.Correct[:16]), c.Wrong[:16]...)}
	var scores []*sdk.ScoreResponse
	k := 0
	for smp, err := range tk.Samples(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		// The task's own target is a perfect answer.
		resp, err := sc.Score(ctx, &sdk.ScoreRequest{Sample: smp, Prediction: smp.Targets[0]})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Value != 1 {
			t.Errorf("%s: target scores %v", smp.ID, resp.Value)
		}
		// Over the wire the metadata arrives as JSON.
		b, err := json.Marshal(smp)
		if err != nil {
			t.Fatal(err)
		}
		var wire sdk.Sample
		if err := json.Unmarshal(b, &wire); err != nil {
			t.Fatal(err)
		}
		pred := half
		want := 0.5
		if k%2 == 1 {
			pred, want = both, 0.25 // 16 indices at 0.5
		}
		p, _ := json.Marshal(pred)
		resp, err = sc.Score(ctx, &sdk.ScoreRequest{Sample: &wire, Prediction: "```json\n" + string(p) + "\n```"})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Value != want {
			t.Errorf("%s: scores %v, want %v", smp.ID, resp.Value, want)
		}
		scores = append(scores, resp)
		k++
	}
	agg, err := sc.Aggregate(ctx, &sdk.AggregateRequest{Scores: scores})
	if err != nil {
		t.Fatal(err)
	}
	if agg.Value != 0.375 || agg.N != 4 || agg.Invalid != 0 || agg.Details["display"] != "0.375" {
		t.Errorf("aggregate %+v", agg)
	}
	heat, ok := agg.Details["heatmap"].(*Heatmap)
	if !ok || !slices.Equal(heat.Lengths, []int{8000, 16000, 24000, 32000}) || len(heat.Rows) != 32 {
		t.Fatalf("heatmap %+v", agg.Details["heatmap"])
	}
	if heat.Rows[0][0] != 1 || heat.Rows[0][1] != 0.5 || heat.Rows[31][0] != 0 {
		t.Errorf("heatmap rows 0 and 31: %v, %v", heat.Rows[0], heat.Rows[31])
	}
	// The same grid as reports draw it, after the journal's round trip.
	b, err := json.Marshal(agg.Details)
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]any
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	figs, err := sdk.HeatmapsOf(wire)
	if err != nil || len(figs) != 1 {
		t.Fatalf("heatmaps %v, %v", figs, err)
	}
	fig := figs[0]
	if fig.ID != HeatmapID || !slices.Equal(fig.X.Keys, []string{"8000", "16000", "24000", "32000"}) || fig.X.TickLabel(0) != "8K" ||
		len(fig.Y.Keys) != 32 || fig.Y.Keys[0] != "1" || *fig.Values[0][0] != 1 || *fig.Values[0][1] != 0.5 || *fig.Values[31][0] != 0 {
		t.Errorf("heatmap figure %+v", fig)
	}
	if byLen := agg.Details["by_length"].(map[string]float64); byLen["8000"] != 0.5 || byLen["16000"] != 0.25 {
		t.Errorf("by length %v", byLen)
	}
}

func TestAggregate(t *testing.T) {
	ctx := context.Background()
	sc := newScorer(t, map[string]any{"mode": "acquisition", "language": "en"})
	refs := map[string]any{"counts": []int{1, 5, 9, 13}}
	answers := []string{
		`{"little_penguin": [1, 5, 9, 13]}`, // 1
		`{"little_penguin": [1, 5]}`,        // 0.5
		`1 5 9`,                             // 0.75, format
		`{"little_penguin": [1, 1, 1, 1]}`,  // 0.25, repeat
		`{"little_penguin": [3, 4, 5, 6]}`,  // 0.25, increasing
	}
	var scores []*sdk.ScoreResponse
	for i, a := range answers {
		resp, err := sc.Score(ctx, &sdk.ScoreRequest{
			Prediction: a,
			Sample:     &sdk.Sample{ID: strconv.Itoa(i), Metadata: map[string]any{"references": refs, "nominal_length": 4000 * (1 + i%2)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		scores = append(scores, resp)
	}
	scores = append(scores, &sdk.ScoreResponse{Invalid: true})
	agg, err := sc.Aggregate(ctx, &sdk.AggregateRequest{Scores: scores})
	if err != nil {
		t.Fatal(err)
	}
	const want = (1 + 0.5 + 0.75 + 0.25 + 0.25) / 5
	if math.Abs(agg.Value-want) > 1e-15 || agg.N != 6 || agg.Invalid != 1 {
		t.Errorf("value %v n %d invalid %d; want %v, 6, 1", agg.Value, agg.N, agg.Invalid, want)
	}
	if agg.Details["display"] != "0.550" {
		t.Errorf("display %v", agg.Details["display"])
	}
	if agg.CILow > agg.Value || agg.CIHigh < agg.Value || agg.CILow < 0.25 || agg.CIHigh > 1 || agg.CILow == agg.CIHigh {
		t.Errorf("CI [%v, %v] around %v", agg.CILow, agg.CIHigh, agg.Value)
	}
	bad := agg.Details["bad_cases"].(map[string]int)
	if bad[BadFormat] != 1 || bad[BadRepeat] != 1 || bad[BadIncreasing] != 1 {
		t.Errorf("bad cases %v", bad)
	}
	// The same scores after a JSON round trip (a plugin boundary) aggregate
	// the same, and the aggregate is deterministic.
	b, err := json.Marshal(scores)
	if err != nil {
		t.Fatal(err)
	}
	var wire []*sdk.ScoreResponse
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	again, err := sc.Aggregate(ctx, &sdk.AggregateRequest{Scores: wire})
	if err != nil {
		t.Fatal(err)
	}
	if again.Value != agg.Value || again.CILow != agg.CILow || again.CIHigh != agg.CIHigh {
		t.Errorf("after JSON: %+v, before %+v", again, agg)
	}
	if _, err := json.Marshal(again); err != nil {
		t.Errorf("aggregate does not encode: %v", err)
	}
	byLen := again.Details["by_length"].(map[string]float64)
	if byLen["4000"] != (1+0.75+0.25)/3 || byLen["8000"] != (0.5+0.25)/2 {
		t.Errorf("by length %v", byLen)
	}
	// Mixed M: cells, not samples, weigh.
	mixed := []*sdk.ScoreResponse{
		{Value: 1, Stats: []float64{2, 2, 0, 0, 0}},
		{Value: 0, Stats: []float64{0, 6, 0, 0, 0}},
	}
	agg, err = sc.Aggregate(ctx, &sdk.AggregateRequest{Scores: mixed})
	if err != nil {
		t.Fatal(err)
	}
	if agg.Value != 0.25 {
		t.Errorf("mixed M value %v, want 0.25", agg.Value)
	}
	if _, err := sc.Aggregate(ctx, &sdk.AggregateRequest{Scores: []*sdk.ScoreResponse{{Value: 1}}}); err == nil {
		t.Error("aggregating a foreign score did not fail")
	}
}

// TestConformance runs the SDK's scorer contract checks over a real gRPC
// connection: references and details cross it as JSON.
func TestConformance(t *testing.T) {
	set := sdk.NewSet("test", "v0")
	set.RegisterScorer(Name, New)
	remote := sdktest.Scorer(t, set, Name, map[string]any{"mode": "reasoning", "language": "zh"})
	refs := map[string]any{"counts": []int{15, 117, 42, 69}, "wrong": []int{16, 116, 43, 70}}
	req := func(pred string) *sdk.ScoreRequest {
		return &sdk.ScoreRequest{Prediction: pred, Sample: &sdk.Sample{ID: "s", Language: "zh", Metadata: map[string]any{"references": refs, "nominal_length": 4000}}}
	}
	sdktest.CheckScorer(t, remote, []sdktest.ScorerCase{
		{Name: "perfect", Req: req(`{"小企鹅":[15,117,42,69]}`), Want: 1},
		{Name: "mixed credits", Req: req("```json\n{'小企鹅': [15, 116, 42, 43,]}\n```"), Want: (1 + 0.25 + 0.5 + 0) / 4},
		{Name: "format not followed", Req: req("小企鹅数了15颗★，然后是117颗"), Want: 0.5},
		{Name: "empty", Req: req(""), Want: 0},
	})
	resp, err := remote.Score(context.Background(), req("7 7 7"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Details["format_ok"] != false || resp.Details["bad_case"] != BadFormat {
		t.Errorf("details over gRPC: %v", resp.Details)
	}
	if _, err := sdktest.Configure(t, set, sdk.KindScorer, Name, map[string]any{"mode": "x"}); err == nil {
		t.Error("bad mode configured over gRPC")
	}
}
