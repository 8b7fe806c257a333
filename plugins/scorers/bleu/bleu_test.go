package bleu

import (
	"context"
	"errors"
	"fmt"
	"github.com/hayloft/hayloft/plugins/internal/pytext"
	"github.com/hayloft/hayloft/plugins/internal/scorebench"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

func TestTokenizers(t *testing.T) {
	for _, tc := range []struct {
		tok, in, want string
	}{
		// 13a: punctuation split off, except . and , between digits, and -
		// only after a digit; entities unescaped; lines joined.
		{"13a", "Hello, world! It's 3.14 and 1,000.", "Hello , world ! It's 3.14 and 1,000 ."},
		{"13a", "a.,b", "a . , b"},
		{"13a", "5.,x", "5 . , x"},
		{"13a", "1.5,000.", "1.5,000 ."},
		{"13a", "2-3 well-known", "2 - 3 well-known"},
		{"13a", "&quot;x&quot; &amp; y &lt;z&gt;", `" x " & y < z >`},
		{"13a", "line-\nbreak\nnext <skipped>", "linebreak next"},
		{"13a", "(a) [b] {c} $d @e", "( a ) [ b ] { c } $ d @ e"},
		// zh: each CJK character spaced; the range quirk spaces U+2010 (‐)
		// and U+2026 (…), which a correct range table would not.
		{"zh", "我爱北京天安门。", "我 爱 北 京 天 安 门 。"},
		{"zh", "a‐b…c", "a ‐ b … c"},
		{"zh", "abc中文def", "abc 中 文 def"},
		{"zh", "x.", "x ."},
		{"char", "ab c", "a b c"},
		{"none", "  a  b ", "a b"},
		{"intl", "Hello, world! 3.14 €5", "Hello , world ! 3.14 € 5"},
		{"intl", "«quoted»", "« quoted »"},
	} {
		f, ok := tokenizerFor(tc.tok)
		if !ok {
			t.Fatalf("no tokenizer %q", tc.tok)
		}
		if got := normalizeSpace(f(tc.in)); got != tc.want {
			t.Errorf("%s(%q) = %q, want %q", tc.tok, tc.in, got, tc.want)
		}
	}
}

func TestPyLower(t *testing.T) {
	for in, want := range map[string]string{
		"ABC":   "abc",
		"ΟΔΟΣ":  "οδος",
		"ΟΔΟΣ.": "οδος.",
		"Σ":     "σ",
		"İ":     "i\u0307",
		"ÀÉ":    "àé",
	} {
		if got := pytext.Lower(in); got != want {
			t.Errorf("pytext.Lower(%q) = %q, want %q", in, got, want)
		}
	}
}

func newT(t *testing.T, opts map[string]any) *Scorer {
	t.Helper()
	s, err := newScorer(sdk.MustOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sentence(t *testing.T, s *Scorer, refs []string, hyp string) *sdk.ScoreResponse {
	t.Helper()
	r, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "s", Targets: refs}, Prediction: hyp})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestProperties(t *testing.T) {
	refs := []string{"The cat is on the mat.", "There is a cat on the mat.", "A cat sits on the mat."}
	hyp := "The cat sat on the mat."
	for _, opts := range []map[string]any{{}, {"tokenize": "intl"}, {"smooth_method": "floor"}, {"mode": "nltk", "smooth_method": "method1"}} {
		s := newT(t, opts)
		base := sentence(t, s, refs, hyp).Value
		for _, perm := range [][]string{{refs[2], refs[0], refs[1]}, {refs[1], refs[2], refs[0]}} {
			if v := sentence(t, s, perm, hyp).Value; v != base {
				t.Errorf("%v: reference order changed BLEU %v -> %v", opts, base, v)
			}
		}
		self := sentence(t, s, []string{hyp}, hyp).Value
		want := 100.0
		if opts["mode"] == "nltk" {
			want = 1
		}
		if math.Abs(self-want) > 1e-9 {
			t.Errorf("%v: BLEU(x, x) = %v, want %v", opts, self, want)
		}
	}
	lower := newT(t, map[string]any{"lowercase": true})
	if a, b := sentence(t, lower, []string{"THE CAT"}, "the cat").Value, sentence(t, lower, []string{"the cat"}, "THE cat").Value; math.Abs(a-100) > 1e-9 || math.Abs(b-100) > 1e-9 {
		t.Errorf("lowercase: %v %v, want 100", a, b)
	}
}

// Corpus BLEU comes from summed statistics, not from averaging sentences.
func TestAggregateIsCorpusBLEU(t *testing.T) {
	s := newT(t, nil)
	hyps := []string{"The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."}
	refs := [][]string{{"The dog bit the man."}, {"It was not unexpected."}, {"The man bit him first."}}
	var scores []*sdk.ScoreResponse
	mean := 0.0
	for i := range hyps {
		r := sentence(t, s, refs[i], hyps[i])
		scores = append(scores, r)
		mean += r.Value / 3
	}
	agg, err := s.Aggregate(context.Background(), &sdk.AggregateRequest{Scores: scores})
	if err != nil {
		t.Fatal(err)
	}
	var sum [10]float64
	for _, sc := range scores {
		for j, v := range sc.Stats {
			sum[j] += v
		}
	}
	want := compute(sum[:], sacreParams{smoothMethod: SmoothExp, maxOrder: 4})
	if agg.Value != want.Score || agg.Value == mean {
		t.Errorf("aggregate %v, want corpus %v (sentence mean is %v)", agg.Value, want.Score, mean)
	}
	if agg.N != 3 || agg.Invalid != 0 || !(agg.CILow <= agg.Value && agg.Value <= agg.CIHigh) {
		t.Errorf("aggregate %+v", agg)
	}
	if agg.Details["sys_len"] != 17.0 {
		t.Errorf("details %v", agg.Details)
	}
	again, _ := s.Aggregate(context.Background(), &sdk.AggregateRequest{Scores: scores})
	if again.CILow != agg.CILow || again.CIHigh != agg.CIHigh {
		t.Errorf("bootstrap not reproducible")
	}
	// A score from a scorer with another max order is refused.
	other := newT(t, map[string]any{"max_ngram_order": 2})
	if _, err := other.Aggregate(context.Background(), &sdk.AggregateRequest{Scores: scores}); err == nil {
		t.Error("mixed statistics widths accepted")
	}
}

// A request only aggregated (ForAggregate) gets the same value and
// statistics without the details, in both modes.
func TestForAggregateLeavesDetailsOut(t *testing.T) {
	refs := []string{"The cat is on the mat.", "There is a cat on the mat."}
	for _, opts := range []map[string]any{{}, {"mode": "nltk", "smooth_method": "method1"}} {
		s := newT(t, opts)
		full := sentence(t, s, refs, "The cat sat on the mat.")
		agg, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "s", Targets: refs}, Prediction: "The cat sat on the mat.", ForAggregate: true})
		if err != nil {
			t.Fatal(err)
		}
		if full.Details == nil || agg.Details != nil || agg.Value != full.Value || fmt.Sprint(agg.Stats) != fmt.Sprint(full.Stats) {
			t.Errorf("%v: for aggregate %+v, full %+v", opts, agg, full)
		}
	}
}

