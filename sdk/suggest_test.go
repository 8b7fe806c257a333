package sdk

import "testing"

func TestSuggest(t *testing.T) {
	kinds := []string{"task", "model", "scorer", "retriever", "plugin", "eval"}
	for _, tc := range []struct {
		name       string
		candidates []string
		want       string
	}{
		{"modle", kinds, "model"},
		{"models", kinds, "model"},
		{"Task", kinds, "task"},
		{"retreiver", kinds, "retriever"},
		{"retr", kinds, "retriever"}, // a prefix of three or more
		{"widget", kinds, ""},
		{"ev", kinds, ""}, // too short a prefix, and 2 edits from nothing
		{"nia", []string{"niah", "countingstars", "adaleval"}, "niah"},
		{"model.openai.locl", []string{"model.openai.local", "model.openai.remote"}, "model.openai.local"},
		{"x", nil, ""},
		// An exact match is not a suggestion.
		{"model", []string{"model"}, ""},
		// The nearest wins over an earlier, farther candidate.
		{"rouge", []string{"bleu", "rougel", "rouge2x"}, "rougel"},
		// Ties go to the earlier candidate.
		{"cat", []string{"bat", "hat"}, "bat"},
		{"红楼", []string{"红楼梦"}, "红楼梦"},
	} {
		if got := Suggest(tc.name, tc.candidates); got != tc.want {
			t.Errorf("Suggest(%q, %q) = %q, want %q", tc.name, tc.candidates, got, tc.want)
		}
	}
}

func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"kitten", "sitting", 3},
		{"flaw", "lawn", 2},
		{"红楼梦", "红梦", 1},
	} {
		if got := levenshtein(tc.a, tc.b); got != tc.want {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := levenshtein(tc.b, tc.a); got != tc.want {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", tc.b, tc.a, got, tc.want)
		}
	}
}
