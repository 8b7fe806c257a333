package sdk

import "strings"

// Suggest returns the candidate nearest to name, or "" when none is close
// enough to be a likely typo: within edit distance 2 (case-insensitive) and
// fewer edits than name has characters, or
// sharing a prefix of at least three characters with it (one being a prefix of
// the other, as "model" and "models"). Ties go to the earlier candidate, so
// callers control preference through the order they pass.
func Suggest(name string, candidates []string) string {
	lname := strings.ToLower(name)
	best, bestDist := "", 3
	for _, c := range candidates {
		if c == name {
			continue
		}
		lc := strings.ToLower(c)
		d := levenshtein(lname, lc)
		if d > 2 && isPrefixPair(lname, lc) {
			// A prefix match is a likely guess, but no likelier than a near
			// spelling, so it counts as the largest accepted distance.
			d = 2
		}
		// Edits touching every character of name are a different word, not
		// a typo of it.
		if d < bestDist && d < len([]rune(name)) {
			best, bestDist = c, d
		}
	}
	return best
}

// isPrefixPair reports whether one of a, b is a prefix of the other and the
// shared part is long enough not to be a coincidence.
func isPrefixPair(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return len(a) >= 3 && strings.HasPrefix(b, a)
}

// levenshtein is the edit distance between a and b counted in runes.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
