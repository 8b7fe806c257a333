package acmepy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestScoreCommand runs `hayloft score` with a Python scorer that echoes
// what it received (testdata/echo.py): every field Go marshals reaches the
// Python sample through ScoreBatch's hand-written decoder, scores come back
// through its encoder, and a sample whose scoring raises is recorded alone.
func TestScoreCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hayloft")
	}
	pyz, _ := packOnce(t, "testdata", "echo")
	hayloft := build(t)
	pdir := t.TempDir()
	if err := os.Symlink(pyz, filepath.Join(pdir, "echo.pyz")); err != nil {
		t.Fatal(err)
	}
	in := strings.Join([]string{
		`{"prediction":"a ü","references":["x","y"]}`,
		`{"sample":{"id":"s1","question":"q?","choices":["A","B"],"targets":["t"],"length":{"tokens":12,"tokenizer":"cl100k_base"},"depth":0.25,"language":"zh","subtask":"mc","grid":{"length":32000,"depth":0.5},"max_new_tokens":7,"window":4096,"metadata":{"k":[1,2]},"messages":[{"role":"user","content":"hi"}]},"prediction":"p"}`,
		`{"prediction":"raise","references":"r"}`,
		`{"prediction":"","references":["z"]}`,
	}, "\n") + "\n"
	cmd := exec.Command(hayloft, "score", "--scorer", "echo", "--on-error", "skip")
	cmd.Env = append(os.Environ(), "HAYLOFT_PLUGIN_DIR="+pdir)
	cmd.Stdin = strings.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hayloft score: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d output lines, want 4:\n%s", len(lines), out)
	}
	type line struct {
		Score map[string]any `json:"score"`
		Error string         `json:"error"`
	}
	got := make([]line, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &got[i]); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, l)
		}
	}
	want := []map[string]any{
		{"id": "line 1", "prediction": "a ü", "targets": []any{"x", "y"}, "value": 2.0, "invalid": false, "grid": nil,
			"metadata": map[string]any{}, "length": []any{0.0, ""}, "messages": []any{}},
		{"id": "s1", "prediction": "p", "question": "q?", "choices": []any{"A", "B"}, "targets": []any{"t"}, "value": 1.0,
			"length": []any{12.0, "cl100k_base"}, "language": "zh", "subtask": "mc", "grid": []any{32000.0, 0.5},
			"max_new_tokens": 7.0, "window": 4096.0, "metadata": map[string]any{"k": []any{1.0, 2.0}},
			"messages": []any{[]any{"user", "hi"}}},
		nil,
		{"id": "line 4", "prediction": "", "targets": []any{"z"}, "invalid": true, "value": 1.0},
	}
	for i, w := range want {
		if w == nil {
			if !strings.Contains(got[i].Error, "exception: ValueError: cannot score line 3 (echo.py:") {
				t.Errorf("line %d: error %q, want the exception with its line", i+1, got[i].Error)
			}
			continue
		}
		for k, v := range w {
			if !reflect.DeepEqual(got[i].Score[k], v) {
				t.Errorf("line %d: score %s = %#v, want %#v", i+1, k, got[i].Score[k], v)
			}
		}
	}
}
