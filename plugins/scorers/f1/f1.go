// Package f1 is the F1 scorer, in three modes:
//
//   - "tokens": SQuAD's token F1 (normalize_answer, whitespace tokens, bag
//     overlap), the maximum over targets;
//   - "chars": character F1 for Chinese and other unsegmented text: lowercase,
//     drop punctuation (ASCII and Unicode) and whitespace, one token per
//     character;
//   - "choices": set F1 between the option letters in the prediction and in
//     the targets, for multiple-answer multiple-choice items.
//
// With mode unset, language "zh" (the option, or else the sample's language)
// selects "chars" and anything else "tokens".
package f1

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/hayloft/hayloft/plugins/scorers/exact"
	"github.com/hayloft/hayloft/sdk"
)

// Name is the name the scorer is registered under.
const Name = "f1"

// Modes accepted by the mode option.
const (
	ModeTokens  = "tokens"
	ModeChars   = "chars"
	ModeChoices = "choices"
)

// Options are the scorer's settings.
type Options struct {
	Mode     string `json:"mode"`
	Language string `json:"language"`
	// Letters are the option letters recognised in "choices" mode. Default:
	// as many letters from A as the sample has choices, else "ABCD".
	Letters string `json:"letters"`
}

// Scorer is the F1 scorer. It is safe for concurrent use.
type Scorer struct {
	opts Options
}

// New builds the scorer.
func New(ctx context.Context, opts sdk.Options) (sdk.Scorer, error) {
	var o Options
	if err := opts.Decode(&o); err != nil {
		return nil, err
	}
	switch o.Mode {
	case "", ModeTokens, ModeChars, ModeChoices:
	default:
		return nil, sdk.Configf("mode", "unknown mode %q (want %q, %q or %q)", o.Mode, ModeTokens, ModeChars, ModeChoices)
	}
	for _, r := range o.Letters {
		if r < 'A' || r > 'Z' {
			return nil, sdk.Configf("letters", "want capital letters A-Z, got %q", o.Letters)
		}
	}
	if o.Letters != "" && o.Mode != ModeChoices {
		return nil, sdk.Configf("letters", "applies to mode %q only", ModeChoices)
	}
	return &Scorer{opts: o}, nil
}

func (s *Scorer) mode(sample *sdk.Sample) string {
	if s.opts.Mode != "" {
		return s.opts.Mode
	}
	lang := s.opts.Language
	if lang == "" {
		lang = sample.Language
	}
	if lang == "zh" || strings.HasPrefix(lang, "zh-") || strings.HasPrefix(lang, "zh_") {
		return ModeChars
	}
	return ModeTokens
}

// Score returns the F1 of the prediction, the best over targets.
func (s *Scorer) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	if err := req.NeedTargets(Name); err != nil {
		return nil, err
	}
	sample := req.Sample
	mode := s.mode(sample)
	if mode == ModeChoices {
		return s.choices(sample, req.Prediction)
	}
	tokens := squadTokens
	if mode == ModeChars {
		tokens = charTokens
	}
	pred := tokens(req.Prediction)
	best := prf{}
	for _, t := range sample.Targets {
		if sc := bagF1(pred, tokens(t)); sc.f > best.f {
			best = sc
		}
	}
	return &sdk.ScoreResponse{Value: best.f, Details: map[string]any{
		"precision": best.p, "recall": best.r, "f1": best.f, "mode": mode,
	}}, nil
}

type prf struct{ p, r, f float64 }

func squadTokens(s string) []string { return strings.Fields(exact.SQuAD.Apply(s)) }

// charTokens is the character F1 normalisation: lowercase, no punctuation,
// no whitespace, one token per character.
func charTokens(s string) []string {
	var out []string
	for _, r := range strings.ToLower(s) {
		if unicode.IsSpace(r) || unicode.IsPunct(r) || exact.IsASCIIPunct(r) {
			continue
		}
		out = append(out, string(r))
	}
	return out
}

// bagF1 is SQuAD's f1_score over token lists: overlap of the multisets.
func bagF1(pred, truth []string) prf {
	counts := make(map[string]int, len(truth))
	for _, t := range truth {
		counts[t]++
	}
	same := 0
	for _, p := range pred {
		if counts[p] > 0 {
			counts[p]--
			same++
		}
	}
	if same == 0 {
		return prf{}
	}
	p := float64(same) / float64(len(pred))
	r := float64(same) / float64(len(truth))
	return prf{p, r, 2 * p * r / (p + r)}
}

func (s *Scorer) letters(sample *sdk.Sample) string {
	if s.opts.Letters != "" {
		return s.opts.Letters
	}
	if n := len(sample.Choices); n > 0 && n <= 26 {
		return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n]
	}
	return "ABCD"
}

// ExtractLetters returns the option letters a text names, in alphabetical
// order without repeats: every run of ASCII letters made only of allowed
// capitals ("B", "AC") contributes its letters; other words ("The", "a")
// are ignored.
func ExtractLetters(text, allowed string) string {
	var seen [26]bool
	word := func(w string) {
		if w == "" {
			return
		}
		for i := 0; i < len(w); i++ {
			if !strings.ContainsRune(allowed, rune(w[i])) {
				return
			}
		}
		for i := 0; i < len(w); i++ {
			seen[w[i]-'A'] = true
		}
	}
	start := -1
	for i := 0; i <= len(text); i++ {
		isLetter := i < len(text) && (('A' <= text[i] && text[i] <= 'Z') || ('a' <= text[i] && text[i] <= 'z'))
		if isLetter {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			word(text[start:i])
			start = -1
		}
	}
	var b strings.Builder
	for i, ok := range seen {
		if ok {
			b.WriteByte(byte('A' + i))
		}
	}
	return b.String()
}

func (s *Scorer) choices(sample *sdk.Sample, prediction string) (*sdk.ScoreResponse, error) {
	allowed := s.letters(sample)
	truth := ExtractLetters(strings.Join(sample.Targets, " "), allowed)
	if truth == "" {
		return nil, fmt.Errorf("%s: sample %q: targets %q name no option letter of %q", Name, sample.ID, sample.Targets, allowed)
	}
	pred := ExtractLetters(prediction, allowed)
	if pred == "" {
		// An answer naming no option cannot be scored; it is counted apart
		// rather than as a wrong answer.
		return &sdk.ScoreResponse{Invalid: true, Details: map[string]any{"predicted": "", "target": truth, "mode": ModeChoices}}, nil
	}
	same := 0
	for _, r := range pred {
		if strings.ContainsRune(truth, r) {
			same++
		}
	}
	var sc prf
	if same > 0 {
		sc.p = float64(same) / float64(len(pred))
		sc.r = float64(same) / float64(len(truth))
		sc.f = 2 * sc.p * sc.r / (sc.p + sc.r)
	}
	return &sdk.ScoreResponse{Value: sc.f, Details: map[string]any{
		"precision": sc.p, "recall": sc.r, "f1": sc.f, "predicted": pred, "target": truth, "mode": ModeChoices,
	}}, nil
}
