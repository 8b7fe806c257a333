package countingstars

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// placed is a context with its star sentences in place.
type placed struct {
	Context string
	// Positions are the byte offsets in Context where each star sentence
	// starts, in star order.
	Positions []int
}

// sprinkleChars places stars in the first j code points of hay exactly as
// upstream does for Chinese. Upstream inserts star i at code-point index
// (i+1)·⌊j/M⌋ + len(star_i)·i of the text built so far. The second term
// was meant to skip the sentences already inserted, but it uses the current
// sentence's length for all of them, so when counts differ in digits a star
// drifts by a few characters; an index past the end appends. Reproducing the
// drift keeps the reference contexts identical to the published ones. With a
// step shorter than the drift a star can land inside an earlier sentence;
// upstream would publish that broken text, this returns an error instead.
func sprinkleChars(hay []rune, j int, stars []string) (placed, error) {
	m := len(stars)
	step := j / m
	total := j
	starRunes := make([][]rune, m)
	for i, s := range stars {
		starRunes[i] = []rune(s)
		total += len(starRunes[i])
	}
	text := make([]rune, j, total)
	copy(text, hay[:j])
	starts := make([]int, m) // code-point offsets, kept current as stars go in
	for i, sr := range starRunes {
		pos := (i+1)*step + len(sr)*i
		pos = min(pos, len(text))
		for k := range i {
			if starts[k] < pos && pos < starts[k]+len(starRunes[k]) {
				return placed{}, fmt.Errorf("star %d lands inside star %d: %d characters are too few for %d stars under reference placement", i, k, j, m)
			}
			// A star inserted before an earlier one moves it.
			if starts[k] >= pos {
				starts[k] += len(sr)
			}
		}
		starts[i] = pos
		text = slices.Insert(text, pos, sr...)
	}
	return placed{Context: string(text), Positions: runeToByteOffsets(text, starts)}, nil
}

// runeToByteOffsets converts code-point offsets in text into byte offsets in
// string(text).
func runeToByteOffsets(text []rune, offsets []int) []int {
	order := make([]int, len(offsets))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return offsets[a] - offsets[b] })
	out := make([]int, len(offsets))
	ri, bi := 0, 0
	for _, k := range order {
		for ri < offsets[k] {
			bi += utf8.RuneLen(text[ri])
			ri++
		}
		out[k] = bi
	}
	return out
}

// sprinkleWords places stars in the first j space-separated units of words
// exactly as upstream does for English. Upstream rebuilds the text for every
// star: it splits on " ", joins the first (i+1)·⌊j/M⌋ + s·i units (s is the
// number of units of a star sentence), appends the sentence with no space on
// either side, then joins the rest. Because a sentence starts and ends with
// "\n" rather than a space, it fuses with its neighbours and adds only s−2
// units, not s; so in the original text star i lands after
// (i+1)·⌊j/M⌋ + 2i units, and at the end once that passes j. The text is
// built once here from those offsets instead of M rebuilds; the test suite
// checks it against the literal rebuild.
func sprinkleWords(words []string, j int, stars []string) placed {
	m := len(stars)
	step := j / m
	words = words[:j]
	size := 0
	for _, w := range words {
		size += len(w) + 1
	}
	for _, s := range stars {
		size += len(s)
	}
	var b strings.Builder
	b.Grow(size)
	positions := make([]int, m)
	prev := 0
	for i, s := range stars {
		at := min((i+1)*step+2*i, j)
		joinTo(&b, words[prev:at])
		positions[i] = b.Len()
		b.WriteString(s)
		prev = at
	}
	joinTo(&b, words[prev:])
	return placed{Context: b.String(), Positions: positions}
}

// joinTo writes strings.Join(words, " ") to b without the intermediate string.
func joinTo(b *strings.Builder, words []string) {
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
}
