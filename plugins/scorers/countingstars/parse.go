package countingstars

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Answer is a model's answer as the scorer reads it.
type Answer struct {
	// Items is the answer list in order. An item that is not an integer
	// (a word, 15.5) is kept as a miss so that truncation to M counts it,
	// as upstream's list slicing does.
	Items []Item
	// FormatOK is true when the list came from a JSON object under the
	// language's key; false when the scorer fell back to the integers in the
	// text.
	FormatOK bool
}

// Item is one element of the answer list.
type Item struct {
	Value int
	OK    bool // false when the element is not an integer
}

// Ints returns the integer items in order.
func (a Answer) Ints() []int {
	out := make([]int, 0, len(a.Items))
	for _, it := range a.Items {
		if it.OK {
			out = append(out, it.Value)
		}
	}
	return out
}

// Keys the question asks the list under.
const (
	KeyEN = "little_penguin"
	KeyZH = "小企鹅"
)

var intRE = regexp.MustCompile(`\d+`)

// ParseAnswer reads the count list out of a model's answer, the way
// upstream's viz.ipynb does and more forgivingly: code fences and a leading
// "json" are stripped, loose JSON is repaired (single or typographic quotes,
// bare keys, trailing commas, missing closing brackets, full-width commas),
// and the list is taken from the first object that has key, at any depth.
// keys holds the acceptable keys, the language's own first. Without such a
// list the answer falls back to every integer in the text, with FormatOK
// false.
func ParseAnswer(text string, keys ...string) Answer {
	t := stripFences(text)
	for i := 0; i < len(t); i++ {
		if t[i] != '{' {
			continue
		}
		p := &parser{s: t, i: i}
		v, ok := p.value(0)
		if !ok {
			continue
		}
		if list, found := findList(v, keys); found {
			return Answer{Items: toItems(list), FormatOK: true}
		}
		// Skip past what parsed; an inner '{' was part of it.
		i = max(i, p.i-1)
	}
	var items []Item
	for _, m := range intRE.FindAllString(t, -1) {
		n, err := strconv.Atoi(m)
		items = append(items, Item{Value: n, OK: err == nil})
	}
	return Answer{Items: items}
}

// stripFences removes markdown code fences and a leading "json" tag.
func stripFences(s string) string {
	s = strings.ReplaceAll(s, "```", "")
	s = strings.TrimSpace(s)
	if len(s) >= 4 && strings.EqualFold(s[:4], "json") {
		s = strings.TrimSpace(s[4:])
	}
	return s
}

// findList returns the list under the first of keys found in v, searching
// nested objects depth-first.
func findList(v any, keys []string) ([]any, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	for _, k := range keys {
		if list, ok := obj[k].([]any); ok {
			return list, true
		}
	}
	for _, child := range obj {
		if list, ok := findList(child, keys); ok {
			return list, true
		}
	}
	return nil, false
}

func toItems(list []any) []Item {
	items := make([]Item, len(list))
	for i, v := range list {
		switch v := v.(type) {
		case float64:
			if v == float64(int(v)) {
				items[i] = Item{Value: int(v), OK: true}
			}
		case string:
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				items[i] = Item{Value: n, OK: true}
			}
		}
	}
	return items
}

// parser is a forgiving JSON reader: it accepts what models write when they
// mean JSON and stops cleanly at the end of the input, closing whatever is
// open. Values are map[string]any, []any, float64, string, bool or nil.
type parser struct {
	s string
	i int
}

// maxDepth bounds nesting so a hostile answer cannot exhaust the stack.
const maxDepth = 64

func (p *parser) peek() rune {
	if p.i >= len(p.s) {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(p.s[p.i:])
	return r
}

func (p *parser) next() rune {
	r, n := utf8.DecodeRuneInString(p.s[p.i:])
	p.i += n
	return r
}

func (p *parser) space() {
	for p.i < len(p.s) && unicode.IsSpace(p.peek()) {
		p.next()
	}
}

// Separators models write in place of JSON's.
func isComma(r rune) bool { return r == ',' || r == '，' || r == '、' || r == ';' }
func isColon(r rune) bool { return r == ':' || r == '：' }

func closingQuote(open rune) rune {
	switch open {
	case '“':
		return '”'
	case '‘':
		return '’'
	}
	return open
}

func isQuote(r rune) bool { return r == '"' || r == '\'' || r == '“' || r == '‘' }

func (p *parser) value(depth int) (any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	p.space()
	switch r := p.peek(); {
	case r == '{':
		return p.object(depth)
	case r == '[':
		return p.array(depth)
	case isQuote(r):
		return p.str(), true
	case r == '-' || r == '+' || r == '.' || (r >= '0' && r <= '9'):
		return p.number()
	case unicode.IsLetter(r):
		word := p.word()
		switch strings.ToLower(word) {
		case "true":
			return true, true
		case "false":
			return false, true
		case "null", "none":
			return nil, true
		}
		return word, true
	}
	return nil, false
}

func (p *parser) object(depth int) (any, bool) {
	p.next() // '{'
	obj := map[string]any{}
	for {
		p.space()
		r := p.peek()
		switch {
		case r < 0:
			return obj, true
		case r == '}':
			p.next()
			return obj, true
		case isComma(r):
			p.next()
			continue
		}
		var key string
		switch {
		case isQuote(r):
			key = p.str()
		case unicode.IsLetter(r) || r == '_':
			key = p.word()
		default:
			return obj, len(obj) > 0
		}
		p.space()
		if !isColon(p.peek()) {
			return obj, len(obj) > 0
		}
		p.next()
		v, ok := p.value(depth + 1)
		if !ok {
			return obj, len(obj) > 0
		}
		obj[key] = v
	}
}

func (p *parser) array(depth int) (any, bool) {
	p.next() // '['
	list := []any{}
	for {
		p.space()
		r := p.peek()
		switch {
		case r < 0:
			return list, true
		case r == ']':
			p.next()
			return list, true
		case r == '}':
			// A list closed by the object's brace: the ']' is missing.
			return list, true
		case isComma(r):
			p.next()
			continue
		}
		v, ok := p.value(depth + 1)
		if !ok {
			// Keep one slot for the unreadable element so truncation still
			// counts it, and resume at the next separator.
			for p.i < len(p.s) {
				if r := p.peek(); isComma(r) || r == ']' || r == '}' {
					break
				}
				p.next()
			}
			v = nil
		}
		list = append(list, v)
	}
}

// str reads a quoted string with JSON escapes; an unterminated string runs
// to the end of the input.
func (p *parser) str() string {
	closeQ := closingQuote(p.next())
	var b strings.Builder
	for p.i < len(p.s) {
		r := p.next()
		switch {
		case r == closeQ:
			return b.String()
		case r == '\\' && p.i < len(p.s):
			e := p.next()
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'u':
				if p.i+4 <= len(p.s) {
					if n, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32); err == nil {
						b.WriteRune(rune(n))
						p.i += 4
						continue
					}
				}
				b.WriteRune(e)
			default:
				b.WriteRune(e)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func (p *parser) word() string {
	start := p.i
	for p.i < len(p.s) {
		r := p.peek()
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') {
			break
		}
		p.next()
	}
	return p.s[start:p.i]
}

func (p *parser) number() (any, bool) {
	start := p.i
	for p.i < len(p.s) && strings.IndexByte("+-.0123456789eE", p.s[p.i]) >= 0 {
		p.i++
	}
	f, err := strconv.ParseFloat(p.s[start:p.i], 64)
	if err != nil {
		return nil, false
	}
	return f, true
}
