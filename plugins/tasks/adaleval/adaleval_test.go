package adaleval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
	"github.com/hayloft/hayloft/sdk/tokenizer"
)

const shipped = "../../../../shared/data/adaleval/stackselect_1k_first100.json"

func shippedPath(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(shipped); err != nil {
		t.Skipf("shipped Ada-LEval items absent: %v", err)
	}
	return shipped
}

func mustTask(t testing.TB, opts map[string]any) *Task {
	t.Helper()
	task, err := newTask(sdk.MustOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	return task
}

func collect(t testing.TB, task *Task, limit int) []*sdk.Sample {
	t.Helper()
	var out []*sdk.Sample
	for s, err := range task.Samples(context.Background(), &sdk.SamplesRequest{Limit: limit}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// The shipped items render to the prompts upstream's template gives: the
// golden sha256s were computed in Python from the vectors' template
// (testdata/golden.py), not from this code.
func TestShippedItemsMatchUpstreamPrompts(t *testing.T) {
	task := mustTask(t, map[string]any{"kind": "bestanswer", "path": shippedPath(t)})
	raw, err := os.ReadFile("testdata/stackselect_1k_first100.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden []struct {
		QuestionID string   `json:"question_id"`
		SHA256     string   `json:"sha256"`
		NumChoice  int      `json:"num_choice"`
		Answer     string   `json:"answer"`
		Tags       []string `json:"tags"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	samples := collect(t, task, 0)
	if len(samples) != len(golden) || len(golden) != 100 {
		t.Fatalf("%d samples, %d golden; want 100", len(samples), len(golden))
	}
	for i, s := range samples {
		g := golden[i]
		msgs := s.Render()
		sum := sha256.Sum256([]byte(msgs[0].Content))
		if len(msgs) != 1 || hex.EncodeToString(sum[:]) != g.SHA256 {
			t.Errorf("item %d (%s): prompt sha256 %x, want %s", i, g.QuestionID, sum, g.SHA256)
		}
		md := s.Metadata
		if md[MetaNumChoice] != g.NumChoice || md[MetaAnswer] != g.Answer || md["question_id"] != g.QuestionID ||
			md[MetaSetting] != "1k" || !slices.Equal(md["tags"].([]string), g.Tags) || len(s.Choices) != g.NumChoice ||
			s.Targets[0] != g.Answer || md[MetaPosition] != int(g.Answer[1]-'0') && len(g.Answer) == 2 {
			t.Errorf("item %d: metadata %v, want %+v", i, md, g)
		}
	}
	sdktest.CheckTask(t, task)
}

func TestSubsetAndLimit(t *testing.T) {
	p := shippedPath(t)
	for _, c := range []struct {
		opts map[string]any
		want int
	}{
		{map[string]any{"kind": "bestanswer", "path": p}, 100},
		{map[string]any{"kind": "bestanswer", "path": p, "subset": "less"}, 100},
		{map[string]any{"kind": "bestanswer", "path": p, "limit": 7}, 7},
		{map[string]any{"kind": "bestanswer", "path": p, "limit": 7, "positions": []string{"front", "rear"}}, 21},
	} {
		task := mustTask(t, c.opts)
		n, err := task.CountSamples(context.Background(), &sdk.SamplesRequest{})
		if err != nil || n != c.want || len(collect(t, task, 0)) != c.want {
			t.Errorf("%v: count %d, %v; want %d", c.opts, n, err, c.want)
		}
	}
	if subsetSize(SubsetNormal, Setting{"16k", 16000}) != 1000 || subsetSize(SubsetNormal, Setting{"32k", 32000}) != 200 ||
		subsetSize(SubsetLess, Setting{"16k", 16000}) != 200 || subsetSize(SubsetLess, Setting{"128k", 128000}) != 50 {
		t.Error("subset sizes differ from upstream's 1000/200 and 200/50")
	}
}

func TestPositionVariants(t *testing.T) {
	task := mustTask(t, map[string]any{"kind": "bestanswer", "path": shippedPath(t), "limit": 20, "positions": []string{"front", "middle", "rear"}})
	samples := collect(t, task, 0)
	for i := 0; i < len(samples); i += 4 {
		orig := samples[i]
		n := orig.Metadata[MetaNumChoice].(int)
		truthText := answerText(orig)
		for k, want := range map[string]int{"front": 1, "middle": (n + 1) / 2, "rear": n} {
			v := samples[i+1+slices.Index([]string{"front", "middle", "rear"}, k)]
			if v.Metadata[MetaVariant] != k || v.Metadata[MetaPosition] != want || v.Targets[0] != fmt.Sprintf("A%d", want) {
				t.Fatalf("%s: variant %v position %v, want %s at %d", v.ID, v.Metadata[MetaVariant], v.Metadata[MetaPosition], k, want)
			}
			if answerText(v) != truthText || v.Question != orig.Question || len(v.Choices) != n {
				t.Errorf("%s: the accepted answer or the question changed", v.ID)
			}
		}
	}
}

// answerText is the text of a sample's accepted answer.
func answerText(s *sdk.Sample) string { return choiceText(s, s.Metadata[MetaPosition].(int)) }

func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReleasedTSortBothAnswerEncodings(t *testing.T) {
	dir := t.TempDir()
	body := "Before: b\n\n\nPart 1: one\n\n\nPart 2: two\n\n\nPart 3: three\n\n\nPart 4: four\n\n\nAfter: a\n\n\n"
	items := []map[string]any{
		{"prompt": TSortInstruction + body, "answer": []int{4, 1, 3, 2}, "book_id": 7, "para_offset": 12},
		{"prompt": TSortInstruction + body, "answer": "[2, 1, 4, 3]", "book_id": "8", "para_offset": 0},
	}
	writeJSON(t, dir, "textsort_2k.json", items)
	writeJSON(t, dir, "textsort_4k.json", items[:1])
	task := mustTask(t, map[string]any{"kind": "tsort", "path": dir})
	samples := collect(t, task, 0)
	if len(samples) != 3 {
		t.Fatalf("%d samples, want 3", len(samples))
	}
	wants := [][]int{{4, 1, 3, 2}, {2, 1, 4, 3}, {4, 1, 3, 2}}
	for i, s := range samples {
		if got := s.Render()[0].Content; got != TSortInstruction+body {
			t.Errorf("%s: prompt not byte-identical", s.ID)
		}
		if !slices.Equal(s.Metadata[MetaAnswer].([]int), wants[i]) || s.Targets[0] != FormatOrder(wants[i]) || len(s.Choices) != 24 {
			t.Errorf("%s: answer %v target %v, want %v", s.ID, s.Metadata[MetaAnswer], s.Targets, wants[i])
		}
	}
	if samples[2].Metadata[MetaSetting] != "4k" || samples[0].Metadata["book_id"] != "7" {
		t.Errorf("metadata %v / %v", samples[0].Metadata, samples[2].Metadata)
	}
}

// Every bad input is an error naming the file and the item (or the
// setting), found before any sample is produced.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	good := map[string]any{"question_id": "1", "question": "q", "all_answers": []string{"a", "b"}, "answer": "A1", "tags": []string{"x"}}
	bad := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range good {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	malformed := filepath.Join(dir, "stackselect_1k_malformed.json")
	if err := os.WriteFile(malformed, []byte(`[{"question_id": "1", "question": "q", "all_answers": ["a"], "answer": "A1"}, {"question": `), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.txt")
	if err := os.WriteFile(short, []byte("One paragraph.\n\nAnother one.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		opts map[string]any
		want []string
	}{
		{"malformed", map[string]any{"kind": "bestanswer", "path": malformed}, []string{malformed, "item 1", "malformed"}},
		{"missing field", map[string]any{"kind": "bestanswer", "path": writeJSON(t, dir, "stackselect_2k_missing.json", []any{good, bad("question", nil)})},
			[]string{"stackselect_2k_missing.json", "item 1", "missing field question"}},
		{"out of range", map[string]any{"kind": "bestanswer", "path": writeJSON(t, dir, "stackselect_4k_range.json", []any{good, good, bad("answer", "A3")})},
			[]string{"stackselect_4k_range.json", "item 2", "out of range"}},
		{"tsort answer", map[string]any{"kind": "tsort", "path": writeJSON(t, dir, "textsort_2k_bad.json", []any{map[string]any{"prompt": "p", "answer": []int{1, 2, 2, 4}}})},
			[]string{"textsort_2k_bad.json", "item 0", "permutation"}},
		{"tsort missing", map[string]any{"kind": "tsort", "path": writeJSON(t, dir, "textsort_8k_bad.json", []any{map[string]any{"answer": []int{1, 2, 3, 4}}})},
			[]string{"textsort_8k_bad.json", "item 0", "missing field prompt"}},
		{"no setting", map[string]any{"kind": "tsort", "path": writeJSON(t, dir, "sorted.json", []any{})}, []string{"sorted.json", "setting"}},
		{"too short", map[string]any{"kind": "tsort", "source": short, "settings": []string{"2k"}}, []string{short, "too short", "setting 2k"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task, err := newTask(sdk.MustOptions(c.opts))
			if err != nil {
				t.Fatal(err)
			}
			err = task.Provision(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			for s, err := range task.Samples(context.Background(), nil) {
				if s != nil || err == nil {
					t.Errorf("Samples yielded %v, %v after a bad input", s, err)
				}
			}
		})
	}
	for _, opts := range []map[string]any{
		{"kind": "sort", "path": shipped},
		{"kind": "tsort"},
		{"kind": "tsort", "path": shipped, "source": shipped},
		{"kind": "tsort", "path": shipped, "subset": "tiny"},
		{"kind": "tsort", "source": shipped, "settings": []string{"6k"}},
		{"kind": "tsort", "path": shipped, "positions": []string{"front"}},
		{"kind": "bestanswer", "path": filepath.Join(dir, "absent.json")},
	} {
		if _, err := newTask(sdk.MustOptions(opts)); err == nil {
			t.Errorf("%v: no config error", opts)
		}
	}
}

func TestParseTags(t *testing.T) {
	for in, want := range map[string][]string{
		`["python", "excel"]`:             {"python", "excel"},
		`"['python', 'excel', 'pandas']"`: {"python", "excel", "pandas"},
		`"[]"`:                            nil,
		`null`:                            nil,
	} {
		got, err := parseTags(json.RawMessage(in))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("parseTags(%s) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseTags(json.RawMessage(`"python"`)); err == nil {
		t.Error("a bare string parsed as tags")
	}
}

func cl100k(t testing.TB) *tokenizer.Encoding {
	enc, err := tokenizer.Get(Tokenizer)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// TSort cases built from Opticks and two Chinese novels obey Table 11: each
// part within its limit, the prompt within the bound, whole paragraphs
// only, no chapter heading, and the answer restores the book's order.
func TestTSortBuilder(t *testing.T) {
	enc := cl100k(t)
	books := map[string]string{
		"opticks": sdktest.OpticksFile(t),
		"stone":   "../../../../shared/data/haystack/zh/The_Story_of_the_Stone.txt",
		"journey": "../../../../shared/data/haystack/zh/Journey_to_the_West.txt",
	}
	for name, path := range books {
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(path); err != nil {
				t.Skip(err)
			}
			settings := []string{"2k", "4k", "8k", "16k"}
			task := mustTask(t, map[string]any{"kind": "tsort", "source": path, "settings": settings, "limit": 6, "seed": 3})
			raw, _ := os.ReadFile(path)
			paras := paragraphs(string(raw))
			whole := "\n" + strings.Join(paras, "\n") + "\n"
			perSetting := map[string]int{}
			var answers []string
			for _, s := range collect(t, task, 0) {
				setting := s.Metadata[MetaSetting].(string)
				perSetting[setting]++
				if _, ok := s.Metadata["setting_dropped_over_bound"].(int); !ok || s.Metadata[MetaSource] != "built" {
					t.Errorf("%s: metadata %v lacks the setting's drop count", s.ID, s.Metadata)
				}
				lim := tsortTable[setting]
				prompt := s.Render()[0].Content
				if n := enc.Count(prompt); n > lim.Bound {
					t.Errorf("%s: %d tokens over the bound %d", s.ID, n, lim.Bound)
				}
				before, parts, after := splitBuilt(t, prompt)
				for k, p := range append([]string{before, after}, parts...) {
					limit := lim.Segment
					if k < 2 {
						limit = max(lim.Before, lim.After)
					}
					if n := enc.Count(p); n > limit || p == "" {
						t.Errorf("%s: part %d has %d tokens, limit %d", s.ID, k, n, limit)
					}
					for _, para := range strings.Split(p, "\n") {
						if chapterHeading().MatchString(para) {
							t.Errorf("%s: chapter heading %q left in", s.ID, para)
						}
					}
				}
				answer := s.Metadata[MetaAnswer].([]int)
				answers = append(answers, FormatOrder(answer))
				ordered := []string{before}
				for _, k := range answer {
					ordered = append(ordered, parts[k-1])
				}
				ordered = append(ordered, after)
				// Whole paragraphs in the book's order: the restored text is
				// a run of paragraphs, bounded by paragraph breaks.
				if !strings.Contains(whole, "\n"+strings.Join(ordered, "\n")+"\n") {
					t.Errorf("%s: answer %v does not restore a run of whole paragraphs", s.ID, answer)
				}
			}
			for _, st := range settings {
				if perSetting[st] == 0 {
					t.Errorf("setting %s: no case", st)
				}
			}
			again := mustTask(t, map[string]any{"kind": "tsort", "source": path, "settings": settings, "limit": 6, "seed": 3})
			other := mustTask(t, map[string]any{"kind": "tsort", "source": path, "settings": settings, "limit": 6, "seed": 4})
			var same, diff []string
			for _, s := range collect(t, again, 0) {
				same = append(same, s.Targets[0])
			}
			for _, s := range collect(t, other, 0) {
				diff = append(diff, s.Targets[0])
			}
			if !slices.Equal(same, answers) || slices.Equal(diff, answers) {
				t.Error("the build is not determined by the seed")
			}
		})
	}
}

// splitBuilt takes a built prompt apart.
func splitBuilt(t *testing.T, prompt string) (string, []string, string) {
	t.Helper()
	body, ok := strings.CutPrefix(prompt, TSortInstruction)
	if !ok {
		t.Fatal("built prompt does not start with the instruction")
	}
	fields := strings.Split(strings.TrimSuffix(body, "\n\n\n"), "\n\n\n")
	if len(fields) != 6 {
		t.Fatalf("built prompt has %d parts", len(fields))
	}
	strip := func(s, prefix string) string {
		out, ok := strings.CutPrefix(s, prefix)
		if !ok {
			t.Fatalf("part %q lacks %q", s[:min(len(s), 20)], prefix)
		}
		return out
	}
	var parts []string
	for k := range 4 {
		parts = append(parts, strip(fields[1+k], fmt.Sprintf("Part %d: ", k+1)))
	}
	return strip(fields[0], "Before: "), parts, strip(fields[5], "After: ")
}

// dump writes a synthetic Stack Exchange–style dump: questions on a few
// tag families, answers of random words, some accepted answers with images.
func dump(t *testing.T, questions int) string {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the a value list map array index thread socket buffer error return type class method call file path string number loop")
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	families := [][]string{{"python", "pandas", "numpy"}, {"go", "goroutine", "channels"}, {"c", "pointers", "malloc"}}
	var items []map[string]any
	for i := range questions {
		fam := families[i%len(families)]
		tags := []string{fam[0], fam[1+r.IntN(2)]}
		if i%7 == 0 {
			tags = []string{fam[0], "unrelated" + fmt.Sprint(i)}
		}
		n := 2 + r.IntN(4)
		answers := make([]string, n)
		for k := range answers {
			answers[k] = fmt.Sprintf("q%d-a%d ", i, k) + text(40+r.IntN(120))
		}
		acc := r.IntN(n)
		if i%11 == 0 {
			answers[acc] += " ![diagram](https://example.com/d.png)"
		}
		items = append(items, map[string]any{"question_id": fmt.Sprint(i), "question": text(30), "all_answers": answers,
			"answer": fmt.Sprintf("A%d", acc+1), "tags": fmt.Sprintf("%q", tags)})
	}
	return writeJSON(t, t.TempDir(), "dump.json", items)
}

func TestBestAnswerBuilder(t *testing.T) {
	enc := cl100k(t)
	path := dump(t, 600)
	raw, _ := os.ReadFile(path)
	var qs []struct {
		ID      string   `json:"question_id"`
		Answers []string `json:"all_answers"`
		Answer  string   `json:"answer"`
		Tags    string   `json:"tags"`
	}
	if err := json.Unmarshal(raw, &qs); err != nil {
		t.Fatal(err)
	}
	owner := map[string]int{} // answer text → question index
	for i, q := range qs {
		for _, a := range q.Answers {
			owner[a] = i
		}
	}
	tagsOf := func(i int) []string {
		tags, err := parseTags(json.RawMessage(fmt.Sprintf("%q", qs[i].Tags)))
		if err != nil {
			t.Fatal(err)
		}
		return tags
	}
	settings := []string{"1k", "2k", "4k", "32k"}
	task := mustTask(t, map[string]any{"kind": "bestanswer", "source": path, "settings": settings, "limit": 15, "seed": 9})
	sets := map[string][]string{}
	for _, s := range collect(t, task, 0) {
		setting := s.Metadata[MetaSetting].(string)
		qid := s.Metadata["question_id"].(string)
		sets[setting] = append(sets[setting], qid)
		if s.Metadata[MetaFillRule] != BestAnswerFillRule {
			t.Errorf("%s: fill rule %v not recorded", s.ID, s.Metadata[MetaFillRule])
		}
		qi := slices.IndexFunc(qs, func(q struct {
			ID      string   `json:"question_id"`
			Answers []string `json:"all_answers"`
			Answer  string   `json:"answer"`
			Tags    string   `json:"tags"`
		}) bool {
			return q.ID == qid
		})
		var acc int
		fmt.Sscanf(qs[qi].Answer, "A%d", &acc)
		if truth := answerText(s); truth != qs[qi].Answers[acc-1] || strings.Contains(truth, "![") {
			t.Errorf("%s: the accepted answer is not the question's text-only accepted answer", s.ID)
		}
		if n := enc.Count(s.Render()[0].Content); n > s.Metadata["setting_tokens"].(int) {
			t.Errorf("%s: %d tokens over the setting", s.ID, n)
		}
		// Distractors: the question's own answers first, then answers of
		// questions sharing enough tags.
		ultra := s.Metadata["setting_tokens"].(int) >= 32000
		own := true
		for k := 1; k <= len(s.Choices); k++ {
			if k == s.Metadata[MetaPosition].(int) {
				continue
			}
			txt := choiceText(s, k)
			oi, ok := owner[txt]
			if !ok {
				t.Fatalf("%s: A%d is no answer of the dump", s.ID, k)
			}
			if oi == qi {
				if !own {
					t.Errorf("%s: an own answer after another question's", s.ID)
				}
				continue
			}
			own = false
			shared := 0
			for _, a := range tagsOf(qi) {
				if slices.Contains(tagsOf(oi), a) {
					shared++
				}
			}
			if ultra && shared < 1 || !ultra && float64(shared) < 0.4*float64(len(tagsOf(qi))) {
				t.Errorf("%s: A%d from question %d shares %d of %v", s.ID, k, oi, shared, tagsOf(qi))
			}
		}
	}
	for _, st := range []string{"2k", "4k"} {
		if !slices.Equal(sets[st], sets["1k"]) || len(sets[st]) != 15 {
			t.Errorf("question set at %s differs from 1k's: %v vs %v", st, sets[st], sets["1k"])
		}
	}
	if len(sets["32k"]) == 0 {
		t.Error("no 32k case")
	}
}

// choiceText is the text of answer k in a BestAnswer sample.
func choiceText(s *sdk.Sample, k int) string {
	_, rest, _ := strings.Cut(s.Context, fmt.Sprintf("A%d:\n\n", k))
	if i := strings.Index(rest, fmt.Sprintf("\n\nA%d:\n\n", k+1)); i >= 0 {
		return rest[:i]
	}
	return strings.TrimSuffix(rest, "\n\n")
}

func TestParagraphsDropHeadings(t *testing.T) {
	text := "CHAPTER IV\n\nIt was a dark night,\nand cold.\n\n第一回 甄士隐梦幻识通灵\n\n    此开卷第一回也。\n\n------------\n\nPart of the light.\n\nBOOK II.\n"
	want := []string{"It was a dark night,\nand cold.", "此开卷第一回也。", "Part of the light."}
	if got := paragraphs(text); !slices.Equal(got, want) {
		t.Errorf("paragraphs = %q, want %q", got, want)
	}
}

// A file too large to keep is read again when streamed, to the same samples.
func TestStreamingMatchesKept(t *testing.T) {
	opts := map[string]any{"kind": "bestanswer", "path": shippedPath(t), "positions": []string{"rear"}}
	kept := collect(t, mustTask(t, opts), 0)
	task, err := newTask(sdk.MustOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	task.keep = 0
	streamed := collect(t, task, 0)
	p, _ := task.plan()
	if p.files[0].ba != nil || len(streamed) != len(kept) || len(kept) != 200 {
		t.Fatalf("streamed %d samples, kept %d (file kept: %v)", len(streamed), len(kept), p.files[0].ba != nil)
	}
	for i := range kept {
		a, _ := json.Marshal(kept[i])
		b, _ := json.Marshal(streamed[i])
		if string(a) != string(b) {
			t.Fatalf("sample %d differs when streamed", i)
		}
	}
	if got := collect(t, task, 5); len(got) != 5 {
		t.Errorf("limit 5 gave %d samples", len(got))
	}
}

func TestTruncationVariants(t *testing.T) {
	task := mustTask(t, map[string]any{"kind": "bestanswer", "path": shippedPath(t), "limit": 3, "positions": []string{"rear"}, "truncations": []int{2000, 500}})
	samples := collect(t, task, 0)
	n, _ := task.CountSamples(context.Background(), &sdk.SamplesRequest{})
	if len(samples) != 12 || n != 12 {
		t.Fatalf("%d samples, count %d; want 3 cases × 4", len(samples), n)
	}
	for i := 0; i < len(samples); i += 4 {
		orig := samples[i]
		for k, w := range []int{2000, 500} {
			v := samples[i+2+k]
			if v.Window != w || v.Metadata[MetaVariant] != VariantTruncated(w) || v.ID != orig.ID+"-"+VariantTruncated(w) ||
				v.Context != orig.Context || v.Targets[0] != orig.Targets[0] || orig.Window != 0 {
				t.Errorf("%s: window %d variant %v; want the original fitted to %d", v.ID, v.Window, v.Metadata[MetaVariant], w)
			}
		}
	}
	sdktest.CheckTask(t, task)
	if VariantTruncated(2500) != "truncated-2500" || VariantTruncated(8000) != "truncated-8k" {
		t.Error("variant names")
	}
	if _, err := newTask(sdk.MustOptions(map[string]any{"kind": "tsort", "path": shippedPath(t), "truncations": []int{0}})); err == nil {
		t.Error("a zero window accepted")
	}
}

func TestPerplexityCandidates(t *testing.T) {
	dir := t.TempDir()
	body := "Before: b\n\n\nPart 1: one\n\n\nPart 2: two\n\n\nPart 3: three\n\n\nPart 4: four\n\n\nAfter: a\n\n\n"
	path := writeJSON(t, dir, "textsort_2k.json", []any{map[string]any{"prompt": TSortInstruction + body, "answer": []int{2, 1, 4, 3}}})
	task := mustTask(t, map[string]any{"kind": "tsort", "path": path, "perplexity": true})
	samples := collect(t, task, 0)
	n, _ := task.CountSamples(context.Background(), &sdk.SamplesRequest{})
	if len(samples) != 24 || n != 24 {
		t.Fatalf("%d samples, count %d; want 24", len(samples), n)
	}
	seen := map[string]bool{}
	for _, s := range samples {
		order := s.Metadata[MetaCandidate].([]int)
		seen[FormatOrder(order)] = true
		want := TSortInstruction + body
		for i, k := range order {
			if i > 0 {
				want += "\n"
			}
			want += []string{"one", "two", "three", "four"}[k-1]
		}
		if s.Render()[0].Content != want || s.Metadata[MetaCase] != "tsort-2k-0" || s.Targets[0] != "[2, 1, 4, 3]" {
			t.Errorf("%s: scored text %q", s.ID, s.Render()[0].Content[len(TSortInstruction):])
		}
	}
	if len(seen) != 24 {
		t.Errorf("%d distinct candidates", len(seen))
	}
	sdktest.CheckTask(t, task)
	bad := writeJSON(t, dir, "textsort_4k.json", []any{map[string]any{"prompt": "no markers", "answer": []int{2, 1, 4, 3}}})
	tb, err := newTask(sdk.MustOptions(map[string]any{"kind": "tsort", "path": bad, "perplexity": true}))
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Provision(context.Background()); err == nil || !strings.Contains(err.Error(), "textsort_4k.json: item 0") || !strings.Contains(err.Error(), "Part 1:") {
		t.Errorf("prompt without markers: %v", err)
	}
	for _, opts := range []map[string]any{
		{"kind": "bestanswer", "path": shipped, "perplexity": true},
		{"kind": "tsort", "path": path, "perplexity": true, "truncations": []int{2000}},
	} {
		if _, err := newTask(sdk.MustOptions(opts)); err == nil {
			t.Errorf("%v accepted", opts)
		}
	}
}
