package adaleval

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/tokenizer"
)

// book is a text split into paragraphs, each counted once.
type book struct {
	paras  []string
	tokens []int
}

// blankLine separates paragraphs.
var blankLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\n[ \t\r\f\v\x{3000}]*\n`) })

// chapterHeading matches a paragraph that is only a chapter or book
// heading: "CHAPTER IV", "Book II.", "第一回 …", "第1章 …". The builder
// drops such paragraphs so no chapter number gives the order away.
var chapterHeading = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(?:(?:chapter|book|part|section)\s+(?:[ivxlcdm]+|\d+)\b\.?(?:[ \t:.—-][^\n]{0,60})?|第[0-9零〇一二三四五六七八九十百千两]+[回章节卷部篇](?:\s[^\n]{0,60})?)$`)
})

// separatorOnly is a paragraph of rules and punctuation ("------------").
var separatorOnly = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[\p{P}\p{S}\s]*$`) })

// paragraphs splits text at blank lines, trims each paragraph and drops
// headings and separators. Lines inside a paragraph keep their newlines.
func paragraphs(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out []string
	for _, p := range blankLine().Split(text, -1) {
		p = strings.TrimSpace(strings.Trim(p, "\u3000"))
		if p == "" || separatorOnly().MatchString(p) || chapterHeading().MatchString(p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func readBook(path string, enc *tokenizer.Encoding) (*book, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b := &book{paras: paragraphs(string(raw))}
	b.tokens = make([]int, len(b.paras))
	for i, p := range b.paras {
		b.tokens[i] = enc.Count(p)
	}
	return b, nil
}

// joinSep joins the paragraphs of one part.
const joinSep = "\n"

// tsBuilt is the cases of one setting: paragraph ranges and a shuffle,
// rendered when streamed.
type tsBuilt struct {
	setting Setting
	book    *book
	cases   []tsCase
	spans   []spanPerm // parallel to cases
	dropped int        // cases over the setting's bound
	skipped int        // start positions where a part could not be filled
}

// spanPerm is a built case's layout: its paragraph ranges and shuffle.
type spanPerm struct {
	span tsSpan
	perm []int
}

// render fills in a built case's text from its layout.
func (b tsBuilt) render(c tsCase) tsCase {
	sp := b.spans[c.Index]
	c.Before = b.book.part(sp.span.from[0], sp.span.to[0])
	c.After = b.book.part(sp.span.from[5], sp.span.to[5])
	c.Parts = make([]string, 4)
	for k, seg := range sp.perm {
		c.Parts[k] = b.book.part(sp.span.from[1+seg], sp.span.to[1+seg])
	}
	c.Prompt = TSortInstruction + tsortBody(c.Before, c.Parts, c.After)
	return c
}

// tsSpan is where a built case's parts lie: paragraphs [from[k], to[k]).
type tsSpan struct{ from, to [6]int }

// fill takes whole paragraphs from i while they fit limit tokens (counting
// the separator as a token, which is never less than the joined text
// costs). It returns the end, or i when even one paragraph is too long.
func (b *book) fill(i, limit int) (int, int) {
	sum := 0
	j := i
	for j < len(b.paras) {
		add := b.tokens[j]
		if j > i {
			add++
		}
		if sum+add > limit {
			break
		}
		sum += add
		j++
	}
	return j, sum
}

// layout fills before, the four segments and after from paragraph i on;
// false when one of them cannot hold even its first paragraph.
func (b *book) layout(i int, lim tsortLimits) (tsSpan, int, bool) {
	var sp tsSpan
	total := 0
	for k, l := range [6]int{lim.Before, lim.Segment, lim.Segment, lim.Segment, lim.Segment, lim.After} {
		j, n := b.fill(i, l)
		if j == i {
			return sp, 0, false
		}
		sp.from[k], sp.to[k] = i, j
		total += n
		i = j
	}
	return sp, total, true
}

func (b *book) part(from, to int) string { return strings.Join(b.paras[from:to], joinSep) }

// buildTSort builds every chosen setting from the book at Source.
func (t *Task) buildTSort(enc *tokenizer.Encoding) (*plan, error) {
	b, err := readBook(t.opts.Source, enc)
	if err != nil {
		return nil, sdk.Configf("source", "%v", err)
	}
	settings := t.settings
	if len(settings) == 0 {
		for _, n := range TSortSettings {
			s, _ := ParseSetting(n)
			settings = append(settings, s)
		}
	}
	instr := enc.Count(TSortInstruction)
	tmpl := enc.Count(tsortBody("", []string{"", "", "", ""}, ""))
	p := &plan{enc: enc}
	for _, s := range settings {
		built := buildSetting(b, s, tsortTable[s.Name], instr+tmpl, t.opts.Seed, t.perSettingBuilt(), enc)
		if len(built.cases) == 0 {
			return nil, sdk.Configf("source", "%s is too short for TSort setting %s: %d paragraphs give no case within its limits (%d over the %d-token bound, %d with a paragraph over a part limit)",
				t.opts.Source, s.Name, len(b.paras), built.dropped, tsortTable[s.Name].Bound, built.skipped)
		}
		for i := range built.cases {
			built.cases[i].Dropped, built.cases[i].Skipped = built.dropped, built.skipped
		}
		p.ts = append(p.ts, built)
	}
	return p, nil
}

// perSettingBuilt caps built cases per setting: limit, else all.
func (t *Task) perSettingBuilt() int { return t.opts.Limit }

func buildSetting(b *book, s Setting, lim tsortLimits, fixed int, seed int64, max int, enc *tokenizer.Encoding) tsBuilt {
	out := tsBuilt{setting: s, book: b}
	r := rng(seed, "tsort-"+s.Name)
	for start := 0; start < len(b.paras); start += lim.Stride {
		if max > 0 && len(out.cases) >= max {
			break
		}
		// A case begins at the stride's paragraph, or at the first one
		// after it, within the stride, from which every part can be filled
		// with whole paragraphs.
		var (
			sp    tsSpan
			total int
			ok    bool
			first int
		)
		for first = start; first < min(start+lim.Stride, len(b.paras)); first++ {
			if sp, total, ok = b.layout(first, lim); ok {
				break
			}
		}
		if !ok {
			out.skipped++
			continue
		}
		total += fixed
		// Shuffle the four segments: part k shows segment perm[k].
		perm := r.Perm(4)
		c := tsCase{Setting: s, Index: len(out.cases), Built: true, ParaOffset: fmt.Sprint(first)}
		// The answer lists parts in the original order: segment i is in
		// the part k with perm[k] == i.
		c.Answer = make([]int, 4)
		for k, seg := range perm {
			c.Answer[seg] = k + 1
		}
		c.Tokens = total
		if total > lim.Bound {
			// The estimate counts each paragraph and separator alone, which
			// never costs less than the whole: count the prompt to decide.
			full := tsBuilt{book: b, spans: []spanPerm{{sp, perm}}}.render(tsCase{})
			if c.Tokens = enc.Count(full.Prompt); c.Tokens > lim.Bound {
				out.dropped++
				continue
			}
		}
		// Only the layout is kept; the text is rebuilt when streamed.
		out.cases = append(out.cases, c)
		out.spans = append(out.spans, spanPerm{sp, perm})
	}
	return out
}
