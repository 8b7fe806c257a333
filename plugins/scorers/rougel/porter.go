package rougel

import (
	"strings"
	"sync"
	"sync/atomic"
)

// This file is a Porter stemmer that gives the same stems as NLTK's
// PorterStemmer in its default NLTK_EXTENSIONS mode, which is what
// rouge_score uses for use_stemmer=True. The NLTK departures from the 1980
// paper are marked "NLTK:". Input is a lowercase ASCII word; rouge_score
// only stems tokens of [a-z0-9] longer than 3 characters.

// irregular maps words NLTK stems by table instead of by rule.
var irregular = map[string]string{
	"sky": "sky", "skies": "sky",
	"dying": "die", "lying": "lie", "tying": "tie",
	"news":    "news",
	"innings": "inning", "inning": "inning",
	"outings": "outing", "outing": "outing",
	"cannings": "canning", "canning": "canning",
	"howe":    "howe",
	"proceed": "proceed", "exceed": "exceed", "succeed": "succeed",
}

// stem returns the NLTK Porter stem of a lowercase word.
func stem(w string) string {
	if s, ok := irregular[w]; ok {
		return s
	}
	if len(w) <= 2 {
		return w
	}
	w = step1a(w)
	w = step1b(w)
	w = step1c(w)
	w = step2(w)
	w = step3(w)
	w = step4(w)
	w = step5a(w)
	w = step5b(w)
	return w
}

// isCons reports whether w[i] is a consonant in Porter's sense: y is a
// consonant at the start of a word or after a vowel.
func isCons(w string, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !isCons(w, i-1)
	}
	return true
}

// measure is m in [C](VC){m}[V]: the number of vowel-to-consonant switches.
func measure(s string) int {
	m := 0
	prevCons := true
	for i := 0; i < len(s); i++ {
		c := isCons(s, i)
		if c && !prevCons && i > 0 {
			m++
		}
		prevCons = c
	}
	return m
}

func positive(s string) bool { return measure(s) > 0 }
func above1(s string) bool   { return measure(s) > 1 }

func containsVowel(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isCons(s, i) {
			return true
		}
	}
	return false
}

func endsDoubleCons(w string) bool {
	n := len(w)
	return n >= 2 && w[n-1] == w[n-2] && isCons(w, n-1)
}

// endsCVC is the paper's *o condition, plus NLTK's two-letter vc case.
func endsCVC(w string) bool {
	n := len(w)
	if n >= 3 && isCons(w, n-3) && !isCons(w, n-2) && isCons(w, n-1) {
		switch w[n-1] {
		case 'w', 'x', 'y':
		default:
			return true
		}
	}
	return n == 2 && !isCons(w, 0) && isCons(w, 1) // NLTK:
}

// rule replaces suffix by repl when cond holds for the remaining stem. A
// doubled rule matches any double consonant ending instead of a suffix.
type rule struct {
	suffix, repl string
	cond         func(stem string) bool
	doubled      bool
}

// apply runs the first rule whose suffix matches. As in NLTK, a matching
// suffix whose condition fails stops the list: later rules are not tried.
func apply(w string, rules []rule) string {
	for _, r := range rules {
		if r.doubled {
			if !endsDoubleCons(w) {
				continue
			}
			s := w[:len(w)-2]
			if r.cond == nil || r.cond(s) {
				return s + r.repl
			}
			return w
		}
		if strings.HasSuffix(w, r.suffix) {
			s := w[:len(w)-len(r.suffix)]
			if r.cond == nil || r.cond(s) {
				return s + r.repl
			}
			return w
		}
	}
	return w
}

var step1aRules = []rule{
	{suffix: "sses", repl: "ss"},
	{suffix: "ies", repl: "i"},
	{suffix: "ss", repl: "ss"},
	{suffix: "s", repl: ""},
}

func step1a(w string) string {
	if len(w) == 4 && strings.HasSuffix(w, "ies") { // NLTK: dies -> die
		return w[:1] + "ie"
	}
	return apply(w, step1aRules)
}

func step1b(w string) string {
	if strings.HasSuffix(w, "ied") { // NLTK: died -> die, spied -> spi
		if len(w) == 4 {
			return w[:1] + "ie"
		}
		return w[:len(w)-3] + "i"
	}
	if strings.HasSuffix(w, "eed") {
		if s := w[:len(w)-3]; positive(s) {
			return s + "ee"
		}
		return w
	}
	var s string
	ok := false
	for _, suf := range [...]string{"ed", "ing"} {
		if strings.HasSuffix(w, suf) {
			if cand := w[:len(w)-len(suf)]; containsVowel(cand) {
				s, ok = cand, true
				break
			}
		}
	}
	if !ok {
		return w
	}
	last := s[len(s)-1]
	return apply(s, []rule{
		{suffix: "at", repl: "ate"},
		{suffix: "bl", repl: "ble"},
		{suffix: "iz", repl: "ize"},
		{doubled: true, repl: string(last), cond: func(string) bool {
			return last != 'l' && last != 's' && last != 'z'
		}},
		{suffix: "", repl: "e", cond: func(st string) bool {
			return measure(st) == 1 && endsCVC(st)
		}},
	})
}

