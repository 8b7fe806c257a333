package xlbench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/hayloft/hayloft/plugins/tasks/xlbench"
	"github.com/hayloft/hayloft/plugins/tasks/xlbench/xlbenchgen"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

// writeLines writes records (maps, or raw strings for malformed lines) as
// JSONL and returns the path.
func writeLines(t testing.TB, dir string, lines ...any) string {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		switch l := l.(type) {
		case string:
			b.WriteString(l)
		default:
			raw, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(raw)
		}
		b.WriteByte('\n')
	}
	p := filepath.Join(dir, "data.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func rec(id, scenario, subtask, lang, doc string, extra ...any) map[string]any {
	r := map[string]any{"id": id, "scenario": scenario, "subtask": subtask, "language": lang,
		"doc_id": doc, "question": "Q " + id, "answer": "A " + id}
	for i := 0; i+1 < len(extra); i += 2 {
		r[extra[i].(string)] = extra[i+1]
	}
	return r
}

func samples(t testing.TB, opts map[string]any) []*sdk.Sample {
	t.Helper()
	task, err := xlbench.New(context.Background(), sdk.MustOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	var out []*sdk.Sample
	for s, err := range task.Samples(context.Background(), &sdk.SamplesRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// Fifty questions on one document hold one copy of it: every sample's
// context points at the same bytes, whether the document came inline
// (repeated on every line, or given once) or from a context_file, and the
// loaded data set keeps no more alive than that one copy.
func TestDocumentHeldOnce(t *testing.T) {
	doc := sdktest.Opticks(t)[:200_000]
	for _, how := range []string{"inline_every_line", "inline_first_line", "context_file"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "doc.txt"), []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			var lines []any
			for i := range 50 {
				r := rec(fmt.Sprint(i), "fiction", "question_answering", "en", "d1")
				switch {
				case how == "inline_every_line", how == "inline_first_line" && i == 0:
					r["context"] = doc
				case how == "context_file":
					r["context_file"] = "doc.txt"
				}
				lines = append(lines, r)
			}
			got := samples(t, map[string]any{"path": writeLines(t, dir, lines...)})
			if len(got) != 50 {
				t.Fatalf("%d samples, want 50", len(got))
			}
			for _, s := range got {
				if s.Context != doc {
					t.Fatalf("sample %s: context differs from the document", s.ID)
				}
				if unsafe.StringData(s.Context) != unsafe.StringData(got[0].Context) {
					t.Fatalf("sample %s holds its own copy of the document", s.ID)
				}
			}
			// Identity is not enough: a document that is a substring of
			// the line it was read from, or a loader that keeps a line
			// buffer or a second copy, would share its bytes and still
			// hold more. What the loaded data set keeps alive is one
			// document and the questions' small fields.
			before := liveHeap()
			ds, err := xlbench.Load(filepath.Join(dir, "data.jsonl"), false)
			if err != nil {
				t.Fatal(err)
			}
			held := liveHeap() - before
			if len(ds.Docs) != 1 {
				t.Fatalf("%d documents held, want 1", len(ds.Docs))
			}
			if limit := uint64(len(doc)) * 3 / 2; held > limit {
				t.Fatalf("the loaded data set holds %d bytes for a %d-byte document and 50 questions, want < %d", held, len(doc), limit)
			}
			runtime.KeepAlive(ds)
		})
	}
}

