package sdk

import (
	"strings"
	"testing"
)

// fill must substitute exactly as strings.Replacer would, its reference.
func FuzzFill(f *testing.F) {
	for _, s := range []string{"", "{{context}}\n\n{{question}}", "{{{question}}}", "{{", "a{{b}}c{{context", "{{question}}{{context}}"} {
		f.Add(s, "C {{question}}", "Q")
	}
	f.Fuzz(func(t *testing.T, tmpl, context, question string) {
		want := strings.NewReplacer(ContextSlot, context, QuestionSlot, question).Replace(tmpl)
		if got := fill(tmpl, context, question); got != want {
			t.Fatalf("fill(%q) = %q, want %q", tmpl, got, want)
		}
	})
}
