package countingstars

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
	"github.com/hayloft/hayloft/sdk/tokenizer"
)

// shared is the project's shared data directory, beside the repository.
const shared = "../../../../shared"

func sharedPath(t testing.TB, rel string) string {
	t.Helper()
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("shared data directory absent: %v", err)
	}
	return filepath.Join(shared, rel)
}

func stonePath(t testing.TB) string {
	return sharedPath(t, "data/haystack/zh/The_Story_of_the_Stone.txt")
}

func opticksPath(t testing.TB) string { return sdktest.OpticksFile(t) }

type vector struct {
	ID       string          `json:"id"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`
}

func loadVectors(t testing.TB) map[string]vector {
	t.Helper()
	raw, err := os.ReadFile(sharedPath(t, "testdata/reference/counting_stars_vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatalf("counting_stars_vectors.json: %v", err)
	}
	out := map[string]vector{}
	for _, v := range vs {
		out[v.ID] = v
	}
	return out
}

func expected[T any](t testing.TB, vs map[string]vector, id string) T {
	t.Helper()
	v, ok := vs[id]
	if !ok {
		t.Fatalf("vector %q missing", id)
	}
	var out T
	if err := json.Unmarshal(v.Expected, &out); err != nil {
		t.Fatalf("vector %q: %v", id, err)
	}
	return out
}

func newTestTask(t testing.TB, opts map[string]any) *Task {
	t.Helper()
	task, err := newTask(sdk.MustOptions(opts))
	if err != nil {
		t.Fatalf("newTask(%v): %v", opts, err)
	}
	if err := task.Provision(context.Background()); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	return task
}

func collect(t testing.TB, task sdk.Task, limit int) []*sdk.Sample {
	t.Helper()
	var out []*sdk.Sample
	for s, err := range task.Samples(context.Background(), &sdk.SamplesRequest{Limit: limit}) {
		if err != nil {
			t.Fatalf("Samples: %v", err)
		}
		out = append(out, s)
	}
	return out
}

func prompt(s *sdk.Sample) string {
	msgs := s.Render()
	if len(msgs) != 1 {
		panic("want one message, got " + strconv.Itoa(len(msgs)))
	}
	return msgs[0].Content
}

func TestTemplatesMatchVectors(t *testing.T) {
	vs := loadVectors(t)
	want := expected[map[string]string](t, vs, "cs_templates")
	a, r := 15, 16
	fill := func(tmpl string) string {
		return strings.NewReplacer("{a}", strconv.Itoa(a), "{r}", strconv.Itoa(r)).Replace(tmpl)
	}
	for _, tc := range []struct {
		key, mode, lang string
	}{
		{"ZH_searching", Acquisition, Chinese},
		{"ZH_reasoning", Reasoning, Chinese},
		{"EN_searching", Acquisition, English},
		{"EN_reasoning", Reasoning, English},
	} {
		t.Run(tc.key, func(t *testing.T) {
			if got := Separator + Question(tc.mode, tc.lang); got != want[tc.key+"_question"] {
				t.Errorf("question:\n got %q\nwant %q", got, want[tc.key+"_question"])
			}
			if got, w := StarSentence(tc.mode, tc.lang, a, r), fill(want[tc.key+"_star"]); got != w {
				t.Errorf("star:\n got %q\nwant %q", got, w)
			}
		})
	}
	if AnswerKey(English) != want["answer_json_key_EN"] || AnswerKey(Chinese) != want["answer_json_key_ZH"] {
		t.Errorf("answer keys %q, %q", AnswerKey(English), AnswerKey(Chinese))
	}
}

func TestReferenceStarLists(t *testing.T) {
	vs := loadVectors(t)
	want := expected[struct {
		A    []int `json:"a_stars"`
		R    []int `json:"r_stars"`
		Diff []int `json:"r_minus_a"`
	}](t, vs, "cs_star_lists_m32")
	c, ok := ReferenceCounts(32)
	if !ok {
		t.Fatal("no reference list for M = 32")
	}
	if !slices.Equal(c.Correct, want.A) || !slices.Equal(c.Wrong, want.R) {
		t.Fatalf("M = 32 lists differ:\n a %v\n r %v", c.Correct, c.Wrong)
	}
	for i := range c.Correct {
		if c.Wrong[i]-c.Correct[i] != want.Diff[i] {
			t.Errorf("r-a at %d = %d, want %d", i, c.Wrong[i]-c.Correct[i], want.Diff[i])
		}
	}
	// One count in each bucket (4i, 4i+3].
	sorted := slices.Sorted(slices.Values(c.Correct))
	for i, v := range sorted {
		if v <= 4*i || v > 4*i+3 {
			t.Errorf("sorted count %d = %d, outside (%d, %d]", i, v, 4*i, 4*i+3)
		}
	}
	prev := c
	for _, m := range []int{64, 128, 256, 512, 1024} {
		c, ok := ReferenceCounts(m)
		if !ok {
			t.Fatalf("no reference list for M = %d", m)
		}
		if len(c.Correct) != m || len(c.Wrong) != m {
			t.Fatalf("M = %d: lengths %d, %d", m, len(c.Correct), len(c.Wrong))
		}
		if !slices.Equal(c.Correct[:len(prev.Correct)], prev.Correct) || !slices.Equal(c.Wrong[:len(prev.Wrong)], prev.Wrong) {
			t.Errorf("M = %d does not extend the previous list", m)
		}
		for i := range c.Correct {
			if d := c.Wrong[i] - c.Correct[i]; d != 1 && d != -1 {
				t.Errorf("M = %d, star %d: wrong %d, correct %d", m, i, c.Wrong[i], c.Correct[i])
			}
		}
		prev = c
	}
	if _, ok := ReferenceCounts(48); ok {
		t.Error("M = 48 has no reference list")
	}
}

func TestGenerateCounts(t *testing.T) {
	for _, m := range []int{1, 7, 48, 100} {
		c := GenerateCounts(m, 7)
		if c.Source != "generated" || c.Seed != 7 {
			t.Errorf("M = %d: source %q seed %d", m, c.Source, c.Seed)
		}
		sorted := slices.Sorted(slices.Values(c.Correct))
		for i, v := range sorted {
			if v <= 4*i || v > 4*i+3 {
				t.Errorf("M = %d: sorted count %d = %d outside (%d, %d]", m, i, v, 4*i, 4*i+3)
			}
		}
		for i := range c.Correct {
			if d := c.Wrong[i] - c.Correct[i]; d != 1 && d != -1 {
				t.Errorf("M = %d, star %d: wrong %d, correct %d", m, i, c.Wrong[i], c.Correct[i])
			}
		}
		again := GenerateCounts(m, 7)
		if !slices.Equal(c.Correct, again.Correct) || !slices.Equal(c.Wrong, again.Wrong) {
			t.Errorf("M = %d: same seed, different lists", m)
		}
	}
	if slices.Equal(GenerateCounts(100, 1).Correct, GenerateCounts(100, 2).Correct) {
		t.Error("seeds 1 and 2 give the same list")
	}
	// The shuffle must actually shuffle: sorted order has probability 1/100!.
	if c := GenerateCounts(100, 1); slices.IsSorted(c.Correct) {
		t.Error("generated counts are not shuffled")
	}
}

func TestReferenceSizes(t *testing.T) {
	vs := loadVectors(t)
	want := expected[struct {
		EN []int `json:"EN_words"`
		ZH []int `json:"ZH_chars"`
	}](t, vs, "cs_context_sizes")
	for _, tc := range []struct {
		lang string
		want []int
	}{{English, want.EN}, {Chinese, want.ZH}} {
		task, err := newTask(sdk.MustOptions(map[string]any{"language": tc.lang, "haystack": opticksPath(t)}))
		if err != nil {
			t.Fatal(err)
		}
		if got := task.Units(); !slices.Equal(got, tc.want) {
			t.Errorf("%s sizes:\n got %v\nwant %v", tc.lang, got, tc.want)
		}
		if got := task.Lengths(); len(got) != 32 || got[0] != 4000 || got[31] != 128000 {
			t.Errorf("%s nominal lengths %v", tc.lang, got)
		}
	}
}

func TestCleanChineseGolden(t *testing.T) {
	raw, err := os.ReadFile(stonePath(t))
	if err != nil {
		t.Fatal(err)
	}
	got := CleanChinese(string(raw))
	sum := sha256.Sum256([]byte(got))
	// From testdata/golden.py's clean_zh, upstream's own steps in Python.
	const wantLen, wantSum = 863043, "093b4663a734d27569daa48d710e3afa2e50f9a99cf93b9fa7f9a4c0310d7eb0"
	if n := utf8.RuneCountInString(got); n != wantLen || hex.EncodeToString(sum[:]) != wantSum {
		t.Errorf("cleaned haystack: %d code points, sha256 %x; want %d, %s", n, sum, wantLen, wantSum)
	}
}

func TestCleanChinese(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"  第一回 甄士隐\r\n\u3000\u3000此开卷第一回也。\r\n", "第一回甄士隐此开卷第一回也。"},
		{"------------\n\n石头记", "石头记"},
		{"lt;lt;石头记gt;gt;", "石头记"},
		{`a\b"c"（中）`, `\（中）`},
		{"行\x1c\r末", "行末"},
	} {
		if got := CleanChinese(tc.in); got != tc.want {
			t.Errorf("CleanChinese(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type goldenPrompt struct {
	Language   string `json:"language"`
	Mode       string `json:"mode"`
	Length     int    `json:"length"`
	Codepoints int    `json:"codepoints"`
	Sha256     string `json:"sha256"`
}

// TestReferenceGeneration checks every reference prompt, ZH on the reference
// novel and EN on Go's copy of Opticks, against the slow literal rebuild of
// testdata/golden.py, and the ZH lengths against the upstream notebook's
// printed output.
func TestReferenceGeneration(t *testing.T) {
	raw, err := os.ReadFile("testdata/reference.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden []goldenPrompt
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	vs := loadVectors(t)
	zhLens := expected[map[string][]int](t, vs, "cs_zh_generated_question_lengths")
	for _, tc := range []struct {
		lang, mode, path string
		vector           []int
	}{
		{Chinese, Acquisition, stonePath(t), zhLens["len_codepoints_question_searching"]},
		{Chinese, Reasoning, stonePath(t), zhLens["len_codepoints_question_reasoning"]},
		{English, Acquisition, opticksPath(t), nil},
		{English, Reasoning, opticksPath(t), nil},
	} {
		t.Run(tc.lang+"_"+tc.mode, func(t *testing.T) {
			task := newTestTask(t, map[string]any{"language": tc.lang, "mode": tc.mode, "haystack": tc.path})
			samples := collect(t, task, 0)
			var want []goldenPrompt
			for _, g := range golden {
				if g.Language == tc.lang && g.Mode == tc.mode {
					want = append(want, g)
				}
			}
			if len(samples) != 32 || len(want) != 32 {
				t.Fatalf("%d samples, %d golden prompts; want 32", len(samples), len(want))
			}
			for k, s := range samples {
				p := prompt(s)
				n := utf8.RuneCountInString(p)
				if tc.vector != nil && n != tc.vector[k] {
					t.Errorf("size %d: %d code points, the upstream run printed %d", k, n, tc.vector[k])
				}
				sum := sha256.Sum256([]byte(p))
				if n != want[k].Codepoints || hex.EncodeToString(sum[:]) != want[k].Sha256 {
					t.Errorf("size %d (length %d): %d code points sha256 %x; golden %d %s",
						k, want[k].Length, n, sum, want[k].Codepoints, want[k].Sha256)
				}
				checkStars(t, task, s)
			}
		})
	}
}

// checkStars checks the invariants every sample keeps: M star sentences at
// the recorded offsets, in order, the last at the very end of the context,
// the question after the separator, and the metadata scorers rely on.
func checkStars(t *testing.T, task *Task, s *sdk.Sample) {
	t.Helper()
	o := task.Options()
	pos, _ := s.Metadata["star_positions"].([]int)
	if len(pos) != o.Needles {
		t.Fatalf("%s: %d star positions, want %d", s.ID, len(pos), o.Needles)
	}
	c := task.Counts()
	for i, p := range pos {
		st := StarSentence(o.Mode, o.Language, c.Correct[i], c.Wrong[i])
		if !strings.HasPrefix(s.Context[p:], st) {
			t.Fatalf("%s: star %d not at byte %d", s.ID, i, p)
		}
		if i > 0 && p <= pos[i-1] {
			t.Fatalf("%s: star %d at %d, not after star %d at %d", s.ID, i, p, i-1, pos[i-1])
		}
	}
	m := len(pos)
	tail := s.Context[pos[m-1]+len(StarSentence(o.Mode, o.Language, c.Correct[m-1], c.Wrong[m-1])):]
	if o.Sizing == SizingReference && o.Language == Chinese {
		// Upstream's character arithmetic stops at M·⌊j/M⌋ plus its drift,
		// so up to a step of text may follow the last star.
		if n, step := utf8.RuneCountInString(tail), s.Metadata["size"].(int)/m; n >= step {
			t.Errorf("%s: %d characters after the last star, a step is %d", s.ID, n, step)
		}
	} else if tail != "" {
		t.Errorf("%s: the context does not end with the last star: %q follows", s.ID, head(tail))
	}
	if want := s.Context + Separator + Question(o.Mode, o.Language); prompt(s) != want {
		t.Errorf("%s: the prompt is not context + separator + question", s.ID)
	}
	refs, _ := s.Metadata["references"].(map[string]any)
	if got, _ := refs["counts"].([]int); !slices.Equal(got, c.Correct) {
		t.Errorf("%s: references.counts %v", s.ID, refs["counts"])
	}
	if _, has := refs["wrong"]; has != (o.Mode == Reasoning) {
		t.Errorf("%s: references.wrong present = %v in %s mode", s.ID, has, o.Mode)
	}
	if s.Length.Tokenizer != "cl100k_base" || s.Length.Tokens <= 0 {
		t.Errorf("%s: length %+v", s.ID, s.Length)
	}
	if s.Language != o.Language || s.Subtask != o.Mode || s.Metadata["needles"] != o.Needles {
		t.Errorf("%s: language %q subtask %q needles %v", s.ID, s.Language, s.Subtask, s.Metadata["needles"])
	}
}

func TestEnglishOpticksSpacing(t *testing.T) {
	for _, mode := range []string{Acquisition, Reasoning} {
		task := newTestTask(t, map[string]any{"mode": mode, "haystack": opticksPath(t), "sizes": []int{4000, 64000, 128000}})
		enc, err := tokenizer.Get("cl100k_base")
		if err != nil {
			t.Fatal(err)
		}
		for k, s := range collect(t, task, 0) {
			checkStars(t, task, s)
			if n := enc.Count(s.Context); s.Length.Tokens != n {
				t.Errorf("%s: Length.Tokens %d, counted %d", s.ID, s.Length.Tokens, n)
			}
			j := task.Units()[k]
			step := j / 32
			pos := s.Metadata["star_positions"].([]int)
			c := task.Counts()
			// Upstream's arithmetic: star i follows (i+1)·step + 2i words,
			// so runs between stars are step+2 words, the first step, and
			// the last star takes whatever is left up to j.
			prevEnd, prevAt := 0, 0
			for i, p := range pos {
				words := 0
				if run := s.Context[prevEnd:p]; run != "" {
					words = len(strings.Split(run, " "))
				}
				at := min((i+1)*step+2*i, j)
				if words != at-prevAt {
					t.Errorf("%s: %d words before star %d, want %d", s.ID, words, i, at-prevAt)
				}
				prevEnd = p + len(StarSentence(mode, English, c.Correct[i], c.Wrong[i]))
				prevAt = at
			}
		}
	}
}

// rebuildWords is upstream's English insertion taken literally: for every
// star, split the text on " ", join the units before the computed index,
// append the sentence, join the rest.
func rebuildWords(words []string, j int, stars []string) string {
	text := strings.Join(words[:j], " ")
	step := j / len(stars)
	for i, s := range stars {
		units := strings.Split(text, " ")
		at := min((i+1)*step+len(strings.Split(s, " "))*i, len(units))
		text = strings.Join(units[:at], " ") + s + strings.Join(units[at:], " ")
	}
	return text
}

func TestSprinkleWordsMatchesLiteralRebuild(t *testing.T) {
	raw, err := os.ReadFile(opticksPath(t))
	if err != nil {
		t.Fatal(err)
	}
	opticks := strings.Split(CleanEnglish(string(raw)), " ")
	odd := strings.Split("a  b c   d e f g h i j k l m n o p q r s t u v w x y z", " ")
	for _, tc := range []struct {
		name  string
		words []string
		j, m  int
		mode  string
	}{
		{"opticks-3200", opticks, 3200, 32, Acquisition},
		{"opticks-9600-reasoning", opticks, 9600, 32, Reasoning},
		{"opticks-5000-m64", opticks, 5000, 64, Acquisition},
		{"opticks-777-m7", opticks, 777, 7, Reasoning},
		{"empty-units", odd, len(odd), 3, Acquisition},
		{"step-1", odd, 5, 5, Acquisition},
		{"crowded", odd, 20, 8, Reasoning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := countsFor(tc.m, 1)
			var stars []string
			for i := range tc.m {
				stars = append(stars, StarSentence(tc.mode, English, c.Correct[i], c.Wrong[i]))
			}
			got := sprinkleWords(tc.words, tc.j, stars)
			if want := rebuildWords(tc.words, tc.j, stars); got.Context != want {
				t.Fatalf("fast placement differs from the literal rebuild:\n got %q\nwant %q", head(got.Context), head(want))
			}
			for i, p := range got.Positions {
				if !strings.HasPrefix(got.Context[p:], stars[i]) {
					t.Errorf("star %d not at %d", i, p)
				}
			}
		})
	}
}

func head(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func TestTokenSizing(t *testing.T) {
	enc, err := tokenizer.Get("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lang, mode, path string
		sizes            []int
		needles          int
	}{
		{English, Acquisition, opticksPath(t), []int{1000, 8000, 32000}, 32},
		{English, Reasoning, opticksPath(t), []int{5000}, 64},
		{Chinese, Acquisition, stonePath(t), []int{1200, 10000}, 32},
		{Chinese, Reasoning, stonePath(t), []int{20000}, 32},
	} {
		t.Run(tc.lang+"_"+tc.mode, func(t *testing.T) {
			task := newTestTask(t, map[string]any{
				"language": tc.lang, "mode": tc.mode, "haystack": tc.path,
				"sizing": "tokens", "sizes": tc.sizes, "needles": tc.needles,
			})
			samples := collect(t, task, 0)
			if len(samples) != len(tc.sizes) {
				t.Fatalf("%d samples, want %d", len(samples), len(tc.sizes))
			}
			for k, s := range samples {
				checkStars(t, task, s)
				if !utf8.ValidString(s.Context) {
					t.Errorf("%s: context is not valid UTF-8", s.ID)
				}
				if n := enc.Count(s.Context); n != tc.sizes[k] || s.Length.Tokens != n {
					t.Errorf("%s: %d tokens (recorded %d), want exactly %d", s.ID, n, s.Length.Tokens, tc.sizes[k])
				}
				// Haystack runs between stars are equal in tokens, give or
				// take the seam and character-boundary adjustments.
				pos := s.Metadata["star_positions"].([]int)
				c := task.Counts()
				var runs []int
				prev := 0
				for i, p := range pos {
					runs = append(runs, enc.Count(s.Context[prev:p]))
					prev = p + len(StarSentence(tc.mode, tc.lang, c.Correct[i], c.Wrong[i]))
				}
				// The last two runs absorb the fix-up to the exact size.
				body := runs[:len(runs)-2]
				med := slices.Sorted(slices.Values(body))[len(body)/2]
				for i, r := range runs {
					tol := 3
					if i >= len(runs)-2 {
						tol = 10
					}
					if r < med-tol || r > med+tol {
						t.Errorf("%s: run %d has %d tokens, the median run %d", s.ID, i, r, med)
					}
				}
			}
		})
	}
}

func TestGeneratedCountsRecorded(t *testing.T) {
	task := newTestTask(t, map[string]any{"haystack": opticksPath(t), "needles": 40, "seed": 99, "sizes": []int{8000}, "mode": Reasoning})
	s := collect(t, task, 0)[0]
	checkStars(t, task, s)
	if s.Metadata["counts_source"] != "generated" || s.Metadata["seed"] != int64(99) {
		t.Errorf("metadata %v, %v", s.Metadata["counts_source"], s.Metadata["seed"])
	}
	if want := GenerateCounts(40, 99); !slices.Equal(task.Counts().Correct, want.Correct) {
		t.Error("counts are not GenerateCounts(40, 99)")
	}
	ref := newTestTask(t, map[string]any{"haystack": opticksPath(t), "needles": 64, "sizes": []int{8000}})
	s = collect(t, ref, 0)[0]
	if _, has := s.Metadata["seed"]; has || s.Metadata["counts_source"] != "reference" {
		t.Errorf("M = 64 metadata: %v", s.Metadata)
	}
}

func TestSamplesLimitAndStop(t *testing.T) {
	task := newTestTask(t, map[string]any{"haystack": opticksPath(t), "max_length": 16000, "sizes": 8})
	if got := collect(t, task, 3); len(got) != 3 || got[2].Metadata["nominal_length"] != 6000 {
		t.Fatalf("limit 3: %d samples", len(got))
	}
	n := 0
	for _, err := range task.Samples(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 2 {
			break
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for s, err := range task.Samples(ctx, nil) {
		if !errors.Is(err, context.Canceled) || s != nil {
			t.Fatalf("cancelled: got %v, %v", s, err)
		}
	}
	ids := map[string]bool{}
	for _, s := range collect(t, task, 0) {
		if ids[s.ID] {
			t.Errorf("duplicate id %s", s.ID)
		}
		ids[s.ID] = true
	}
}

func TestConfigErrors(t *testing.T) {
	opticks := opticksPath(t)
	missing := filepath.Join(t.TempDir(), "nowhere.txt")
	short := filepath.Join(t.TempDir(), "short.txt")
	if err := os.WriteFile(short, []byte(strings.Repeat("word ", 500)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		opts  map[string]any
		field string
		msg   string
	}{
		{"missing haystack", map[string]any{"haystack": missing}, "haystack", missing},
		{"no haystack", map[string]any{}, "haystack", "required"},
		{"bad mode", map[string]any{"haystack": opticks, "mode": "searching"}, "mode", "searching"},
		{"bad language", map[string]any{"haystack": opticks, "language": "fr"}, "language", "fr"},
		{"bad sizing", map[string]any{"haystack": opticks, "sizing": "bytes"}, "sizing", "bytes"},
		{"unknown option", map[string]any{"haystack": opticks, "needle": 3}, "needle", "unknown"},
		{"sizes and lengths", map[string]any{"haystack": opticks, "sizes": 4, "lengths": []int{4000}}, "lengths", "not both"},
		{"sizes not a list", map[string]any{"haystack": opticks, "sizes": "many"}, "sizes", "many"},
		{"duplicate size", map[string]any{"haystack": opticks, "sizes": []int{4000, 4000}}, "sizes", "twice"},
		{"fewer units than needles", map[string]any{"haystack": opticks, "sizes": []int{30}}, "sizes", "needles"},
		{"bad needles", map[string]any{"haystack": opticks, "needles": -2}, "needles", "positive"},
		{"short haystack", map[string]any{"haystack": short}, "haystack", "words"},
		{"bad tokenizer", map[string]any{"haystack": opticks, "tokenizer": "nonesuch", "sizes": []int{4000}}, "tokenizer", "nonesuch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task, err := newTask(sdk.MustOptions(tc.opts))
			if err == nil {
				err = task.Provision(context.Background())
			}
			var ce *sdk.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v (%T), want *sdk.ConfigError", err, err)
			}
			if ce.Field != tc.field || !strings.Contains(ce.Msg, tc.msg) {
				t.Errorf("got field %q msg %q; want field %q and %q in the message", ce.Field, ce.Msg, tc.field, tc.msg)
			}
		})
	}
}

func TestLengthsAlias(t *testing.T) {
	task, err := New(context.Background(), sdk.MustOptions(map[string]any{"haystack": opticksPath(t), "lengths": []int{8000, 4000}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := task.(*Task).Units(); !slices.Equal(got, []int{6400, 3200}) {
		t.Errorf("units %v", got)
	}
}

// TestConformance runs the SDK's task contract checks in process and over a
// real gRPC connection, where metadata travels as JSON.
func TestConformance(t *testing.T) {
	opts := map[string]any{"haystack": opticksPath(t), "mode": Reasoning, "max_length": 32000, "sizes": 4}
	sdktest.CheckTask(t, newTestTask(t, opts))

	set := sdk.NewSet("test", "v0")
	set.RegisterTask(Name, New)
	remote := sdktest.Task(t, set, Name, opts)
	sdktest.CheckTask(t, remote)
	local := collect(t, newTestTask(t, opts), 0)
	k := 0
	for s, err := range remote.Samples(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if s.ID != local[k].ID || s.Context != local[k].Context || prompt(s) != prompt(local[k]) || s.Length != local[k].Length {
			t.Errorf("sample %d differs over gRPC", k)
		}
		k++
	}
	if k != len(local) {
		t.Errorf("%d samples over gRPC, %d in process", k, len(local))
	}
	_, err := sdktest.Configure(t, set, sdk.KindTask, Name, map[string]any{"haystack": filepath.Join(t.TempDir(), "absent.txt")})
	var ce *sdk.ConfigError
	if !errors.As(err, &ce) || ce.Field != "haystack" {
		t.Errorf("missing haystack over gRPC: %v", err)
	}
}

// Upstream's character drift can put a star inside an earlier sentence when
// the step is short; that must be an error, not a broken sample.
func TestChineseCollisionIsAnError(t *testing.T) {
	task := newTestTask(t, map[string]any{"language": "zh", "mode": Reasoning, "haystack": stonePath(t), "needles": 1024, "sizes": []int{44000}})
	for s, err := range task.Samples(context.Background(), nil) {
		if err == nil || s != nil || !strings.Contains(err.Error(), "lands inside") || !strings.Contains(err.Error(), "44000") {
			t.Fatalf("got %v, %v; want an error naming the length", s, err)
		}
	}
	// The same M with a roomy step is fine.
	roomy := newTestTask(t, map[string]any{"language": "zh", "mode": Reasoning, "haystack": stonePath(t), "needles": 64, "sizes": []int{128000}})
	for _, s := range collect(t, roomy, 0) {
		checkStars(t, roomy, s)
	}
}
