package bleu

import (
	"fmt"
	"testing"

	"github.com/hayloft/hayloft/plugins/internal/pytext"
)

// counter.text (fields split and hashed in one pass while they are ASCII)
// gives the ids words gives for str.split()'s fields, whitespace of every
// kind included, both when interning and when only looking up.
func TestTextMatchesWords(t *testing.T) {
	texts := []string{
		"", " ", "a", " a b  c ", "a\tb\nc\rd\ve\ff\x1cg\x1dh\x1ei\x1fj",
		"naïve café", "a\u00a0b", "a\u3000b\u2028c", "\u00a0lead trail\u00a0", "é", "a é a é",
		"x\u0085y", "日本 語 日本", "a\u200bb", "mixed ascii then ü and\u00a0more ascii",
	}
	for _, ref := range texts {
		for _, hyp := range texts {
			want, got := newCounter(4), newCounter(4)
			want.words(pytext.Fields(ref), true)
			got.text([]byte(ref), true)
			if fmt.Sprint(got.ids[0]) != fmt.Sprint(want.ids[0]) {
				t.Fatalf("text(%q) interned %v, want %v", ref, got.ids[0], want.ids[0])
			}
			want.words(pytext.Fields(hyp), false)
			got.text([]byte(hyp), false)
			if fmt.Sprint(got.ids[0]) != fmt.Sprint(want.ids[0]) {
				t.Fatalf("after %q: text(%q) looked up %v, want %v", ref, hyp, got.ids[0], want.ids[0])
			}
		}
	}
}
