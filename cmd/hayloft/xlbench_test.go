package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
	"github.com/hayloft/hayloft/plugins/tasks/xlbench"
	"github.com/hayloft/hayloft/plugins/tasks/xlbench/xlbenchgen"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

// Fiction-T through a real OpenAI-compatible server: the first run
// translates every chunk, question and answer; the second asks the server
// nothing and writes the same data, from the journal.
func TestTransformFictionT(t *testing.T) {
	srv, err := openaitest.Start(openaitest.Options{Answer: func(req openaitest.ChatRequest) string {
		// A stand-in translator: marks the text so the test can see it
		// went through the model.
		prompt, text, _ := strings.Cut(req.Messages[len(req.Messages)-1].Content, "\n\n")
		switch {
		case strings.HasPrefix(prompt, "List every name"): // Fiction-R extraction
			return "Light\nColours\nAtlantis"
		case strings.HasPrefix(prompt, "For each line"): // Fiction-R renaming
			var out []string
			for _, e := range strings.Split(text, "\n") {
				out = append(out, e+"\tNew"+e)
			}
			return strings.Join(out, "\n")
		}
		return "〔译〕" + text
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	data := filepath.Join(dir, "in", "x.jsonl")
	os.MkdirAll(filepath.Dir(data), 0o755)
	if _, err := xlbenchgen.Write(data, xlbenchgen.Config{English: sdktest.Opticks(t), DocUnits: 3000, PerSubtask: 1,
		Scenarios: []string{"fiction", "paper"}}); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, fmt.Sprintf(`
model "openai" "translator" {
  base_url        = %q
  model           = "fake-model"
  temperature     = 0
  max_concurrency = 4
}
`, srv.BaseURL()))
	out := filepath.Join(dir, "out", "zh.jsonl")
	args := []string{"transform", cfg, "--model", "model.openai.translator", "--in", data, "--out", out, "--store", filepath.Join(dir, "j.db"), "--chunk-chars", "1500"}
	r := hayloft(t, dir, args...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	first := srv.Requests("/v1/chat/completions")
	if first < 10 {
		t.Fatalf("first run sent %d requests", first)
	}
	want, _ := os.ReadFile(out)
	r = hayloft(t, dir, args...)
	if r.code != 0 {
		t.Fatalf("second run: exit %d: %s", r.code, r.stderr)
	}
	if n := srv.Requests("/v1/chat/completions"); n != first {
		t.Fatalf("second run sent %d more requests, want 0", n-first)
	}
	if !strings.Contains(r.stdout, " 0 requests sent") {
		t.Fatalf("second run's report: %s", r.stdout)
	}
	got, _ := os.ReadFile(out)
	if string(got) != string(want) {
		t.Fatal("the second run wrote different data")
	}
	// The output is XLBench data: fiction in Chinese, marked as Fiction-T,
	// papers untouched.
	task, err := xlbench.New(context.Background(), sdk.MustOptions(map[string]any{"path": out}))
	if err != nil {
		t.Fatal(err)
	}
	fiction, paper := 0, 0
	for s, err := range task.Samples(context.Background(), &sdk.SamplesRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		switch s.Metadata["scenario"] {
		case "fiction":
			fiction++
			if s.Language != "zh" || s.Metadata["variant"] != "fiction_t(en→zh, model.openai.translator)" ||
				!strings.HasPrefix(s.Question, "〔译〕") || !strings.Contains(s.Context, "〔译〕") {
				t.Fatalf("fiction sample %s not translated: %s %v %.60q", s.ID, s.Language, s.Metadata["variant"], s.Question)
			}
			if s.Subtask == "chapter_counting" && strings.Contains(s.Targets[0], "〔译〕") {
				t.Fatalf("a numeric answer was translated: %q", s.Targets)
			}
		case "paper":
			paper++
			if s.Language != "en" || s.Metadata["variant"] != "original" || strings.Contains(s.Context, "〔译〕") {
				t.Fatalf("paper sample %s changed", s.ID)
			}
		}
	}
	if fiction != 13 || paper != 7 {
		t.Fatalf("%d fiction, %d paper samples", fiction, paper)
	}

	// Fiction-R's table, extracted by the same model, twice.
	table := filepath.Join(dir, "out", "table.tsv")
	rargs := []string{"transform", cfg, "--variant", "fiction_r", "--model", "model.openai.translator", "--in", data, "--out", table, "--store", filepath.Join(dir, "j.db")}
	before := srv.Requests("/v1/chat/completions")
	if r := hayloft(t, dir, rargs...); r.code != 0 {
		t.Fatalf("fiction_r: exit %d: %s", r.code, r.stderr)
	}
	sent := srv.Requests("/v1/chat/completions") - before
	if r := hayloft(t, dir, rargs...); r.code != 0 || srv.Requests("/v1/chat/completions")-before != sent {
		t.Fatalf("fiction_r second run: exit %d, %d more requests", r.code, srv.Requests("/v1/chat/completions")-before-sent)
	}
	pairs, err := xlbench.LoadTable(table)
	if err != nil || len(pairs) != 2 || pairs[0] != (xlbench.Pair{From: "Colours", To: "NewColours"}) {
		t.Fatalf("table %v (%v): want Colours and Light renamed, Atlantis (not in the text) left out", pairs, err)
	}
}

// examples/xlbench.hcl runs offline on generated data: full context and
// both RAG readings, with the paper's tables in every row's aggregate.
func TestXLBenchExample(t *testing.T) {
	zh, err := os.ReadFile("../../../shared/data/haystack/zh/The_Story_of_the_Stone.txt")
	if err != nil {
		t.Skipf("Chinese haystack absent: %v", err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "xlbench.jsonl")
	if _, err := xlbenchgen.Write(data, xlbenchgen.Config{English: sdktest.Opticks(t), Chinese: string(zh), DocUnits: 3000, PerSubtask: 3}); err != nil {
		t.Fatal(err)
	}
	r := hayloftIO(t, repoRoot(t), []string{"XLBENCH_DATA=" + data}, "", "run", "examples/xlbench.hcl", "--json", "--store", filepath.Join(dir, "j.db"))
	res := decodeResult(t, r)
	if len(res.Evals) != 4 {
		t.Fatalf("%d eval rows, want 3 for xlbench and 1 for xlbench_icl", len(res.Evals))
	}
	for _, ev := range res.Evals {
		m := ev.Metrics["scorer.xlbench.paper"]
		if m == nil || ev.Errors != 0 {
			t.Fatalf("%s/%s: metrics %v, errors %d", ev.Name, ev.Retriever, ev.Metrics, ev.Errors)
		}
		tables, err := sdk.TablesOf(m.Details)
		if err != nil || len(tables) == 0 {
			t.Fatalf("%s/%s: no tables (%v)", ev.Name, ev.Retriever, err)
		}
		if ev.Name == "xlbench" && (ev.Samples != 120 || tables[0].ID != "xlbench.fiction.en") {
			t.Fatalf("%s/%s: %d samples, first table %s", ev.Name, ev.Retriever, ev.Samples, tables[0].ID)
		}
		// Every row holds more than one scenario and language, whose means
		// the spec never pools: no one value, and the JSON says null.
		if m.HasValue() || m.Details[sdk.NoValueKey] == nil {
			t.Errorf("%s/%s: value %v, want none (means %v)", ev.Name, ev.Retriever, m.Value, m.Details["means"])
		}
	}
}
