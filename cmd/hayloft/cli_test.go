package main

// CLI tests: every subcommand through the real binary, checking exit codes,
// what goes to stdout and what the error on stderr says.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hayloft/hayloft/kernel/runner"
)

// hayloftIO runs the binary in dir with extra environment variables and
// stdin.
func hayloftIO(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, hayloftBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("hayloft %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// sharedDir is the shared specs and reference vectors next to the
// repository; tests that need them skip when it is absent.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "..", "shared")
	if _, err := os.Stat(filepath.Join(dir, "testdata", "reference")); err != nil {
		t.Skipf("reference vectors not available: %v", err)
	}
	return dir
}

// check is one expectation on a finished command.
type check struct {
	code   int      // exit code
	stdout []string // substrings stdout must hold
	stderr []string // substrings stderr must hold
	// stdoutOK, when set, checks stdout's content.
	stdoutOK func(out string) error
	// bug, when set, names a known defect in non-test code that makes this
	// expectation fail: while it does, the case is skipped with this note.
	bug string
}

// problems lists every way r misses the expectation.
func (c check) problems(r result) []string {
	if r.code != c.code {
		return []string{fmt.Sprintf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, c.code, r.stdout, r.stderr)}
	}
	var out []string
	for _, w := range c.stdout {
		if !strings.Contains(r.stdout, w) {
			out = append(out, fmt.Sprintf("stdout lacks %q:\n%s", w, r.stdout))
		}
	}
	for _, w := range c.stderr {
		if !strings.Contains(r.stderr, w) {
			out = append(out, fmt.Sprintf("stderr lacks %q:\n%s", w, r.stderr))
		}
	}
	if c.stdoutOK != nil {
		if err := c.stdoutOK(r.stdout); err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

func (c check) verify(t *testing.T, r result) {
	t.Helper()
	p := c.problems(r)
	switch {
	case len(p) > 0 && c.bug != "":
		t.Skipf("bug: %s\n%s", c.bug, strings.Join(p, "\n"))
	case len(p) > 0:
		t.Fatal(strings.Join(p, "\n"))
	case c.bug != "":
		t.Logf("passes now; the bug marker can go: %s", c.bug)
	}
}

// badFlagExit: parseInterspersed returns the flag package's error unwrapped,
// so an unknown flag exits 1 rather than 2 like every other usage error.
const badFlagExit = "cmd/hayloft.parseInterspersed: an unknown flag exits 1, not 2 as other usage errors do"

// negativeLimit: cmdRun and cmdGen accept --limit -1 and treat it as no
// limit instead of rejecting it.
const negativeLimit = "cmd/hayloft.cmdRun/cmdGen: --limit -1 is accepted silently and means no limit"

func wantTokens(ids []int) func(out string) error {
	return func(out string) error {
		var got struct {
			IDs   []int `json:"ids"`
			Count int   `json:"count"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			return fmt.Errorf("stdout is not JSON: %v\n%s", err, out)
		}
		if got.IDs == nil || fmt.Sprint(got.IDs) != fmt.Sprint(ids) || got.Count != len(ids) {
			return fmt.Errorf("got ids %v count %d, want %v count %d", got.IDs, got.Count, ids, len(ids))
		}
		return nil
	}
}

func TestTokens(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  check
	}{
		{"ids", []string{"--encoding", "cl100k_base"}, "hello world", check{stdoutOK: wantTokens([]int{15339, 1917})}},
		{"default encoding is cl100k_base", nil, "hello world", check{stdoutOK: wantTokens([]int{15339, 1917})}},
		{"count", []string{"--count", "--encoding", "cl100k_base"}, "hello world", check{stdoutOK: func(out string) error {
			if out != "2\n" {
				return fmt.Errorf("--count printed %q, want the count alone", out)
			}
			return nil
		}}},
		{"empty input", nil, "", check{stdoutOK: wantTokens([]int{})}},
		{"empty input, count", []string{"--count", "--encoding", "o200k_base"}, "", check{stdoutOK: func(out string) error {
			if out != "0\n" {
				return fmt.Errorf("--count printed %q, want 0", out)
			}
			return nil
		}}},
		{"unknown encoding", []string{"--encoding", "nope"}, "hello", check{code: 2, stderr: []string{`"nope"`, "cl100k_base", "o200k_base"}}},
		{"invalid UTF-8", nil, "ab\xffcd", check{code: 1, stderr: []string{"not valid UTF-8", "offset 2"}}},
		{"unknown flag", []string{"--encodnig", "cl100k_base"}, "x", check{code: 2, stderr: []string{"encodnig"}, bug: badFlagExit}},
		{"file argument", []string{"--count", "text.txt"}, "hello", check{code: 2, stderr: []string{`unexpected argument "text.txt"`, "standard input"}}},
		// The allowed-special vectors run in TestTokensReferenceVectors.
		{"allowed special unknown", []string{"--encoding", "gpt2", "--allowed-special", "<|fim_prefix|>"}, "x", check{code: 2, stderr: []string{"--allowed-special", `"<|fim_prefix|>"`, "<|endoftext|>"}}},
		// -h lists every encoding the command accepts.
		{"help lists encodings", []string{"-h"}, "", check{stderr: []string{"Usage:", "--allowed-special", "cl100k_base", "gpt2", "o200k_base", "p50k_base", "p50k_edit", "r50k_base"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := hayloftIO(t, t.TempDir(), nil, tt.stdin, append([]string{"tokens"}, tt.args...)...)
			tt.want.verify(t, r)
		})
	}
}

// TestTokensReferenceVectors runs the first ordinary tiktoken vector of each
// encoding through the command (one process each: the tokenizer package
// checks every vector in-process).
func TestTokensReferenceVectors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(sharedDir(t), "testdata", "reference", "tiktoken_vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct {
		ID             string `json:"id"`
		Encoding       string `json:"encoding"`
		Text           string `json:"text"`
		AllowedSpecial string `json:"allowed_special"`
		Expected       struct {
			IDs   []int `json:"ids"`
			Count int   `json:"count"`
		} `json:"expected"`
	}
	if err := json.Unmarshal(b, &vectors); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, v := range vectors {
		args := []string{"tokens", "--encoding", v.Encoding}
		switch {
		case v.AllowedSpecial == "all":
			// Every allowed_special="all" vector, through --allowed-special.
			args = append(args, "--allowed-special", "all")
		case seen[v.Encoding] || !strings.HasPrefix(v.AllowedSpecial, "none") || len(v.Expected.IDs) == 0:
			continue
		default:
			seen[v.Encoding] = true
		}
		t.Run(v.ID, func(t *testing.T) {
			r := hayloftIO(t, t.TempDir(), nil, v.Text, args...)
			check{stdoutOK: wantTokens(v.Expected.IDs)}.verify(t, r)
		})
	}
	if len(seen) < 2 {
		t.Fatalf("only %d encodings among the vectors", len(seen))
	}
}

// niahPrompts is the reference prompt of the NIAH vectors file.
type niahPrompts struct {
	Question string `json:"retrieval_question_current"`
	Needle   string `json:"needle_current"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"openai_messages"`
}

func TestGen(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(sharedDir(t), "testdata", "reference", "niah_vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref []struct {
		ID       string      `json:"id"`
		Expected niahPrompts `json:"expected"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	var prompts *niahPrompts
	for i := range ref {
		if ref[i].ID == "niah_prompts_and_needles" {
			prompts = &ref[i].Expected
		}
	}
	if prompts == nil || len(prompts.Messages) != 3 {
		t.Fatal("niah_vectors.json has no niah_prompts_and_needles with three messages")
	}

	r := hayloft(t, repoRoot(t), "gen", "examples/quickstart.hcl", "--limit", "3")
	check{}.verify(t, r)
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 16<<20)
	ids := map[string]bool{}
	for sc.Scan() {
		var rec runner.Rendered
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			t.Fatalf("line %d: %v\n%.300s", len(ids)+1, err, sc.Text())
		}
		if rec.ID == "" || ids[rec.ID] {
			t.Fatalf("line %d: id %q empty or repeated", len(ids)+1, rec.ID)
		}
		ids[rec.ID] = true
		if rec.Eval != "needle" || rec.Model != "model.baseline.extractive" || rec.Retriever != "none" {
			t.Errorf("%s: eval %q model %q retriever %q", rec.ID, rec.Eval, rec.Model, rec.Retriever)
		}
		if rec.Length <= 0 || rec.Tokenizer != "cl100k_base" {
			t.Errorf("%s: length %d tokenizer %q", rec.ID, rec.Length, rec.Tokenizer)
		}
		if rec.Depth < 0 || rec.Depth > 1 {
			t.Errorf("%s: depth %v outside [0,1]", rec.ID, rec.Depth)
		}
		if len(rec.Targets) == 0 || !strings.Contains(prompts.Needle, rec.Targets[0]) {
			t.Errorf("%s: targets %q, want the needle %q", rec.ID, rec.Targets, prompts.Needle)
		}
		if len(rec.Messages) != 3 {
			t.Fatalf("%s: %d messages, want system, context, question", rec.ID, len(rec.Messages))
		}
		for i, want := range prompts.Messages {
			got := rec.Messages[i]
			if got.Role != want.Role {
				t.Errorf("%s: message %d role %q, want %q", rec.ID, i, got.Role, want.Role)
			}
			switch want.Content {
			case "{context}":
				if !strings.Contains(got.Content, strings.TrimSpace(prompts.Needle)) {
					t.Errorf("%s: the context message lacks the needle", rec.ID)
				}
			default:
				w := strings.ReplaceAll(want.Content, "{retrieval_question}", prompts.Question)
				if got.Content != w {
					t.Errorf("%s: message %d = %q, want %q", rec.ID, i, got.Content, w)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 {
		t.Fatalf("gen --limit 3 wrote %d lines", len(ids))
	}
}

const scoreInput = `{"prediction":"Paris","references":["Paris"]}
{"prediction":"Lyon","references":["Paris","Marseille"],"note":"kept"}

{"prediction":"Marseille","references":"Marseille"}
`

func TestScore(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  check
	}{
		{"per line", []string{"--scorer", "exact"}, scoreInput, check{stdoutOK: func(out string) error {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			want := []float64{1, 0, 1}
			if len(lines) != len(want) {
				return fmt.Errorf("%d output lines for 3 input lines (and a blank one):\n%s", len(lines), out)
			}
			for i, l := range lines {
				var rec struct {
					Prediction string `json:"prediction"`
					Note       string `json:"note"`
					Score      struct {
						Value   *float64 `json:"value"`
						Invalid bool     `json:"invalid"`
					} `json:"score"`
				}
				if err := json.Unmarshal([]byte(l), &rec); err != nil {
					return fmt.Errorf("line %d: %v: %s", i+1, err, l)
				}
				if rec.Score.Value == nil || *rec.Score.Value != want[i] || rec.Score.Invalid {
					return fmt.Errorf("line %d: score %+v, want %v", i+1, rec.Score, want[i])
				}
				if rec.Prediction == "" || (i == 1 && rec.Note != "kept") {
					return fmt.Errorf("line %d: input fields not carried through: %s", i+1, l)
				}
			}
			return nil
		}}},
		{"aggregate", []string{"--scorer", "exact", "--aggregate"}, scoreInput, check{stdoutOK: func(out string) error {
			var agg struct {
				Value *float64 `json:"value"`
				N     int      `json:"n"`
			}
			dec := json.NewDecoder(strings.NewReader(out))
			if err := dec.Decode(&agg); err != nil {
				return fmt.Errorf("not JSON: %v\n%s", err, out)
			}
			if dec.More() {
				return fmt.Errorf("more than one JSON value:\n%s", out)
			}
			if agg.Value == nil || agg.N != 3 || *agg.Value < 0.666 || *agg.Value > 0.667 {
				return fmt.Errorf("aggregate %s, want value 2/3 over n 3", out)
			}
			return nil
		}}},
		{"aggregate of nothing", []string{"--scorer", "exact", "--aggregate"}, "\n", check{code: 1, stderr: []string{"nothing to aggregate"}}},
		{"on-error skip", []string{"--scorer", "exact", "--on-error", "skip"}, "{\"prediction\":\"a\",\"references\":[\"a\"]}\n{\"prediction\": oops}\n{\"prediction\":\"b\",\"references\":[\"b\"]}\n",
			check{stdout: []string{`{"line":2,"error":"invalid JSON`, `"prediction":"b","references":["b"],"score":{`}}},
		{"on-error bad", []string{"--scorer", "exact", "--on-error", "ignore"}, scoreInput, check{code: 2, stderr: []string{"--on-error"}}},
		{"bad line", []string{"--scorer", "exact"}, "{\"prediction\":\"a\",\"references\":[\"a\"]}\n{\"prediction\":\"b\",\"references\":[\"b\"]}\n{\"prediction\": oops}\n", check{code: 1, stderr: []string{"line 3"}}},
		{"unknown field in sample", []string{"--scorer", "exact"}, `{"prediction":"a","references":["a"],"sample":{"idd":"x"}}` + "\n", check{code: 1, stderr: []string{"line 1", "idd"}}},
		{"unknown scorer", []string{"--scorer", "nosuch"}, scoreInput, check{code: 1, stderr: []string{`"nosuch"`}}},
		{"scorer typo", []string{"--scorer", "extact"}, scoreInput, check{code: 1, stderr: []string{`"extact"`, `did you mean "exact"`}}},
		{"unknown scorer option", []string{"--scorer", "exact", "--option", "nosuch=1"}, scoreInput, check{code: 1, stderr: []string{"nosuch", "unknown option"}}},
		{"scorer options", []string{"--scorer", "exact", "--option", "lowercase=true", "--option", "remove_punctuation=true"},
			`{"prediction":"paris!","references":["Paris"]}` + "\n", check{stdout: []string{`"value":1`}}},
		{"scorer options off", []string{"--scorer", "exact"},
			`{"prediction":"paris!","references":["Paris"]}` + "\n", check{stdout: []string{`"value":0`}}},
		{"no scorer", nil, scoreInput, check{code: 2, stderr: []string{"--scorer"}}},
		// A file named after the flags is not read: an error, not an empty score.
		{"file argument", []string{"--scorer", "exact", "preds.jsonl"}, "", check{code: 2, stderr: []string{`unexpected argument "preds.jsonl"`, "standard input"}}},
		{"file argument, aggregate", []string{"--scorer", "bleu", "preds.jsonl", "--aggregate"}, scoreInput, check{code: 2, stderr: []string{`unexpected argument "preds.jsonl"`}}},
		{"bad option", []string{"--scorer", "rougel", "--option", "tokenizer"}, scoreInput, check{code: 2, stderr: []string{"tokenizer", "key=value"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := hayloftIO(t, t.TempDir(), nil, tt.stdin, append([]string{"score"}, tt.args...)...)
			tt.want.verify(t, r)
		})
	}
	// Lines before the bad one are written: the error does not throw away
	// the work done.
	r := hayloftIO(t, t.TempDir(), nil, "{\"prediction\":\"a\",\"references\":[\"a\"]}\n{bad\n", "score", "--scorer", "exact")
	if r.code == 0 || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stderr, "line 2") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want line 1 scored and an error naming line 2", r.code, r.stdout, r.stderr)
	}
}

// A line scores the same whatever lines come before it. Scorers may keep
// pieces of what they were given (rougel's stem cache keeps stems, often
// prefixes of the words), and the memory those pieces come from, the
// plugin's packed batches and scoreio's input chunks, is reused batch after
// batch: when rougel kept them uncopied, a fifth of the lines of a long file
// scored with other lines' stems. So the last lines of a long file must
// score as they do alone, through the plugin and in process.
func TestScoreLinesIndependentOfEarlierOnes(t *testing.T) {
	syllables := []string{"lu", "me", "bo", "gi", "ne", "ra", "fe", "co", "pi", "to", "da", "su"}
	suffixes := []string{"ing", "ed", "s", "ness", "ful", "ational", "ly", "es", "ation", ""}
	// The reference has the prediction's stems with other suffixes: they
	// match only while each word's cached stem reads as it did.
	word := func(n, suffix int) string {
		return syllables[n%12] + syllables[n/12%12] + syllables[n/144%12] + suffixes[suffix%len(suffixes)]
	}
	var in strings.Builder
	lines := 12000
	for i := range lines {
		var pred, ref []string
		for j := range 8 {
			n := (i*131 + j*7919) % 1728
			pred = append(pred, word(n, i+j))
			ref = append(ref, word(n, i+j+1+j%3))
		}
		fmt.Fprintf(&in, "{\"prediction\":%q,\"references\":[%q]}\n", strings.Join(pred, " "), strings.Join(ref, " "))
	}
	all := strings.SplitAfter(in.String(), "\n")
	tail := strings.Join(all[lines-200:lines], "")
	for _, mode := range [][]string{nil, {"--in-process"}} {
		args := append([]string{"score", "--scorer", "rougel", "--option", "use_stemmer=true"}, mode...)
		whole := hayloftIO(t, t.TempDir(), nil, in.String(), args...)
		alone := hayloftIO(t, t.TempDir(), nil, tail, args...)
		if whole.code != 0 || alone.code != 0 {
			t.Fatalf("%v: exit %d, %d: %s %s", mode, whole.code, alone.code, whole.stderr, alone.stderr)
		}
		got := strings.SplitAfter(whole.stdout, "\n")
		if len(got) != lines+1 {
			t.Fatalf("%v: %d lines out, want %d", mode, len(got)-1, lines)
		}
		if last := strings.Join(got[lines-200:lines], ""); last != alone.stdout {
			differ := 0
			want := strings.SplitAfter(alone.stdout, "\n")
			for i := range 200 {
				if i < len(want) && got[lines-200+i] != want[i] {
					differ++
				}
			}
			t.Errorf("%v: %d of the last 200 lines score otherwise than alone", mode, differ)
		}
	}
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	haystack := filepath.Join(repoRoot(t), "README.md")
	badHaystack := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(badHaystack, []byte("fine text\xff then more"), 0o644); err != nil {
		t.Fatal(err)
	}
	niahWith := func(haystack, depths, model, scorers string) string {
		return fmt.Sprintf(`task "niah" "t" {
  haystack = %q
  lengths  = [1000]
  depths   = %s
}
model "baseline" "b" {%s}
eval "e" {
  task    = task.niah.t
  models  = [model.baseline.b]
  scorers = %s
}
`, haystack, depths, model, scorers)
	}
	niah := func(depths string) string { return niahWith(haystack, depths, "", `["niah"]`) }
	tests := []struct {
		name, config string
		want         check
	}{
		{"good", niah("[0, 50, 100]"), check{stdout: []string{"eval.hcl", "ok"}}},
		// Every config error exits 2, found by the parser or by a component.
		{"depth out of range", niah("[150]"), check{code: 2, stderr: []string{"eval.hcl:4:", "depths", "150"}}},
		{"typo in a scorer option", `scorer "rougel" "zh" {
  tokenizr = "char"
}
`, check{code: 2, stderr: []string{"eval.hcl:2:", "tokenizr"}}},
		{"bad model option", `model "openai" "m" {
  base_url = "http://127.0.0.1:1/v1"
  timeout  = "soon"
}
`, check{code: 2, stderr: []string{"eval.hcl:3:", "timeout", "soon"}}},
		{"unknown bare scorer", niahWith(haystack, "[50]", "", `["nia", "contains"]`),
			check{code: 2, stderr: []string{"eval.hcl:10:14:", `"nia"`, `did you mean "niah"`}}},
		{"misspelt kernel attribute", niahWith(haystack, "[50]", "\n  max_concurency = 2\n", `["niah"]`),
			check{code: 2, stderr: []string{"eval.hcl:7:3:", "max_concurency", `did you mean "max_concurrency"`}}},
		{"invalid UTF-8 haystack", niahWith(badHaystack, "[50]", "", `["niah"]`),
			check{code: 2, stderr: []string{"eval.hcl:2:", badHaystack, "byte offset 9", "invalid_utf8"}}},
		{"unknown block", `tsk "niah" "t" {}`, check{code: 2, stderr: []string{"eval.hcl:1", `"task"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeConfig(t, dir, tt.config)
			tt.want.verify(t, hayloft(t, dir, "validate", cfg))
			if tt.want.code != 0 {
				// --deep finds everything the shallow check does.
				tt.want.verify(t, hayloft(t, dir, "validate", "--deep", cfg))
			}
		})
	}
	t.Run("quickstart", func(t *testing.T) {
		check{stdout: []string{"examples/quickstart.hcl", "ok"}}.verify(t, hayloft(t, repoRoot(t), "validate", "examples/quickstart.hcl"))
	})
	t.Run("no config", func(t *testing.T) {
		check{code: 2, stderr: []string{"usage"}}.verify(t, hayloft(t, dir, "validate"))
	})
}

func TestPlugins(t *testing.T) {
	want := [][2]string{{"task", "niah"}, {"task", "jsonl"}, {"model", "openai"}, {"model", "baseline"},
		{"scorer", "bleu"}, {"scorer", "exact"}, {"retriever", "cosine"}, {"retriever", "none"}}
	t.Run("table", func(t *testing.T) {
		r := hayloft(t, t.TempDir(), "plugins")
		check{stdout: []string{"KIND", "PROTOCOL"}}.verify(t, r)
		for _, w := range want {
			re := regexp.MustCompile(`(?m)^` + w[0] + `\s+` + w[1] + `\s+builtin\s+\S+\s+hayloft\.plugin\.v1\s*$`)
			if !re.MatchString(r.stdout) {
				t.Errorf("no row for %s %s from builtin with protocol hayloft.plugin.v1:\n%s", w[0], w[1], r.stdout)
			}
		}
	})
	t.Run("json", func(t *testing.T) {
		r := hayloft(t, t.TempDir(), "plugins", "--json")
		check{}.verify(t, r)
		var entries []struct {
			Plugin, Version, Protocol, Kind, Name string
		}
		if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil {
			t.Fatalf("--json output does not parse: %v\n%s", err, r.stdout)
		}
		have := map[[2]string]bool{}
		for _, e := range entries {
			// Components the kernel serves itself (plugin "kernel") speak no
			// plugin protocol; every plugin process speaks v1.
			if e.Plugin == "" || e.Version == "" || (e.Plugin != "kernel" && e.Protocol != "hayloft.plugin.v1") {
				t.Errorf("entry %+v", e)
			}
			if have[[2]string{e.Kind, e.Name}] {
				t.Errorf("%s %s listed twice", e.Kind, e.Name)
			}
			have[[2]string{e.Kind, e.Name}] = true
		}
		for _, w := range want {
			if !have[w] {
				t.Errorf("%s %s missing from --json", w[0], w[1])
			}
		}
	})
}

func TestCommandErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
task "jsonl" "doors" { path = %q }
model "baseline" "b" {}
eval "doors" {
  task   = task.jsonl.doors
  models = [model.baseline.b]
}
`, writeJSONL(t, dir, 3)))
	store := filepath.Join(dir, "j.db")
	tests := []struct {
		name string
		args []string
		want check
	}{
		{"version", []string{"version"}, check{stdout: []string{"hayloft "}}},
		{"help", []string{"help"}, check{stdout: []string{"Usage:", "hayloft run CONFIG"}}},
		{"no command", nil, check{code: 2, stderr: []string{"Usage:"}}},
		{"unknown command", []string{"frobnicate"}, check{code: 2, stderr: []string{`unknown command "frobnicate"`, "Usage:"}}},
		{"run: eval typo", []string{"run", cfg, "--store", store, "--eval", "dors"}, check{code: 2, stderr: []string{`"dors"`, `did you mean "doors"`}}},
		{"run: eval unknown", []string{"run", cfg, "--store", store, "--eval", "nosuch"}, check{code: 2, stderr: []string{`"nosuch"`, "no such eval"}}},
		{"run: no config", []string{"run"}, check{code: 2, stderr: []string{"usage"}}},
		{"run: missing config", []string{"run", filepath.Join(dir, "absent.hcl"), "--store", store}, check{code: 2, stderr: []string{"absent.hcl"}}},
		{"run: unknown flag", []string{"run", cfg, "--jsno"}, check{code: 2, stderr: []string{"jsno"}, bug: badFlagExit}},
		{"run: negative limit", []string{"run", cfg, "--store", filepath.Join(dir, "limit.db"), "--limit", "-1"}, check{code: 2, stderr: []string{"--limit"}, bug: negativeLimit}},
		{"gen: negative limit", []string{"gen", cfg, "--limit", "-1"}, check{code: 2, stderr: []string{"--limit"}, bug: negativeLimit}},
		{"gen: eval typo", []string{"gen", cfg, "--eval", "dors"}, check{code: 2, stderr: []string{`did you mean "doors"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.verify(t, hayloft(t, dir, tt.args...))
		})
	}
	if _, err := os.Stat(store); err == nil {
		t.Errorf("a run that never started created its journal %s", store)
	}
}

// TestSettingsLayering checks the store setting through every layer: the
// config file < HAYLOFT_STORE < --store. Each layer's journal is a separate
// cache, so the run that lands in a fresh file answers everything anew.
func TestSettingsLayering(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
store = "file.db"
task "jsonl" "doors" { path = %q }
model "baseline" "b" {}
eval "doors" {
  task    = task.jsonl.doors
  models  = [model.baseline.b]
  scorers = ["contains"]
}
`, writeJSONL(t, dir, 4)))
	tests := []struct {
		name   string
		env    []string
		args   []string
		file   string // the journal the run must use
		cached int
	}{
		{"file", nil, nil, "file.db", 0},
		{"file again", nil, nil, "file.db", 4},
		{"environment over file", []string{"HAYLOFT_STORE=env.db"}, nil, "env.db", 0},
		{"flag over environment", []string{"HAYLOFT_STORE=env.db"}, []string{"--store", "flag.db"}, "flag.db", 0},
		{"flag again", nil, []string{"--store", "flag.db"}, "flag.db", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := hayloftIO(t, dir, tt.env, "", append([]string{"run", cfg, "--json"}, tt.args...)...)
			res := decodeResult(t, r)
			if ev := res.Evals[0]; ev.Samples != 4 || ev.Cached != tt.cached {
				t.Fatalf("samples %d cached %d, want 4 and %d", ev.Samples, ev.Cached, tt.cached)
			}
			if _, err := os.Stat(filepath.Join(dir, tt.file)); err != nil {
				t.Fatalf("journal %s: %v", tt.file, err)
			}
		})
	}
	t.Run("summary table", func(t *testing.T) {
		r := hayloft(t, dir, "run", cfg)
		check{stdout: []string{"doors", "samples", "contains", "baseline.b", "run "}}.verify(t, r)
		if json.Valid([]byte(r.stdout)) {
			t.Fatalf("without --json the summary is JSON:\n%s", r.stdout)
		}
	})
}

// TestGenFitsWindow: gen writes what would be sent, so a context over the
// model's window comes out cut to fit, the question intact.
func TestGenFitsWindow(t *testing.T) {
	dir := t.TempDir()
	var data strings.Builder
	for i := range 3 {
		words := 2
		if i == 1 {
			words = 200
		}
		ctx := strings.Repeat("The hay is dry and the barn is quiet. ", words) + fmt.Sprintf("The code for door %d is %d.", i, 1000+i)
		fmt.Fprintf(&data, `{"id":"s%d","context":%q,"question":"What is the code for door %d?","answers":["%d"]}`+"\n", i, ctx, i, 1000+i)
	}
	if err := os.WriteFile(filepath.Join(dir, "long.jsonl"), []byte(data.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const window, maxTokens = 300, 20
	cfg := writeConfig(t, dir, fmt.Sprintf(`
model "openai" "m" {
  base_url       = "http://127.0.0.1:1/v1"
  context_window = %d
  max_tokens     = %d
}
task "jsonl" "d" { path = %q }
eval "e" {
  task   = task.jsonl.d
  models = [model.openai.m]
}
`, window, maxTokens, filepath.Join(dir, "long.jsonl")))
	// Nothing listens on port 1: gen must not call the model.
	r := hayloft(t, dir, "gen", cfg)
	check{}.verify(t, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), r.stdout)
	}
	for i, l := range lines {
		var rec runner.Rendered
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Truncated != (i == 1) {
			t.Errorf("%s: truncated = %v", rec.ID, rec.Truncated)
		}
		if rec.Length <= 0 || rec.Length+maxTokens > window {
			t.Errorf("%s: %d prompt tokens + %d to generate do not fit %d", rec.ID, rec.Length, maxTokens, window)
		}
		var text strings.Builder
		for _, m := range rec.Messages {
			text.WriteString(m.Content)
		}
		question := fmt.Sprintf("What is the code for door %d?", i)
		if !strings.HasSuffix(strings.TrimSpace(text.String()), question) {
			t.Errorf("%s: the question did not survive: %q", rec.ID, text.String())
		}
		// Measured independently with `hayloft tokens`: what is written
		// is within the window.
		n := hayloftIO(t, dir, nil, text.String(), "tokens", "--count")
		if c, err := strconv.Atoi(strings.TrimSpace(n.stdout)); err != nil || c+maxTokens > window {
			t.Errorf("%s: `hayloft tokens` counts %q tokens in the messages", rec.ID, n.stdout)
		}
		if i == 1 && (!strings.HasPrefix(text.String(), "The hay is dry") || !strings.Contains(text.String(), "The code for door 1 is 1001.")) {
			t.Errorf("middle truncation should keep both ends of the context: %q", text.String())
		}
	}
}
