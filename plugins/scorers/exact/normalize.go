package exact

import (
	"github.com/hayloft/hayloft/plugins/internal/pytext"
	"strings"
	"unicode"
)

// Normalization says which differences to ignore when comparing answers.
// With all four on it is SQuAD's normalize_answer: lowercase, drop ASCII
// punctuation, drop the words a/an/the, collapse whitespace, in that order.
type Normalization struct {
	Lowercase           bool `json:"lowercase"`
	RemovePunctuation   bool `json:"remove_punctuation"`
	RemoveArticles      bool `json:"remove_articles"`
	NormalizeWhitespace bool `json:"normalize_whitespace"`
}

// SQuAD is normalize_answer from the SQuAD v1.1 evaluation script.
var SQuAD = Normalization{Lowercase: true, RemovePunctuation: true, RemoveArticles: true, NormalizeWhitespace: true}

// Apply normalises s.
func (n Normalization) Apply(s string) string {
	if n.Lowercase {
		s = strings.ToLower(s)
	}
	if n.RemovePunctuation {
		s = strings.Map(func(r rune) rune {
			if IsASCIIPunct(r) {
				return -1
			}
			return r
		}, s)
	}
	if n.RemoveArticles {
		s = removeArticles(s)
	}
	if n.NormalizeWhitespace {
		s = strings.Join(pytext.Fields(s), " ")
	}
	return s
}

// IsASCIIPunct reports whether r is in Python's string.punctuation.
func IsASCIIPunct(r rune) bool {
	return r < 0x80 && strings.ContainsRune("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", r)
}

// isWordChar is Python's \w: letters, numbers and underscore.
func isWordChar(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// removeArticles replaces each whole word a, an or the (case-sensitive, as
// SQuAD's \b(a|an|the)\b) by a space.
func removeArticles(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		switch w := s[start:end]; w {
		case "a", "an", "the":
			b.WriteByte(' ')
		default:
			b.WriteString(w)
		}
		start = -1
	}
	for i, r := range s {
		if isWordChar(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
		b.WriteRune(r)
	}
	flush(len(s))
	return b.String()
}