func TestNLTKScorerMatchesLibraryFunctions(t *testing.T) {
	refs := []string{
		"It is a guide to action that ensures that the military will forever heed Party commands",
		"It is the guiding principle which guarantees the military forces always being under the command of the Party",
		"It is the practical guide for the army always to heed the directions of the party",
	}
	hyp := "It is a guide to action which ensures that the military always obeys the commands of the party"
	s := newT(t, map[string]any{"mode": "nltk"})
	// nltk.translate.bleu_score.sentence_bleu doctest value.
	if v := sentence(t, s, refs, hyp).Value; math.Abs(v-0.5045666840058485) > 1e-12 {
		t.Errorf("nltk sentence bleu = %v", v)
	}
	// Aggregating per-sample statistics is corpus_bleu (NLTK's doctest).
	hyp2 := "he read the book because he was interested in world history"
	ref2 := "he was interested in world history because he read the book"
	agg, err := s.Aggregate(context.Background(), &sdk.AggregateRequest{Scores: []*sdk.ScoreResponse{
		sentence(t, s, refs, hyp), sentence(t, s, []string{ref2}, hyp2),
	}})
	if err != nil || math.Abs(agg.Value-0.5920778868801042) > 1e-12 {
		t.Errorf("nltk corpus bleu = %v, %v; want 0.5920778868801042", agg.Value, err)
	}
	s6 := newT(t, map[string]any{"mode": "nltk", "smooth_method": "method6"})
	if _, err := s6.Aggregate(context.Background(), &sdk.AggregateRequest{Scores: []*sdk.ScoreResponse{sentence(t, s6, refs, hyp)}}); err == nil {
		t.Error("method6 aggregated from statistics")
	}
}