// liveHeap is the heap still reachable, after two collections: the first
// moves what sync.Pools hold (encoding/json's buffers) aside, the second
// frees it.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestFieldVariants(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "law.txt"), []byte("第一条 测试。"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := writeLines(t, dir,
		rec("1", "fiction", "chapter_counting", "en", "d1", "context", "One two three.", "answer", 12),
		rec("2", "fiction", "content_retrieval", "en", "d1", "answer", []any{"x", 3}),
		map[string]any{"id": 3, "scenario": "paper", "subtask": "rating_score", "language": "en", "doc_id": 7,
			"context": "A paper.", "question": "Rate it.", "answer": 6.5, "extra_field": true},
		rec("4", "law", "multiple_choice_qa", "zh", "d3", "context_file", "law.txt", "choices", []string{"甲", "乙"}, "answer", "AB"),
		"",
		rec("5", "fiction", "question_answering", "en", "d1", "examples", []any{map[string]any{"question": "q", "answer": 1}}),
	)
	got := samples(t, map[string]any{"path": p})
	want := []struct {
		id      string
		targets []string
		ctx     string
		length  int
	}{
		{"1", []string{"12"}, "One two three.", 3},
		{"2", []string{"x", "3"}, "One two three.", 3},
		{"3", []string{"6.5"}, "A paper.", 2},
		{"4", []string{"AB"}, "第一条 测试。", 6},
		{"5", []string{"A 5"}, "One two three.", 3},
	}
	if len(got) != len(want) {
		t.Fatalf("%d samples, want %d", len(got), len(want))
	}
	for i, w := range want {
		s := got[i]
		if s.ID != w.id || !slices.Equal(s.Targets, w.targets) || s.Context != w.ctx || s.Metadata["doc_length"] != w.length {
			t.Errorf("sample %d: id %q targets %q context %q length %v; want %+v", i, s.ID, s.Targets, s.Context, s.Metadata["doc_length"], w)
		}
	}
	if m := got[3].Metadata; m["family"] != "OU" || m["scenario"] != "law" || m["doc_length_unit"] != "chars" || got[3].Subtask != "multiple_choice_qa" {
		t.Errorf("law metadata: %v", m)
	}
	if got[0].Metadata["family"] != "OU" || got[1].Metadata["family"] != "MR" || got[2].Metadata["family"] != "TG" {
		t.Errorf("families: %v %v %v", got[0].Metadata, got[1].Metadata, got[2].Metadata)
	}
}

// The JSON form (an array of the same objects) loads like JSONL and names
// a bad item by its line.
func TestJSONArray(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "data.json")
	body := "[\n" + `{"id":"1","scenario":"law","subtask":"legal_number_qa","language":"zh","doc_id":"d","context":"文本","question":"几条？","answer":"3"},` +
		"\n" + `{"id":"2","scenario":"law","subtask":"legal_number_qa","language":"zh","doc_id":"d","question":"几条？","answer":"4"}` + "\n]\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	got := samples(t, map[string]any{"path": p})
	if len(got) != 2 || got[1].Context != "文本" || got[1].Targets[0] != "4" {
		t.Fatalf("got %+v", got)
	}
	bad := strings.Replace(body, `"language":"zh","doc_id":"d","question"`, `"language":"en","doc_id":"d","question"`, 1)
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := xlbench.Load(p, false); err == nil || !strings.Contains(err.Error(), p+":3 (item 1)") {
		t.Fatalf("error %v, want it to name %s:3 (item 1)", err, p)
	}
}

