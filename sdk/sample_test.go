package sdk

import (
	"strings"
	"testing"
	"unsafe"
)

// fill and AppendContent must substitute exactly as strings.Replacer would,
// their reference.
func FuzzFill(f *testing.F) {
	for _, s := range []string{"", "{{context}}\n\n{{question}}", "{{{question}}}", "{{", "a{{b}}c{{context", "{{question}}{{context}}", ContextSlot, QuestionSlot} {
		f.Add(s, "C {{question}}", "Q")
	}
	f.Fuzz(func(t *testing.T, tmpl, context, question string) {
		want := strings.NewReplacer(ContextSlot, context, QuestionSlot, question).Replace(tmpl)
		if got := fill(tmpl, context, question); got != want {
			t.Fatalf("fill(%q) = %q, want %q", tmpl, got, want)
		}
		// AppendContent writes the same bytes after what dst holds.
		s := &Sample{Context: context, Question: question}
		if got := s.AppendContent([]byte("prefix"), tmpl); string(got) != "prefix"+want {
			t.Fatalf("AppendContent(%q) = %q, want %q", tmpl, got, "prefix"+want)
		}
	})
}

// Rendering into a reused buffer gives Render's messages byte for byte,
// the default template included, and allocates nothing once the buffer has
// grown to the longest prompt.
func TestAppendContentReusesTheBuffer(t *testing.T) {
	long := strings.Repeat("context ", 1<<14)
	samples := []*Sample{
		{Context: long, Question: "Q1"},
		{Context: long[:1000], Question: "Q2", Messages: []Message{{Role: "system", Content: "S {{"}, {Role: "user", Content: "T " + ContextSlot + " Q: " + QuestionSlot}}},
		{Context: long, Question: "Q3", Messages: []Message{{Role: "user", Content: QuestionSlot + ContextSlot + QuestionSlot}}},
	}
	var buf []byte
	for _, s := range samples {
		want := s.Render()
		tmpl := s.Template()
		if len(tmpl) != len(want) {
			t.Fatalf("Template has %d messages, Render %d", len(tmpl), len(want))
		}
		for i, m := range tmpl {
			buf = s.AppendContent(buf[:0], m.Content)
			if m.Role != want[i].Role || string(buf) != want[i].Content {
				t.Fatalf("message %d: AppendContent = %.60q…, Render = %.60q…", i, buf, want[i].Content)
			}
		}
	}
	allocs := testing.AllocsPerRun(10, func() {
		for _, s := range samples {
			for _, m := range s.Template() {
				buf = s.AppendContent(buf[:0], m.Content)
			}
		}
	})
	// DefaultMessages builds its one-message template: one small allocation
	// for the first sample; none of the prompts is allocated.
	if allocs > 1 {
		t.Fatalf("rendering into a grown buffer allocated %v times per run", allocs)
	}
}

// A message that is the context alone shares the context's text: a long
// document is not copied once more for every request in flight.
func TestFillSharesAContextMessage(t *testing.T) {
	context := strings.Repeat("hay ", 1000)
	msgs := (&Sample{Context: context, Question: "Q?", Messages: []Message{
		{Role: "user", Content: ContextSlot}, {Role: "user", Content: QuestionSlot + " Answer briefly."}}}).Render()
	if unsafe.StringData(msgs[0].Content) != unsafe.StringData(context) {
		t.Error("the context message is a copy of the context")
	}
	if msgs[1].Content != "Q? Answer briefly." {
		t.Errorf("question message %q", msgs[1].Content)
	}
}