func step1c(w string) string {
	// NLTK: y -> i only after a consonant that is not the whole stem.
	return apply(w, []rule{{suffix: "y", repl: "i", cond: func(s string) bool {
		return len(s) > 1 && isCons(s, len(s)-1)
	}}})
}

var step2Rules = []rule{
	{suffix: "ational", repl: "ate", cond: positive},
	{suffix: "tional", repl: "tion", cond: positive},
	{suffix: "enci", repl: "ence", cond: positive},
	{suffix: "anci", repl: "ance", cond: positive},
	{suffix: "izer", repl: "ize", cond: positive},
	{suffix: "bli", repl: "ble", cond: positive},
	{suffix: "alli", repl: "al", cond: positive},
	{suffix: "entli", repl: "ent", cond: positive},
	{suffix: "eli", repl: "e", cond: positive},
	{suffix: "ousli", repl: "ous", cond: positive},
	{suffix: "ization", repl: "ize", cond: positive},
	{suffix: "ation", repl: "ate", cond: positive},
	{suffix: "ator", repl: "ate", cond: positive},
	{suffix: "alism", repl: "al", cond: positive},
	{suffix: "iveness", repl: "ive", cond: positive},
	{suffix: "fulness", repl: "ful", cond: positive},
	{suffix: "ousness", repl: "ous", cond: positive},
	{suffix: "aliti", repl: "al", cond: positive},
	{suffix: "iviti", repl: "ive", cond: positive},
	{suffix: "biliti", repl: "ble", cond: positive},
	{suffix: "fulli", repl: "ful", cond: positive}, // NLTK:
}

func step2(w string) string {
	// NLTK: alli -> al first, then step 2 again on the result.
	if strings.HasSuffix(w, "alli") && positive(w[:len(w)-4]) {
		return step2(w[:len(w)-4] + "al")
	}
	out := apply(w, step2Rules)
	if out != w || !strings.HasSuffix(w, "logi") {
		return out
	}
	// NLTK: logi -> log with the l counted in the stem, so geo-, theo- work.
	// It is last in NLTK's list; an earlier rule can only match a logi word
	// through a suffix it does not have, so checking it after is equivalent.
	if positive(w[:len(w)-3]) {
		return w[:len(w)-1]
	}
	return w
}

var step3Rules = []rule{
	{suffix: "icate", repl: "ic", cond: positive},
	{suffix: "ative", repl: "", cond: positive},
	{suffix: "alize", repl: "al", cond: positive},
	{suffix: "iciti", repl: "ic", cond: positive},
	{suffix: "ical", repl: "ic", cond: positive},
	{suffix: "ful", repl: "", cond: positive},
	{suffix: "ness", repl: "", cond: positive},
}

func step3(w string) string { return apply(w, step3Rules) }

var step4Rules = []rule{
	{suffix: "al", cond: above1},
	{suffix: "ance", cond: above1},
	{suffix: "ence", cond: above1},
	{suffix: "er", cond: above1},
	{suffix: "ic", cond: above1},
	{suffix: "able", cond: above1},
	{suffix: "ible", cond: above1},
	{suffix: "ant", cond: above1},
	{suffix: "ement", cond: above1},
	{suffix: "ment", cond: above1},
	{suffix: "ent", cond: above1},
	{suffix: "ion", cond: func(s string) bool {
		return measure(s) > 1 && (s[len(s)-1] == 's' || s[len(s)-1] == 't')
	}},
	{suffix: "ou", cond: above1},
	{suffix: "ism", cond: above1},
	{suffix: "ate", cond: above1},
	{suffix: "iti", cond: above1},
	{suffix: "ous", cond: above1},
	{suffix: "ive", cond: above1},
	{suffix: "ize", cond: above1},
}

func step4(w string) string { return apply(w, step4Rules) }

func step5a(w string) string {
	if !strings.HasSuffix(w, "e") {
		return w
	}
	s := w[:len(w)-1]
	m := measure(s)
	if m > 1 || (m == 1 && !endsCVC(s)) {
		return s
	}
	return w
}

func step5b(w string) string {
	if strings.HasSuffix(w, "ll") && measure(w[:len(w)-1]) > 1 {
		return w[:len(w)-1]
	}
	return w
}

// stemCache remembers stems: text repeats words, and stemming is the most
// expensive step of tokenisation. Reads are lock-free (sync.Map suits this
// read-mostly use across the kernel's goroutines); it stops growing at
// stemCacheMax entries so a stream of unique tokens cannot exhaust memory.
type stemCache struct {
	m    sync.Map // word -> stem
	size atomic.Int64
}

const stemCacheMax = 1 << 17

func newStemCache() *stemCache { return &stemCache{} }

func (c *stemCache) stem(w string) string {
	if s, ok := c.m.Load(w); ok {
		return s.(string)
	}
	s := stem(w)
	if c.size.Load() < stemCacheMax {
		// Both cloned: w is a piece of the caller's text, and so is s
		// when the stem is a prefix of it, and that text's memory may be
		// reused once the call returns (scoreio's input chunks in
		// process), where a cached stem would change under the cache.
		if _, loaded := c.m.LoadOrStore(strings.Clone(w), strings.Clone(s)); !loaded {
			c.size.Add(1)
		}
	}
	return s
}