func TestBadLines(t *testing.T) {
	good := rec("g", "fiction", "question_answering", "en", "d", "context", "text")
	cases := []struct {
		name string
		line any
		want string
	}{
		{"not json", `{"id": 1,`, "not a valid record"},
		{"not an object", `[1, 2]`, "not a valid record"},
		{"no id", rec("", "fiction", "question_answering", "en", "d"), `"id" is required`},
		{"bad scenario", rec("x", "poetry", "question_answering", "en", "d"), `scenario "poetry"`},
		{"subtask of another scenario", rec("x", "paper", "chapter_counting", "en", "d"), `not a paper subtask`},
		{"paper in chinese", rec("x", "paper", "paper_review", "zh", "e", "context", "t"), `paper texts are [en] only`},
		{"law in english", rec("x", "law", "case_adjudication", "en", "e", "context", "t"), `law texts are [zh] only`},
		{"fiction in french", rec("x", "fiction", "question_answering", "fr", "e", "context", "t"), `language "fr"`},
		{"no question", rec("x", "fiction", "question_answering", "en", "d", "question", ""), `"question" is required`},
		{"no answer", rec("x", "fiction", "question_answering", "en", "d", "answer", nil), `"answer" is required`},
		{"object answer", rec("x", "fiction", "question_answering", "en", "d", "answer", map[string]any{}), `field "answer"`},
		{"rating not a number", rec("x", "paper", "rating_score", "en", "e", "context", "t", "answer", "good"), `wants a number`},
		{"choices missing", rec("x", "law", "multiple_choice_qa", "zh", "e", "context", "t"), `"choices" is required`},
		{"both contexts", rec("x", "fiction", "question_answering", "en", "e", "context", "t", "context_file", "f"), `both set`},
		{"no document yet", rec("x", "fiction", "question_answering", "en", "e"), `has no document yet`},
		{"no doc_id", rec("x", "fiction", "question_answering", "en", ""), `"doc_id" is required`},
		{"context differs", rec("x", "fiction", "question_answering", "en", "d", "context", "other"), `context differs`},
		{"doc language changes", rec("x", "fiction", "question_answering", "zh", "d"), `is zh here but en earlier`},
		{"missing context_file", rec("x", "fiction", "question_answering", "en", "e", "context_file", "absent.txt"), `absent.txt`},
		{"bad examples", rec("x", "fiction", "question_answering", "en", "d", "examples", "no"), `"examples"`},
		{"repeated id", rec("g", "fiction", "question_answering", "en", "d"), `id "g" repeats the id of `},
		// A context long enough to be decoded outside encoding/json
		// (jsonstr.Decode) is refused alike.
		{"bad escape in a long context", `{"id":"x","scenario":"fiction","subtask":"question_answering","language":"en","doc_id":"e","question":"q","answer":"a","context":"` +
			strings.Repeat("long ", 20_000) + `\q"}`, `field "context": invalid escape`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := writeLines(t, dir, good, "", c.line, rec("after", "fiction", "question_answering", "en", "d"))
			_, err := xlbench.Load(p, false)
			if err == nil || !strings.Contains(err.Error(), p+":3: ") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %s:3: … %s", err, p, c.want)
			}
			ds, err := xlbench.Load(p, true)
			if err != nil {
				t.Fatal(err)
			}
			if ds.Skipped != 1 || len(ds.Items) != 2 || ds.Items[1].ID != "after" {
				t.Fatalf("skip: skipped %d, items %d", ds.Skipped, len(ds.Items))
			}
			got := samples(t, map[string]any{"path": p, "skip_bad_lines": true})
			if len(got) != 2 || got[0].Metadata["skipped_lines"] != 1 {
				t.Fatalf("samples under skip_bad_lines: %d, metadata %v", len(got), got[0].Metadata)
			}
		})
	}
}

