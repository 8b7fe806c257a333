package countingstars

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenize encodes enough of text to cover the largest size, and records
// where each token starts so that token ranges map back to text.
func (h *haystack) tokenize(text string, largest int) error {
	// Stars and the fix-up loop need a little more than the largest size.
	need := largest + largest/8 + 64
	n := min(len(text), need*5+4096)
	for {
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n++
		}
		prefix := text[:n]
		tokens := h.enc.Encode(prefix)
		if len(tokens) >= need || n == len(text) {
			if len(tokens) < largest {
				return fmt.Errorf("has %d %s tokens; the largest size needs %d", len(tokens), h.enc.Name(), largest)
			}
			offs := make([]int, len(tokens)+1)
			for i, id := range tokens {
				offs[i+1] = offs[i] + len(h.enc.Decode([]int{id}))
			}
			if offs[len(tokens)] != len(prefix) {
				return fmt.Errorf("%s does not round-trip the text (%d bytes decoded from %d)", h.enc.Name(), offs[len(tokens)], len(prefix))
			}
			h.text, h.tokens, h.offs = prefix, tokens, offs
			return nil
		}
		n = min(len(text), 2*n)
	}
}

// placeTokens builds a context of exactly size tokens when it can: the
// haystack share (size minus the stars' own tokens) is cut into M runs of
// equal token count, and star i follows run i, so the last star ends the
// context. Tokens can merge across a seam and cuts move to character
// boundaries, so the whole context is counted and corrected: first the share
// as a whole, then the last two cuts alone. The closest attempt is returned
// with its true count when no exact one is found.
func (h *haystack) placeTokens(size int, stars []string) (placed, int, error) {
	m := len(stars)
	starTokens := 0
	for _, s := range stars {
		starTokens += h.enc.Count(s)
	}
	budget := size - starTokens
	var (
		cuts  []int
		bestN = -1
		tried = map[int]bool{}
	)
	for range 6 {
		if budget < m {
			return placed{}, 0, fmt.Errorf("leaves %d haystack tokens for %d stars of %d tokens", budget, m, starTokens)
		}
		if budget > len(h.tokens) {
			return placed{}, 0, fmt.Errorf("needs %d haystack tokens, the haystack has %d", budget, len(h.tokens))
		}
		if tried[budget] {
			break
		}
		tried[budget] = true
		c := h.equalCuts(budget, m)
		n := h.enc.Count(h.build(c, stars).Context)
		if bestN < 0 || closer(n, bestN, size) {
			cuts, bestN = c, n
		}
		if n == size {
			break
		}
		budget += size - n
	}
	if bestN != size {
		if c, ok := h.tuneTail(cuts, stars, size); ok {
			if n := h.enc.Count(h.build(c, stars).Context); closer(n, bestN, size) {
				cuts, bestN = c, n
			}
		}
	}
	return h.build(cuts, stars), bestN, nil
}

// tuneTail moves the last two cuts to hit size exactly. Only the text from
// the start of run M-2 changes, so it alone is recounted; the split point
// follows a star's closing newline, where tiktoken's pre-tokenizers break
// unless the whitespace that follows holds another newline. The caller
// confirms with a full count.
func (h *haystack) tuneTail(cuts []int, stars []string, size int) ([]int, bool) {
	m := len(stars)
	first := max(0, m-2) // first run in the tail
	head := h.build(cuts[:first], stars[:first]).Context
	if head != "" {
		// A newline at the end of leading whitespace would join the star's
		// closing newline into one pre-token across the split.
		rest := h.text[h.offs[prevCut(cuts, first)]:]
		lead := rest[:len(rest)-len(strings.TrimLeftFunc(rest, unicode.IsSpace))]
		if strings.ContainsAny(lead, "\r\n") {
			return nil, false
		}
	}
	headN := h.enc.Count(head)
	lo := prevCut(cuts, first)
	tail := func(c []int) int {
		var b strings.Builder
		prev := lo
		for i := first; i < m; i++ {
			b.WriteString(h.text[h.offs[prev]:h.offs[c[i]]])
			b.WriteString(stars[i])
			prev = c[i]
		}
		return headN + h.enc.Count(b.String())
	}
	c := append([]int(nil), cuts...)
	for _, d := range []int{0, 1, -1, 2, -2, 3, -3} {
		if first < m-1 {
			c[first] = h.charBoundary(max(lo, cuts[first]+d))
		}
		last := cuts[m-1]
		for range 4 {
			if last < c[max(first, m-2)] || last > len(h.tokens) {
				break
			}
			c[m-1] = last
			n := tail(c)
			if n == size {
				return c, true
			}
			next := h.charBoundary(last + size - n)
			if next == last {
				next = h.charBoundary(last + 1)
			}
			last = next
		}
	}
	return nil, false
}

// prevCut is the haystack token where run i starts.
func prevCut(cuts []int, i int) int {
	if i == 0 {
		return 0
	}
	return cuts[i-1]
}

// closer reports whether count a is a better fit for size than count b:
// nearer, and at equal distance not over the size.
func closer(a, b, size int) bool {
	da, db := abs(a-size), abs(b-size)
	if da != db {
		return da < db
	}
	return a < b
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// equalCuts splits the first budget haystack tokens into m runs of equal
// token count; cut i is where run i ends. Cuts move forward to the next
// token that starts a character, since a Chinese character often spans
// several tokens.
func (h *haystack) equalCuts(budget, m int) []int {
	cuts := make([]int, m)
	for i := range cuts {
		cuts[i] = h.charBoundary((i + 1) * budget / m)
	}
	return cuts
}

// build lays out run i of the haystack, then star i, for every cut.
func (h *haystack) build(cuts []int, stars []string) placed {
	size := 0
	if len(cuts) > 0 {
		size = h.offs[cuts[len(cuts)-1]]
	}
	for _, s := range stars {
		size += len(s)
	}
	var b strings.Builder
	b.Grow(size)
	positions := make([]int, len(stars))
	prev := 0
	for i, s := range stars {
		b.WriteString(h.text[h.offs[prev]:h.offs[cuts[i]]])
		positions[i] = b.Len()
		b.WriteString(s)
		prev = cuts[i]
	}
	return placed{Context: b.String(), Positions: positions}
}

// charBoundary returns the first token index at or after t where a
// character starts.
func (h *haystack) charBoundary(t int) int {
	for t < len(h.tokens) && !utf8.RuneStart(h.text[h.offs[t]]) {
		t++
	}
	return t
}
