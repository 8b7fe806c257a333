package niah

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"github.com/hayloft/hayloft/sdk/sdktest"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

var update = flag.Bool("update", false, "rewrite golden files")

func opticksPath(t testing.TB) string { return sdktest.OpticksFile(t) }

func mustTask(t testing.TB, opts map[string]any) *Task {
	t.Helper()
	task, err := newTask(context.Background(), sdk.MustOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// vector is one case of niah_vectors.json.
type vector struct {
	ID       string          `json:"id"`
	Kind     string          `json:"kind"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`
}

func loadVectors(t *testing.T) map[string]vector {
	t.Helper()
	path := filepath.Join("..", "..", "..", "..", "shared", "testdata", "reference", "niah_vectors.json")
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("reference vectors absent: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]vector{}
	for _, v := range vs {
		out[v.ID] = v
	}
	return out
}

func TestReferenceGrids(t *testing.T) {
	vs := loadVectors(t)
	hay := opticksPath(t)
	cases := []struct {
		id   string
		opts map[string]any
	}{
		{"niah_openai_gpt4_128k_grid", map[string]any{"min_length": 1000, "max_length": 128000, "length_intervals": 15, "depth_intervals": 15}},
		{"niah_anthropic_claude21_200k_grid", map[string]any{"min_length": 1000, "max_length": 200000, "length_intervals": 35,
			"depth_intervals": 35, "depth_interval_type": "sigmoid"}},
		{"niah_default_cli_grid", map[string]any{}},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			v, ok := vs[c.id]
			if !ok {
				t.Fatalf("vector %s missing", c.id)
			}
			var want struct {
				Lengths    []int     `json:"context_lengths"`
				Depths     []float64 `json:"depth_percents"`
				DepthsX100 []int     `json:"depth_percents_x100_sorted"`
				DepthsGen  []float64 `json:"depth_percents_in_generation_order"`
			}
			if err := json.Unmarshal(v.Expected, &want); err != nil {
				t.Fatal(err)
			}
			c.opts["haystack"] = hay
			task := mustTask(t, c.opts)
			if !slices.Equal(task.lengths, want.Lengths) {
				t.Errorf("lengths\n got %v\nwant %v", task.lengths, want.Lengths)
			}
			if want.Depths != nil && !slices.Equal(task.depths, want.Depths) {
				t.Errorf("depths\n got %v\nwant %v", task.depths, want.Depths)
			}
			if want.DepthsGen != nil && !slices.Equal(task.depths, want.DepthsGen) {
				t.Errorf("depths in generation order\n got %v\nwant %v", task.depths, want.DepthsGen)
			}
			if want.DepthsX100 != nil {
				var x100 []int
				for _, d := range task.depths {
					x100 = append(x100, int(d*100))
				}
				sort.Ints(x100)
				if !slices.Equal(x100, want.DepthsX100) {
					t.Errorf("int(depth·100) sorted\n got %v\nwant %v", x100, want.DepthsX100)
				}
			}
			if want.Depths == nil && want.DepthsGen == nil {
				t.Fatal("vector has no depth list")
			}
		})
	}
}

func TestReferenceMultiNeedleDepths(t *testing.T) {
	v := loadVectors(t)["niah_multi_needle_depths"]
	var in struct {
		Depth float64 `json:"depth_percent"`
		N     int     `json:"num_needles"`
	}
	var want struct {
		Depths []float64 `json:"depths"`
	}
	if err := json.Unmarshal(v.Input, &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(v.Expected, &want); err != nil {
		t.Fatal(err)
	}
	if got := needleDepths(in.Depth, in.N); !slices.Equal(got, want.Depths) {
		t.Errorf("needleDepths(%g, %d) = %v, want %v", in.Depth, in.N, got, want.Depths)
	}
}

func TestReferencePrompts(t *testing.T) {
	v := loadVectors(t)["niah_prompts_and_needles"]
	var want struct {
		Needle   string        `json:"needle_current"`
		Question string        `json:"retrieval_question_current"`
		Messages []sdk.Message `json:"openai_messages"`
		Buffer   int           `json:"final_context_length_buffer_current"`
		Kwargs   struct {
			MaxTokens int `json:"max_tokens"`
		} `json:"model_kwargs"`
	}
	if err := json.Unmarshal(v.Expected, &want); err != nil {
		t.Fatal(err)
	}
	if DefaultNeedle != want.Needle || DefaultQuestion != want.Question {
		t.Errorf("default needle/question differ from upstream")
	}
	if DefaultBuffer != want.Buffer || DefaultMaxNewTokens != want.Kwargs.MaxTokens {
		t.Errorf("buffer %d max tokens %d, upstream %d %d", DefaultBuffer, DefaultMaxNewTokens, want.Buffer, want.Kwargs.MaxTokens)
	}
	slots := strings.NewReplacer("{context}", sdk.ContextSlot, "{retrieval_question}", sdk.QuestionSlot)
	for i := range want.Messages {
		want.Messages[i].Content = slots.Replace(want.Messages[i].Content)
	}
	if got := Messages(); !slices.Equal(got, want.Messages) {
		t.Errorf("messages\n got %q\nwant %q", got, want.Messages)
	}
	// A rendered sample is upstream's prompt with the context and question
	// filled in.
	task := mustTask(t, map[string]any{"haystack": opticksPath(t), "lengths": []int{1000}, "depths": []float64{50}})
	for s, err := range task.Samples(context.Background(), &sdk.SamplesRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		msgs := s.Render()
		if msgs[1].Content != s.Context || msgs[2].Content != want.Question+QuestionSuffix {
			t.Errorf("rendered prompt %q", msgs)
		}
	}
}

func TestKeyFacts(t *testing.T) {
	cases := []struct {
		needle, question string
		want             []string
	}{
		{DefaultNeedle, DefaultQuestion, []string{"eat", "sandwich", "sit", "dolores", "park", "sunny", "day"}},
		{" Figs are one of the secret ingredients needed to build the perfect pizza. ",
			"What are the secret ingredients needed to build the perfect pizza?", []string{"figs"}},
		{" Goat cheese is one of the secret ingredients needed to build the perfect pizza. ",
			"What are the secret ingredients needed to build the perfect pizza?", []string{"goat", "cheese"}},
		{"The magic number is 42.", "What is the magic number?", []string{"42"}},
		{"Don't panic, don't.", "", []string{"don't", "panic"}},
	}
	for _, c := range cases {
		if got := KeyFacts(c.needle, c.question); !slices.Equal(got, c.want) {
			t.Errorf("KeyFacts(%q, %q) = %q, want %q", c.needle, c.question, got, c.want)
		}
	}
}

func collect(t *testing.T, task sdk.Task, req *sdk.SamplesRequest) []*sdk.Sample {
	t.Helper()
	var out []*sdk.Sample
	for s, err := range task.Samples(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestSampleInvariants(t *testing.T) {
	lengths := []int{1000, 3000, 20000, 150000} // 150000 needs the haystack repeated
	task := mustTask(t, map[string]any{"haystack": opticksPath(t), "lengths": lengths, "depth_intervals": 11})
	samples := collect(t, task, nil)
	if len(samples) != len(lengths)*11 {
		t.Fatalf("%d samples, want %d", len(samples), len(lengths)*11)
	}
	for _, s := range samples {
		md := s.Metadata
		length, asked, reached := md["length_asked"].(int), md["depth_asked"].(float64), md["depth_reached"].(float64)
		if n := strings.Count(s.Context, DefaultNeedle); n != 1 {
			t.Errorf("%s: needle present %d times", s.ID, n)
		}
		if s.Length.Tokens != length-DefaultBuffer || s.Length.Tokenizer != "cl100k_base" {
			t.Errorf("%s: Length %+v, want %d cl100k_base tokens", s.ID, s.Length, length-DefaultBuffer)
		}
		if n := task.enc.Count(s.Context); n > length {
			t.Errorf("%s: context re-encodes to %d tokens > length %d", s.ID, n, length)
		}
		if reached > asked || reached < 0 {
			t.Errorf("%s: depth reached %g, asked %g", s.ID, reached, asked)
		}
		if s.Depth != reached/100 {
			t.Errorf("%s: Depth %g, reached %g", s.ID, s.Depth, reached)
		}
		before, _, _ := strings.Cut(s.Context, DefaultNeedle)
		if before != "" && asked != 100 && !strings.HasSuffix(before, ".") {
			t.Errorf("%s: needle not after a period: %q", s.ID, before[max(0, len(before)-20):])
		}
		if asked == 100 && !strings.HasSuffix(s.Context, DefaultNeedle) {
			t.Errorf("%s: depth 100 does not end with the needle", s.ID)
		}
		if asked == 0 && !strings.HasPrefix(s.Context, DefaultNeedle) {
			t.Errorf("%s: depth 0 does not start with the needle", s.ID)
		}
		if !slices.Equal(s.Targets, []string{strings.TrimSpace(DefaultNeedle)}) || s.Question != DefaultQuestion || s.MaxNewTokens != 300 {
			t.Errorf("%s: targets %q question %q", s.ID, s.Targets, s.Question)
		}
	}
	if samples[5].ID != "len=1000/depth=50" {
		t.Errorf("ID %q, want len=1000/depth=50", samples[5].ID)
	}
}

// The insertion rule, checked against a direct transcription of upstream's
// insert_needle on the token arrays.
func TestInsertionMatchesUpstream(t *testing.T) {
	task := mustTask(t, map[string]any{"haystack": opticksPath(t), "lengths": []int{1000, 4321}, "depths": []float64{0, 7, 33.3, 50, 99.104, 100}})
	if err := task.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	period := task.enc.Encode(".")
	needle := task.enc.Encode(DefaultNeedle)
	for _, s := range collect(t, task, nil) {
		length, depth := s.Metadata["length_asked"].(int), s.Metadata["depth_asked"].(float64)
		tokensContext := task.hay[:length]
		contextLength := length - 200
		if len(tokensContext)+len(needle) > contextLength {
			tokensContext = tokensContext[:contextLength-len(needle)]
		}
		var newContext []int
		if depth == 100 {
			newContext = append(slices.Clone(tokensContext), needle...)
		} else {
			ins := int(float64(len(tokensContext)) * (depth / 100))
			newContext = slices.Clone(tokensContext[:ins])
			for len(newContext) > 0 && !slices.Contains(period, newContext[len(newContext)-1]) {
				ins--
				newContext = tokensContext[:ins]
			}
			newContext = append(slices.Clone(newContext), needle...)
			newContext = append(newContext, tokensContext[ins:]...)
		}
		if want := task.enc.Decode(newContext); s.Context != want {
			t.Errorf("%s: context differs from upstream's insertion", s.ID)
		}
	}
}

func TestMultiNeedle(t *testing.T) {
	needles := []string{
		" Figs are one of the secret ingredients needed to build the perfect pizza. ",
		" Prosciutto is one of the secret ingredients needed to build the perfect pizza. ",
		" Goat cheese is one of the secret ingredients needed to build the perfect pizza. ",
	}
	task := mustTask(t, map[string]any{"haystack": opticksPath(t), "needles": needles,
		"question": "What are the secret ingredients needed to build the perfect pizza?",
		"lengths":  []int{2000, 8000}, "depths": []float64{0, 40, 100}})
	for _, s := range collect(t, task, nil) {
		last := -1
		for _, n := range needles {
			if c := strings.Count(s.Context, n); c != 1 {
				t.Fatalf("%s: needle %q present %d times", s.ID, n, c)
			}
			at := strings.Index(s.Context, n)
			if at < last {
				t.Errorf("%s: needles out of order", s.ID)
			}
			last = at
		}
		asked := s.Metadata["needle_depths_asked"].([]float64)
		reached := s.Metadata["needle_depths_reached"].([]float64)
		for i := range asked {
			if reached[i] > asked[i] {
				t.Errorf("%s: needle %d reached %g > asked %g", s.ID, i, reached[i], asked[i])
			}
		}
		if d := s.Metadata["depth_asked"].(float64); asked[0] != d || (d == 40 && math.Abs(asked[1]-60) > 1e-9) {
			t.Errorf("%s: needle depths %v", s.ID, asked)
		}
		if !slices.Equal(s.Metadata["key_facts"].([]string), []string{"figs", "prosciutto", "goat", "cheese"}) {
			t.Errorf("%s: key facts %v", s.ID, s.Metadata["key_facts"])
		}
		if s.Length.Tokens > s.Metadata["length_asked"].(int)-DefaultBuffer || !slices.Equal(s.Targets, targets(needles)) {
			t.Errorf("%s: length %d targets %q", s.ID, s.Length.Tokens, s.Targets)
		}
	}
}

func TestHaystackDirectoryInNameOrder(t *testing.T) {
	dir := t.TempDir()
	sentence := "The cat sat on the mat. "
	for name, text := range map[string]string{
		"b.txt": "SECOND. " + strings.Repeat(sentence, 200),
		"a.txt": "FIRST. " + strings.Repeat(sentence, 200),
		"c.md":  "IGNORED. ",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	task := mustTask(t, map[string]any{"haystack": dir, "lengths": []int{4000}, "depths": []float64{100}})
	s := collect(t, task, nil)[0]
	first, second := strings.Index(s.Context, "FIRST."), strings.Index(s.Context, "SECOND.")
	if first != 0 || second < 0 || strings.Contains(s.Context, "IGNORED") {
		t.Errorf("FIRST at %d, SECOND at %d: files not concatenated in name order", first, second)
	}
	// 4000 tokens need the ~3000-token haystack repeated.
	if s.Length.Tokens != 3800 || strings.Count(s.Context, "FIRST.") < 2 {
		t.Errorf("haystack not repeated to the length: %d tokens", s.Length.Tokens)
	}
}

func TestLimitAndEarlyStop(t *testing.T) {
	task := mustTask(t, map[string]any{"haystack": opticksPath(t), "lengths": []int{1000, 2000}, "depth_intervals": 5})
	if got := collect(t, task, &sdk.SamplesRequest{Limit: 7}); len(got) != 7 {
		t.Errorf("Limit 7 gave %d samples", len(got))
	}
	n := 0
	for range task.Samples(context.Background(), nil) {
		n++
		if n == 3 {
			break
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range task.Samples(ctx, nil) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: err %v", err)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	tiny := filepath.Join(dir, "tiny.txt")
	os.WriteFile(empty, []byte("  \n"), 0o644)
	os.WriteFile(tiny, []byte("Hi."), 0o644)
	hay := opticksPath(t)
	cases := []struct {
		name      string
		opts      map[string]any
		field     string
		mentions  string
		provision bool // the error shows when the haystack is read
	}{
		{"no haystack", map[string]any{}, "haystack", "required", false},
		{"missing file", map[string]any{"haystack": filepath.Join(dir, "nope.txt")}, "haystack", "nope.txt", false},
		{"dir without txt", map[string]any{"haystack": t.TempDir()}, "haystack", "no .txt", false},
		{"unknown option", map[string]any{"haystack": hay, "depth": 3}, "depth", "unknown", false},
		{"wrong type", map[string]any{"haystack": hay, "lengths": "1000"}, "lengths", "", false},
		{"depth over 100", map[string]any{"haystack": hay, "depths": []float64{50, 150}}, "depths", "150", false},
		{"negative depth", map[string]any{"haystack": hay, "depths": []float64{-1}}, "depths", "-1", false},
		{"max_depth over 100", map[string]any{"haystack": hay, "max_depth": 101}, "max_depth", "101", false},
		{"bad interval type", map[string]any{"haystack": hay, "depth_interval_type": "log"}, "depth_interval_type", "log", false},
		{"lengths and min_length", map[string]any{"haystack": hay, "lengths": []int{1000}, "min_length": 10}, "lengths", "not both", false},
		{"depths and intervals", map[string]any{"haystack": hay, "depths": []float64{1}, "depth_intervals": 3}, "depths", "not both", false},
		{"zero intervals", map[string]any{"haystack": hay, "length_intervals": 0}, "length_intervals", "", false},
		{"max below min", map[string]any{"haystack": hay, "min_length": 5000, "max_length": 4000}, "max_length", "", false},
		{"negative buffer", map[string]any{"haystack": hay, "buffer": -1}, "buffer", "", false},
		{"length below buffer", map[string]any{"haystack": hay, "lengths": []int{1000, 210}}, "lengths", "210", false},
		{"unknown tokenizer", map[string]any{"haystack": hay, "tokenizer": "cl200k"}, "tokenizer", "cl100k_base", false},
		{"needle and needles", map[string]any{"haystack": hay, "needle": "x", "needles": []string{"y"}}, "needles", "", false},
		{"empty needle", map[string]any{"haystack": hay, "needle": ""}, "needle", "empty", false},
		{"question twice", map[string]any{"haystack": hay, "question": "a?", "retrieval_question": "b?"}, "retrieval_question", "", false},
		{"empty key fact", map[string]any{"haystack": hay, "key_facts": []string{"x", " "}}, "key_facts", "", false},
		{"empty haystack", map[string]any{"haystack": empty, "lengths": []int{1000}}, "haystack", "empty", true},
		{"haystack shorter than needle", map[string]any{"haystack": tiny, "lengths": []int{1000}}, "haystack", "shorter than the needle", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task, err := New(context.Background(), sdk.MustOptions(c.opts))
			if c.provision {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				err = task.(sdk.Provisioner).Provision(context.Background())
			}
			var ce *sdk.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err %v (%T), want *sdk.ConfigError", err, err)
			}
			if ce.Field != c.field || !strings.Contains(err.Error(), c.mentions) {
				t.Errorf("err %q (field %q), want field %q mentioning %q", err, ce.Field, c.field, c.mentions)
			}
		})
	}
}

// One sample is pinned whole, so that any change to grids, insertion or
// decoding shows as a diff.
func TestSampleGolden(t *testing.T) {
	task := mustTask(t, map[string]any{"haystack": opticksPath(t), "lengths": []int{1000}, "depths": []float64{50}})
	s := collect(t, task, nil)[0]
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "len1000_depth50.golden.json")
	if *update {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if string(want) != string(out) {
		t.Errorf("sample differs from %s:\n%s", path, out)
	}
}

// Over a real gRPC connection: the conformance suite, including that the
// grid's CountSamples agrees with what Samples yields.
func TestConformance(t *testing.T) {
	set := sdk.NewSet("test", "1")
	set.RegisterTask("niah", New)
	task := sdktest.Task(t, set, "niah", map[string]any{
		"haystack": opticksPath(t), "lengths": []int{1000, 2000}, "depths": []float64{0, 50, 100},
	})
	sdktest.CheckTask(t, task)
	if n, err := task.CountSamples(context.Background(), &sdk.SamplesRequest{}); err != nil || n != 6 {
		t.Fatalf("CountSamples = %d, %v; want 6", n, err)
	}
}