func TestFilters(t *testing.T) {
	p := generated(t, xlbenchgen.Config{DocUnits: 300, PerSubtask: 1})
	all := samples(t, map[string]any{"path": p})
	if len(all) != 27+13 { // fiction has 13 subtasks in two languages
		t.Fatalf("%d samples, want 40", len(all))
	}
	cases := []struct {
		opts map[string]any
		n    int
	}{
		{map[string]any{"scenarios": []string{"law"}}, 7},
		{map[string]any{"languages": []string{"zh"}}, 13 + 7},
		{map[string]any{"subtasks": []string{"content_retrieval"}}, 3},
		{map[string]any{"subtasks": []string{"content_retrieval"}, "scenarios": []string{"paper"}}, 1},
		{map[string]any{"scenarios": []string{"fiction"}, "languages": []string{"en"}}, 13},
	}
	for _, c := range cases {
		c.opts["path"] = p
		if got := samples(t, c.opts); len(got) != c.n {
			t.Errorf("%v: %d samples, want %d", c.opts, len(got), c.n)
		}
	}
	for _, bad := range []map[string]any{
		{"subtasks": []string{"chapter_countin"}}, {"scenarios": []string{"poems"}}, {"languages": []string{"fr"}},
		{"layout": "grid"}, {"mode": "few"}, {"shots": 2},
	} {
		bad["path"] = p
		if _, err := xlbench.New(context.Background(), sdk.MustOptions(bad)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	_, err := xlbench.New(context.Background(), sdk.MustOptions(map[string]any{"path": p, "subtasks": []string{"chapter_countin"}}))
	if err == nil || !strings.Contains(err.Error(), `did you mean "chapter_counting"`) {
		t.Errorf("typo error %v", err)
	}
}

func generated(t testing.TB, c xlbenchgen.Config) string {
	t.Helper()
	c.English = sdktest.Opticks(t)
	zh, err := os.ReadFile("../../../../shared/data/haystack/zh/The_Story_of_the_Stone.txt")
	if err != nil {
		t.Skipf("Chinese haystack absent: %v", err)
	}
	c.Chinese = string(zh)
	p := filepath.Join(t.TempDir(), "xlbench.jsonl")
	if _, err := xlbenchgen.Write(p, c); err != nil {
		t.Fatal(err)
	}
	return p
}

// The zero-shot prompt is the paper's sentence, byte for byte, in the
// inline layout; the lines layout and the choices are golden files.
func TestTemplate(t *testing.T) {
	dir := t.TempDir()
	p := writeLines(t, dir,
		rec("1", "fiction", "question_answering", "en", "d", "context", "THE TEXT", "question", "Who?"),
		rec("2", "law", "multiple_choice_qa", "zh", "z", "context", "法律", "question", "哪些？", "choices", []string{"甲", "B. 乙"}, "answer", "A"),
	)
	inline := samples(t, map[string]any{"path": p})
	want := "Please read the following text, and answer related question: THE TEXT Question: Who? Directly output your answer without any additional analysis or explanation."
	if got := inline[0].Render(); len(got) != 1 || got[0].Role != "user" || got[0].Content != want {
		t.Fatalf("zero-shot prompt\n got %q\nwant %q", got, want)
	}
	if inline[0].Metadata["layout"] != "inline" || inline[0].Metadata["mode"] != "zero_shot" {
		t.Errorf("layout not recorded: %v", inline[0].Metadata)
	}
	lines := samples(t, map[string]any{"path": p, "layout": "lines"})
	// ICL: the question's own examples are its shots.
	icl := writeLines(t, t.TempDir(), rec("3", "paper", "terminology_explanation", "en", "p", "context", "PAPER", "question", "What is X?",
		"examples", []any{map[string]any{"question": "What is Y?", "answer": "A why."}, map[string]any{"question": "What is Z?", "answer": "A zed."}}))
	iclInline := samples(t, map[string]any{"path": icl, "mode": "icl"})
	iclLines := samples(t, map[string]any{"path": icl, "mode": "icl", "layout": "lines"})
	var b strings.Builder
	for _, set := range [][]*sdk.Sample{inline, lines, iclInline, iclLines} {
		for _, s := range set {
			fmt.Fprintf(&b, "=== %s %s\n%s\n", s.ID, s.Metadata["layout"], s.Render()[0].Content)
		}
	}
	golden(t, "template.golden", b.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs:\n got:\n%s\nwant:\n%s", p, got, want)
	}
}

// ICL: two shots from the same document and subtask, not evaluated
// themselves; the choice depends on the seed alone; icl_eval subsamples.
func TestICL(t *testing.T) {
	p := generated(t, xlbenchgen.Config{DocUnits: 400, Docs: 2, PerSubtask: 6, Scenarios: []string{"paper"}})
	base := map[string]any{"path": p, "mode": "icl", "seed": 7}
	got := samples(t, base)
	if len(got) != 2*7*(6-2) {
		t.Fatalf("%d samples, want %d", len(got), 2*7*4)
	}
	ds, err := xlbench.Load(p, false)
	if err != nil {
		t.Fatal(err)
	}
	byQuestion := map[string]*xlbench.Item{}
	for _, it := range ds.Items {
		byQuestion[it.Doc.ID+"|"+it.Subtask.Name+"|"+it.Question+"|"+it.Answers[0]] = it
	}
	evaluated := map[string]bool{}
	for _, s := range got {
		evaluated[s.ID] = true
	}
	for _, s := range got {
		if s.Metadata["shots"] != 2 {
			t.Fatalf("sample %s: %v shots", s.ID, s.Metadata["shots"])
		}
		content := s.Messages[0].Content
		if strings.Count(content, "Answer: ") != 2 {
			t.Fatalf("sample %s: template without two shots: %q", s.ID, content)
		}
	}
	// Shots are questions of the same document and subtask, not evaluated.
	for _, it := range ds.Items {
		if evaluated[it.ID] {
			continue
		}
		if _, ok := byQuestion[it.Doc.ID+"|"+it.Subtask.Name+"|"+it.Question+"|"+it.Answers[0]]; !ok {
			t.Fatalf("shot %s unknown", it.ID)
		}
	}
	again := samples(t, base)
	other := samples(t, map[string]any{"path": p, "mode": "icl", "seed": 8})
	same, differ := true, false
	for i := range got {
		same = same && got[i].ID == again[i].ID && got[i].Messages[0].Content == again[i].Messages[0].Content
		differ = differ || i >= len(other) || got[i].ID != other[i].ID
	}
	if !same {
		t.Fatal("same seed, different shots")
	}
	if !differ {
		t.Error("seeds 7 and 8 chose the same shots everywhere")
	}
	sub := samples(t, map[string]any{"path": p, "mode": "icl", "seed": 7, "icl_eval": 3, "shots": 1})
	if len(sub) != 7*3 {
		t.Fatalf("icl_eval 3: %d samples, want 21", len(sub))
	}
}

// A (document, subtask) group too small for its shots is left out; the
// others still run.
func TestICLSmallGroup(t *testing.T) {
	dir := t.TempDir()
	p := writeLines(t, dir,
		rec("a1", "paper", "section_summarization", "en", "d", "context", "Text."),
		rec("a2", "paper", "section_summarization", "en", "d"),
		rec("b1", "paper", "paper_review", "en", "d"),
		rec("b2", "paper", "paper_review", "en", "d"),
		rec("b3", "paper", "paper_review", "en", "d"),
	)
	got := samples(t, map[string]any{"path": p, "mode": "icl"})
	if len(got) != 1 || !strings.HasPrefix(got[0].ID, "b") {
		t.Fatalf("got %d samples", len(got))
	}
}

// Long contexts repeated on every line are recognised without decoding
// them again; the fast path must agree with encoding/json on every
// spelling of the same text and refuse a different one.
func TestLongRepeatedContexts(t *testing.T) {
	doc := strings.Repeat(`He said "stop" \ and é went on; `, 4000) // > 64 KiB, quotes and backslashes
	plain, _ := json.Marshal(doc)
	escaped := strings.ReplaceAll(string(plain), "é", `\u00e9`) // the same text, spelled otherwise
	line := func(id, ctx string, extra string) string {
		return `{"id":"` + id + `","scenario":"fiction","subtask":"question_answering","language":"en","doc_id":"d","question":"q","answer":"a",` + extra + `"context" : ` + ctx + `}`
	}
	cases := []struct {
		name  string
		lines []any
		err   string
	}{
		{"same bytes", []any{line("1", string(plain), ""), line("2", string(plain), "")}, ""},
		{"other spelling", []any{line("1", string(plain), ""), line("2", escaped, "")}, ""},
		{"different text", []any{line("1", string(plain), ""), line("2", strings.Replace(string(plain), "stop", "halt", 1), "")}, "context differs"},
		{"with context_file", []any{line("1", string(plain), `"context_file":"x.txt",`)}, "both set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeLines(t, t.TempDir(), c.lines...)
			ds, err := xlbench.Load(p, false)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ds.Docs) != 1 || ds.Docs["d"].Text != doc || ds.Items[1].Doc != ds.Items[0].Doc {
				t.Fatalf("document not decoded once and shared: %d docs, equal %v", len(ds.Docs), ds.Docs["d"].Text == doc)
			}
		})
	}
}
