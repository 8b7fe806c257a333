package jsonl

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "data.jsonl")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func collect(t *testing.T, task sdk.Task, limit int) ([]*sdk.Sample, error) {
	t.Helper()
	var out []*sdk.Sample
	for s, err := range task.Samples(context.Background(), &sdk.SamplesRequest{Limit: limit}) {
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, nil
}

func TestSamples(t *testing.T) {
	p := writeFile(t, `{"id":"a","context":"The sky is blue.","question":"What colour?","answers":["blue","azure"]}

{"id":7,"question":"2+2?","answers":4,"choices":["3","4"],"source":"quiz"}
`)
	task, err := New(context.Background(), sdk.MustOptions(map[string]any{"path": p}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, task, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d samples, want 2", len(got))
	}
	if got[0].ID != "a" || got[0].Context != "The sky is blue." || strings.Join(got[0].Targets, "|") != "blue|azure" {
		t.Errorf("sample 0 = %+v", got[0])
	}
	if got[1].ID != "7" || got[1].Targets[0] != "4" || len(got[1].Choices) != 2 || got[1].Metadata["source"] != "quiz" {
		t.Errorf("sample 1 = %+v", got[1])
	}
	if got[0].Depth >= 0 {
		t.Errorf("depth = %v, want negative (does not apply)", got[0].Depth)
	}
}

func TestBadLinesNameFileAndLine(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"syntax", "{\"question\":\"q\"}\n{oops\n", "data.jsonl:2: not a JSON object"},
		{"not object", "[1,2]\n", "data.jsonl:1: not a JSON object"},
		{"answers type", "{\"question\":\"q\",\"answers\":{\"a\":1}}\n", `data.jsonl:1: field "answers": want a string or a list of strings, got an object`},
		{"empty", "{\"answers\":\"x\"}\n", `data.jsonl:1: neither "context" nor "question" is set`},
		{"question type", "{\"question\":3}\n", `data.jsonl:1: field "question": want a string, got a number`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task, err := New(context.Background(), sdk.MustOptions(map[string]any{"path": writeFile(t, c.body)}))
			if err != nil {
				t.Fatal(err)
			}
			_, err = collect(t, task, 0)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestGoodLinesBeforeABadOneAreDelivered(t *testing.T) {
	task, _ := New(context.Background(), sdk.MustOptions(map[string]any{"path": writeFile(t, "{\"question\":\"a\"}\n{\"question\":\"b\"}\nnope\n")}))
	got, err := collect(t, task, 0)
	if err == nil || len(got) != 2 {
		t.Fatalf("got %d samples, err %v; want 2 and an error", len(got), err)
	}
}

func TestOptionErrors(t *testing.T) {
	cases := []struct {
		opts  map[string]any
		field string
	}{
		{map[string]any{}, "path"},
		{map[string]any{"path": "/nonexistent/x.jsonl"}, "path"},
		{map[string]any{"path": "x", "pathh": "y"}, "pathh"},
	}
	for _, c := range cases {
		_, err := New(context.Background(), sdk.MustOptions(c.opts))
		ce, ok := err.(*sdk.ConfigError)
		if !ok || ce.Field != c.field {
			t.Errorf("New(%v) = %v, want a ConfigError on %q", c.opts, err, c.field)
		}
	}
}

func TestLimitAndURL(t *testing.T) {
	var body strings.Builder
	for i := range 50 {
		fmt.Fprintf(&body, "{\"id\":\"%d\",\"question\":\"q%d\",\"answers\":\"a\"}\n", i, i)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(body.String()))
	}))
	defer srv.Close()
	task, err := New(context.Background(), sdk.MustOptions(map[string]any{"path": srv.URL + "/data.jsonl"}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, task, 10)
	if err != nil || len(got) != 10 || got[9].ID != "9" {
		t.Fatalf("got %d samples, err %v", len(got), err)
	}
}

func TestTemplate(t *testing.T) {
	task, _ := New(context.Background(), sdk.MustOptions(map[string]any{
		"path": writeFile(t, `{"context":"C","question":"Q"}`), "system": "S",
		"template": "Read: {{context}}\nAnswer: {{question}}",
	}))
	got, err := collect(t, task, 0)
	if err != nil {
		t.Fatal(err)
	}
	msgs := got[0].Render()
	if len(msgs) != 2 || msgs[0].Content != "S" || msgs[1].Content != "Read: C\nAnswer: Q" {
		t.Fatalf("rendered %+v", msgs)
	}
}

// Over a real gRPC connection: the conformance suite, which also checks
// that CountSamples agrees with what Samples yields.
func TestConformance(t *testing.T) {
	set := sdk.NewSet("test", "1")
	set.RegisterTask(Name, New)
	p := writeFile(t, "{\"question\":\"a\"}\n\n{\"question\":\"b\"}\n{\"question\":\"c\"}\n")
	task := sdktest.Task(t, set, Name, map[string]any{"path": p})
	sdktest.CheckTask(t, task)
	if n, err := task.CountSamples(context.Background(), &sdk.SamplesRequest{}); err != nil || n != 3 {
		t.Fatalf("CountSamples = %d, %v; want 3", n, err)
	}
}
