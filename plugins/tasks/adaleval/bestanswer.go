package adaleval

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/tokenizer"
)

// Tag rules for distractors from other questions: share at least 40% of
// the question's tags below 32k, at least one tag at 32k and above.
const (
	tagShare      = 0.4
	minFillFactor = 2 // a built case fills at least 1/minFillFactor of its setting
)

// notTextOnly marks an answer with an image: the paper keeps only
// questions whose accepted answer is text alone. This package's regexps are
// compiled on first use: every hayloft process links the package, plugin
// processes included, and compiling them all at init was 0.7 ms of each
// start.
var notTextOnly = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)<img\b|!\[[^\]]*\]\(|https?://\S+\.(?:png|jpe?g|gif|svg|webp)\b`)
})

// dumpQuestion is one question of a Stack Exchange–style dump: the
// released layout, with all_answers holding the question's own answers in
// the order they were posted and answer designating the accepted one.
type dumpQuestion struct {
	baCase
	answerTokens []int
}

// BestAnswerFillRule names the fill rule of built BestAnswer cases, a
// choice of hayloft's (the paper gives no length rule); every built sample
// records it in its metadata (MetaFillRule), as buildBestAnswer describes it.
const BestAnswerFillRule = "hayloft-1: the accepted answer, then the question's other answers, then related questions' answers in a seeded order, while the prompt stays within the setting's nominal cl100k_base size; at least two answers filling at least half the room left for answers"

// buildBestAnswer builds the chosen settings from the dump at Source.
//
// Fill rule (hayloft's; the paper gives none): after the accepted answer,
// distractors are added in order — the question's other answers, then the
// answers of related questions in a seeded order — while the prompt stays
// within the setting's nominal size in cl100k_base; a case needs at least
// two answers and must fill at least half of the room its setting leaves
// for answers, else the question is not
// used at that setting. The accepted answer's place is drawn per case.
// 1k–16k use one question set: the first questions, in a seeded order,
// that make a case at every one of those settings. 32k and above are built
// apart, each with the first questions that make a case there.
func (t *Task) buildBestAnswer(enc *tokenizer.Encoding) (*plan, error) {
	qs, err := readDump(t.opts.Source, enc)
	if err != nil {
		return nil, sdk.Configf("source", "%v", err)
	}
	settings := t.settings
	if len(settings) == 0 {
		for _, n := range BestAnswerSettings {
			s, _ := ParseSetting(n)
			settings = append(settings, s)
		}
	}
	order := rng(t.opts.Seed, "bestanswer-questions").Perm(len(qs))
	fixed := enc.Count(BestAnswerMetaPrompt+"The question is given below.\n") + enc.Count("\n\nPossible answers are given below.\n") + enc.Count(BestAnswerTail)

	var long, ultra []Setting
	for _, s := range settings {
		if s.ultraLong() {
			ultra = append(ultra, s)
		} else {
			long = append(long, s)
		}
	}
	p := &plan{enc: enc}
	byName := map[string][]baCase{}
	if len(long) > 0 {
		want := t.perSetting(long[0])
		sets := make([][]baCase, len(long))
		for _, qi := range order {
			if len(sets[0]) >= want {
				break
			}
			cases := make([]baCase, len(long))
			ok := true
			for k, s := range long {
				if cases[k], ok = makeCase(qs, qi, order, s, fixed, t.opts.Seed, enc); !ok {
					break
				}
			}
			if !ok {
				continue
			}
			for k := range long {
				cases[k].Index = len(sets[k])
				sets[k] = append(sets[k], cases[k])
			}
		}
		for k, s := range long {
			byName[s.Name] = sets[k]
		}
	}
	for _, s := range ultra {
		want := t.perSetting(s)
		var set []baCase
		for _, qi := range order {
			if len(set) >= want {
				break
			}
			if c, ok := makeCase(qs, qi, order, s, fixed, t.opts.Seed, enc); ok {
				c.Index = len(set)
				set = append(set, c)
			}
		}
		byName[s.Name] = set
	}
	for _, s := range settings {
		if len(byName[s.Name]) == 0 {
			return nil, sdk.Configf("source", "%s: no question makes a BestAnswer case at setting %s (a text-only accepted answer and enough related answers to fill half of %d tokens)",
				t.opts.Source, s.Name, s.Tokens)
		}
		p.ba = append(p.ba, byName[s.Name])
	}
	return p, nil
}

// readDump reads and checks a Stack Exchange–style dump.
func readDump(path string, enc *tokenizer.Encoding) ([]dumpQuestion, error) {
	var qs []dumpQuestion
	err := scanItems(path, 0, func(i int, it *bestAnswerItem) (bool, error) {
		c, err := decodeBestAnswer(it)
		if err != nil {
			return false, err
		}
		q := dumpQuestion{baCase: c}
		for _, a := range c.Answers {
			q.answerTokens = append(q.answerTokens, enc.Count(a))
		}
		qs = append(qs, q)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return qs, nil
}

// related reports whether o's answers may serve as q's distractors.
func related(q, o *dumpQuestion, ultra bool) bool {
	if len(q.Tags) == 0 {
		return false
	}
	shared := 0
	for _, a := range q.Tags {
		for _, b := range o.Tags {
			if a == b {
				shared++
				break
			}
		}
	}
	if ultra {
		return shared >= 1
	}
	return float64(shared) >= tagShare*float64(len(q.Tags))
}

// candidate is one answer in a case: from which question, which answer.
type candidate struct{ q, a int }

// makeCase builds question qi's case at setting s, or reports that it
// cannot.
func makeCase(qs []dumpQuestion, qi int, order []int, s Setting, fixed int, seed int64, enc *tokenizer.Encoding) (baCase, bool) {
	q := &qs[qi]
	if notTextOnly().MatchString(q.Answers[q.Truth]) {
		return baCase{}, false
	}
	budget := s.Tokens - fixed - enc.Count(q.Question)
	total := 0
	cost := func(c candidate, slot int) int {
		return enc.Count("A"+strconv.Itoa(slot)+":\n\n") + qs[c.q].answerTokens[c.a] + 1
	}
	picked := []candidate{{qi, q.Truth}}
	if total = cost(picked[0], 1); total > budget {
		return baCase{}, false
	}
	try := func(c candidate) bool {
		n := cost(c, len(picked)+1)
		if total+n > budget {
			return false
		}
		total += n
		picked = append(picked, c)
		return true
	}
	// Distractors in order until the next one does not fit.
	func() {
		for a := range q.Answers {
			if a != q.Truth && !try(candidate{qi, a}) {
				return
			}
		}
		for _, oi := range order {
			if oi == qi || !related(q, &qs[oi], s.ultraLong()) {
				continue
			}
			for a := range qs[oi].Answers {
				if !try(candidate{oi, a}) {
					return
				}
			}
		}
	}()
	if len(picked) < 2 || total*minFillFactor < budget {
		return baCase{}, false
	}
	// Draw the accepted answer's place; the distractors keep their order.
	r := rng(seed, fmt.Sprintf("bestanswer-%s-%s", s.Name, q.QuestionID))
	truth := r.IntN(len(picked))
	answers := make([]string, 0, len(picked))
	for _, c := range picked[1:] {
		answers = append(answers, qs[c.q].Answers[c.a])
	}
	answers = append(answers[:truth], append([]string{q.Answers[q.Truth]}, answers[truth:]...)...)
	return baCase{Setting: s, QuestionID: q.QuestionID, Question: q.Question, Answers: answers,
		Truth: truth, Tags: q.Tags, Built: true}, true
}
