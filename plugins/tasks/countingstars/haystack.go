package countingstars

import (
	"github.com/hayloft/hayloft/plugins/internal/pytext"
	"strings"
	"unicode"
)

// normalizeNewlines turns \r\n and lone \r into \n, as Python's text mode
// (universal newlines) does when upstream reads the haystack.
func normalizeNewlines(s string) string {
	if !strings.ContainsRune(s, '\r') {
		return s
	}
	return strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(s)
}

// CleanEnglish prepares an English haystack the upstream way: newlines become
// spaces and nothing else changes. Units are then strings.Split(text, " "),
// which is Python's str.split(" ") (empty units included).
func CleanEnglish(raw string) string {
	return strings.ReplaceAll(normalizeNewlines(raw), "\n", " ")
}

// zhDropped reports the code points upstream removes from the Chinese
// haystack after joining its lines: ASCII letters and the ASCII punctuation
// of its regular expression. The expression is built from Python's
// string.punctuation with "\\]" inside a character class, which escapes the
// bracket; the backslash itself therefore survives.
func zhDropped(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		return true
	case r == '\\':
		return false
	case r < 0x80 && unicode.IsPunct(r), r < 0x80 && unicode.IsSymbol(r):
		return true
	}
	return false
}

// CleanChinese prepares a Chinese haystack the upstream way: each line is
// stripped of surrounding whitespace, "------------" becomes a space, ASCII
// spaces are removed, the lines are joined without separator, and ASCII
// letters and punctuation are removed. Lengths are then counted in code
// points.
func CleanChinese(raw string) string {
	var b strings.Builder
	b.Grow(len(raw))
	for line := range strings.SplitSeq(normalizeNewlines(raw), "\n") {
		line = strings.TrimFunc(line, pytext.IsSpace)
		// The dashes would become a space that the next step removes, and
		// the regexp below drops every '-' anyway; the replacement is kept
		// so the steps read as upstream's.
		line = strings.ReplaceAll(line, "------------", " ")
		for _, r := range line {
			if r == ' ' || zhDropped(r) {
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}