// Without a tokenize option, Chinese text gets sacrebleu's zh tokenizer, as
// sacrebleu does for trg_lang="zh".
func TestLanguageChoosesTokenizer(t *testing.T) {
	ref, hyp := "我爱北京天安门", "我爱北京"
	auto := newT(t, nil)
	r, err := auto.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{Targets: []string{ref}, Language: "zh"}, Prediction: hyp})
	if err != nil {
		t.Fatal(err)
	}
	zh := sentence(t, newT(t, map[string]any{"tokenize": "zh"}), []string{ref}, hyp)
	viaOpt := sentence(t, newT(t, map[string]any{"trg_lang": "zh"}), []string{ref}, hyp)
	if r.Value != zh.Value || viaOpt.Value != zh.Value || zh.Value == 0 {
		t.Errorf("language zh: %v, trg_lang: %v, tokenize=zh: %v", r.Value, viaOpt.Value, zh.Value)
	}
	if v := sentence(t, auto, []string{ref}, hyp).Value; v != 0 {
		t.Errorf("no language: %v, want 0 (13a keeps the sentence one token)", v)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		opts  map[string]any
		field string
	}{
		{map[string]any{"tokenizer": "13a"}, "tokenizer"},
		{map[string]any{"tokenize": "moses"}, "tokenize"},
		{map[string]any{"smooth_method": "method1"}, "smooth_method"},
		{map[string]any{"mode": "nltk", "smooth_method": "exp"}, "smooth_method"},
		{map[string]any{"mode": "bleurt"}, "mode"},
		{map[string]any{"weights": []float64{0.5, 0.5}}, "weights"},
		{map[string]any{"mode": "nltk", "weights": []float64{0.5, 0.5}, "max_ngram_order": 4}, "max_ngram_order"},
		{map[string]any{"max_ngram_order": -1}, "max_ngram_order"},
		{map[string]any{"lowercase": "yes"}, "lowercase"},
	} {
		_, err := newScorer(sdk.MustOptions(tc.opts))
		var ce *sdk.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%v: err = %v, want *sdk.ConfigError on %q", tc.opts, err, tc.field)
		}
	}
}

func TestNoTargets(t *testing.T) {
	s := newT(t, nil)
	_, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "q1"}})
	if err == nil || !strings.Contains(err.Error(), `sample "q1" has no targets`) {
		t.Errorf("err = %v", err)
	}
}

// fuzzTokenizer checks what every tokenizer promises: no panic, valid UTF-8
// in gives valid UTF-8 out, single spaces between tokens, and no whitespace
// at either end.
func fuzzTokenizer(f *testing.F, name string) {
	for _, s := range []string{"Hello, world!", "我爱北京。", "3.14-2,5 «x» €", "&amp;\n-\n", ""} {
		f.Add(s)
	}
	tok, _ := tokenizerFor(name)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		out := normalizeSpace(tok(s))
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 from %q", s)
		}
		if strings.Contains(out, "  ") || strings.TrimFunc(out, pytext.IsSpace) != out {
			t.Fatalf("%q -> %q: spacing not normalised", s, out)
		}
		for _, tok := range strings.Split(out, " ") {
			if strings.ContainsFunc(tok, pytext.IsSpace) {
				t.Fatalf("token %q contains whitespace", tok)
			}
		}
	})
}

func Fuzz13a(f *testing.F)  { fuzzTokenizer(f, Tokenize13a) }
func FuzzIntl(f *testing.F) { fuzzTokenizer(f, TokenizeIntl) }
func FuzzZh(f *testing.F)   { fuzzTokenizer(f, TokenizeZh) }

func FuzzChar(f *testing.F) {
	f.Add("ab c 中")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		toks := pytext.Fields(tokenizeChar(s))
		n := 0
		for _, r := range s {
			if !pytext.IsSpace(r) {
				n++
			}
		}
		if len(toks) != n {
			t.Fatalf("%q: %d tokens, want one per non-space character (%d)", s, len(toks), n)
		}
	})
}

func benchmarkBLEU(b *testing.B, opts map[string]any) {
	s, err := newScorer(sdk.MustOptions(opts))
	if err != nil {
		b.Fatal(err)
	}
	scorebench.Run(b, s)
}

func BenchmarkSacreBLEU13a(b *testing.B)  { benchmarkBLEU(b, nil) }
func BenchmarkSacreBLEUIntl(b *testing.B) { benchmarkBLEU(b, map[string]any{"tokenize": "intl"}) }
func BenchmarkNLTK(b *testing.B)          { benchmarkBLEU(b, map[string]any{"mode": "nltk"}) }

func BenchmarkAggregate10k(b *testing.B) {
	refs, preds := scorebench.Pairs(b, 10000)
	s, _ := newScorer(nil)
	ctx := context.Background()
	var scores []*sdk.ScoreResponse
	for k := range refs {
		r, _ := s.Score(ctx, &sdk.ScoreRequest{Sample: &sdk.Sample{Targets: refs[k : k+1]}, Prediction: preds[k]})
		scores = append(scores, r)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Aggregate(ctx, &sdk.AggregateRequest{Scores: scores}); err != nil {
			b.Fatal(err)
		}
	}
}

// Scorers are shared by the kernel's workers; pooled counters must not leak
// state between concurrent calls.
func TestConcurrentUse(t *testing.T) {
	s := newT(t, nil)
	texts := []string{"The dog bit the man.", "It wasn't surprising.", "The man had just bitten him.", "我爱北京", ""}
	want := map[[2]int]float64{}
	for i := range texts {
		for j := range texts {
			want[[2]int{i, j}] = sentence(t, s, texts[i:i+1], texts[j]).Value
		}
	}
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func() {
			for n := 0; n < 200; n++ {
				i, j := (n+g)%len(texts), (n*3+g)%len(texts)
				r, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{Targets: texts[i : i+1]}, Prediction: texts[j]})
				if err == nil && r.Value != want[[2]int{i, j}] {
					err = fmt.Errorf("pair %d,%d: %v, want %v", i, j, r.Value, want[[2]int{i, j}])
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// The scorer keeps nothing of what it scores (sdk.Borrower): in every
// mode and tokenizer, scoring on copies that are overwritten once scored
// leaves later answers as they were (sdktest.CheckScorer runs its borrow
// check first, on a fresh scorer).
func TestBorrowsInput(t *testing.T) {
	texts := []string{"The dog bit the man.", "It wasn't surprising.", "The man had just bitten him.", "我爱北京天安门", "Ünïcode — «quotes» 3.14 and 1,000", ""}
	for _, opts := range []map[string]any{
		nil,
		{"tokenize": "zh"},
		{"tokenize": "intl"},
		{"tokenize": "char", "smooth_method": "add-k"},
		{"mode": "nltk"},
	} {
		t.Run(fmt.Sprint(opts), func(t *testing.T) {
			ref := newT(t, opts)
			var cases []sdktest.ScorerCase
			for i, hyp := range texts {
				for j := range texts {
					req := &sdk.ScoreRequest{Sample: &sdk.Sample{ID: fmt.Sprint(i, j), Language: []string{"en", "zh"}[i%2], Targets: []string{texts[j], texts[(j+1)%len(texts)]}}, Prediction: hyp}
					want, err := ref.Score(context.Background(), req)
					if err != nil {
						t.Fatal(err)
					}
					cases = append(cases, sdktest.ScorerCase{Name: req.Sample.ID, Req: req, Want: want.Value, Invalid: want.Invalid})
				}
			}
			sdktest.CheckScorer(t, newT(t, opts), cases)
		})
	}
}
