package rougel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hayloft/hayloft/plugins/internal/pytext"
	"github.com/hayloft/hayloft/plugins/internal/scorebench"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

func TestPorterStem(t *testing.T) {
	// Stems of NLTK's PorterStemmer() (NLTK_EXTENSIONS mode); most words are
	// the examples of Porter's paper, the rest exercise NLTK's departures.
	cases := map[string]string{
		"caresses": "caress", "ponies": "poni", "ties": "tie", "caress": "caress", "cats": "cat",
		"feed": "feed", "agreed": "agre", "plastered": "plaster", "bled": "bled", "motoring": "motor",
		"sing": "sing", "conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
		"tanned": "tan", "falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail",
		"filing": "file", "happy": "happi", "sky": "sky", "relational": "relat", "conditional": "condit",
		"rational": "ration", "valenci": "valenc", "hesitanci": "hesit", "digitizer": "digit",
		"conformabli": "conform", "radicalli": "radic", "differentli": "differ", "vileli": "vile",
		"analogousli": "analog", "vietnamization": "vietnam", "predication": "predic", "operator": "oper",
		"feudalism": "feudal", "decisiveness": "decis", "hopefulness": "hope", "callousness": "callous",
		"formaliti": "formal", "sensitiviti": "sensit", "sensibiliti": "sensibl", "triplicate": "triplic",
		"formative": "form", "formalize": "formal", "electriciti": "electr", "electrical": "electr",
		"hopeful": "hope", "goodness": "good", "revival": "reviv", "allowance": "allow",
		"inference": "infer", "airliner": "airlin", "gyroscopic": "gyroscop", "adjustable": "adjust",
		"defensible": "defens", "irritant": "irrit", "replacement": "replac", "adjustment": "adjust",
		"dependent": "depend", "adoption": "adopt", "homologou": "homolog", "communism": "commun",
		"activate": "activ", "angulariti": "angular", "homologous": "homolog", "effective": "effect",
		"bowdlerize": "bowdler", "probate": "probat", "rate": "rate", "cease": "ceas",
		"controll": "control", "roll": "roll", "dying": "die", "flies": "fli", "dies": "die",
		"spied": "spi", "died": "die", "enjoy": "enjoy", "generously": "gener", "running": "run",
		"meetings": "meet", "news": "news", "proceed": "proceed", "geology": "geolog",
	}
	for w, want := range cases {
		if got := stem(w); got != want {
			t.Errorf("stem(%q) = %q, want %q", w, got, want)
		}
	}
}

func TestDefaultTokenizer(t *testing.T) {
	for _, tc := range []struct {
		in      string
		stemmed bool
		want    []string
	}{
		{"Hello, World! It's 2024.", false, []string{"hello", "world", "it", "s", "2024"}},
		{"  multiple   spaces\tand\nlines ", false, []string{"multiple", "spaces", "and", "lines"}},
		{"中文 text 混合", false, []string{"text"}},
		{"café naïve", false, []string{"caf", "na", "ve"}},
		{"\u212Aelvin", false, []string{"kelvin"}},
		{"running dogs quickly ran", true, []string{"run", "dog", "quickli", "ran"}},
		{"the cats", true, []string{"the", "cat"}},
		{"", false, nil},
		{"---", false, nil},
	} {
		tok := defaultTokenizer{}
		if tc.stemmed {
			tok.stems = newStemCache()
		}
		if got := tok.tokenize(nil, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("tokenize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCharTokenizer(t *testing.T) {
	got := charTokenizer{}.tokenize(nil, "我爱北京, Tiananmen 2024年!")
	want := []string{"我", "爱", "北", "京", "tiananmen", "2024", "年"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func score(t *testing.T, opts map[string]any, summary bool, targets []string, pred string) *sdk.ScoreResponse {
	t.Helper()
	s, err := newScorer(sdk.MustOptions(opts), summary)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "x", Targets: targets}, Prediction: pred})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestProperties(t *testing.T) {
	texts := []string{
		"The quick brown fox jumps over the lazy dog.",
		"Light is refracted by the prism\nand the colours are separated.",
		"a a a b b",
	}
	for _, opts := range []map[string]any{{}, {"use_stemmer": true}, {"mode": "pltrdy"}, {"mode": "pltrdy_legacy"}} {
		for _, text := range texts {
			if r := score(t, opts, false, []string{text}, text); math.Abs(r.Value-1) > 1e-7 {
				t.Errorf("%v: F(x, x) = %v for %q, want 1", opts, r.Value, text)
			}
		}
	}
	for _, text := range texts {
		if r := score(t, nil, true, []string{text}, text); r.Value != 1 {
			t.Errorf("rougeLsum F(x, x) = %v for %q, want 1", r.Value, text)
		}
	}
	// Swapping prediction and target swaps precision and recall.
	a, b := "the cat sat on the mat today", "a cat was on the mat"
	ab := score(t, nil, false, []string{a}, b).Details
	ba := score(t, nil, false, []string{b}, a).Details
	if ab["precision"] != ba["recall"] || ab["recall"] != ba["precision"] || ab["fmeasure"] != ba["fmeasure"] {
		t.Errorf("not symmetric: %v vs %v", ab, ba)
	}
}

func TestMultiReferenceTakesBestF(t *testing.T) {
	pred := "the cat sat on the mat"
	best := score(t, nil, false, []string{"the cat sat on the mat"}, pred).Value
	r := score(t, nil, false, []string{"dogs bark", "the cat sat on the mat", "a cat"}, pred)
	if r.Value != best || best != 1 {
		t.Errorf("multi-reference F = %v, want the best single F %v", r.Value, best)
	}
}

func TestChineseNeedsCharTokenizer(t *testing.T) {
	target, pred := "今天天气很好", "今天天气不错"
	if r := score(t, nil, false, []string{target}, pred); r.Value != 0 {
		t.Errorf("default tokenizer on Chinese: F = %v, want 0 (rouge_score drops CJK)", r.Value)
	}
	r := score(t, map[string]any{"tokenizer": "char"}, false, []string{target}, pred)
	if want := 4.0 / 6; math.Abs(r.Value-want) > 1e-12 {
		t.Errorf("char tokenizer: F = %v, want %v", r.Value, want)
	}
}

func TestPltrdy(t *testing.T) {
	// The union-LCS example of pltrdy's docstring, with sentences split on
	// ".": union LCS {w1 w2 w3 w5} = 4 words, 5 distinct reference words, 8
	// distinct hypothesis words.
	r := score(t, map[string]any{"mode": "pltrdy"}, false,
		[]string{"w1 w2 w3 w4 w5"}, "w1 w2 w6 w7 w8. w1 w3 w8 w9 w5")
	p, rc := 4.0/8, 4.0/5
	want := 2.0 * ((p * rc) / (p + rc + 1e-8))
	if r.Details["precision"] != p || r.Details["recall"] != rc || r.Value != want {
		t.Errorf("got %v, want p=%v r=%v f=%v", r.Details, p, rc, want)
	}
	if r := score(t, map[string]any{"mode": "pltrdy"}, false, []string{"a b"}, ""); r.Value != 0 {
		t.Errorf("empty hypothesis: %v, want 0 (LongBench's value for pltrdy's error)", r.Value)
	}
	// Set semantics: repeating a word does not raise the score.
	once := score(t, map[string]any{"mode": "pltrdy"}, false, []string{"x y z"}, "x q").Value
	twice := score(t, map[string]any{"mode": "pltrdy"}, false, []string{"x y z"}, "x x q").Value
	if once != twice {
		t.Errorf("repeated word changed the score: %v vs %v", once, twice)
	}
	// Chinese through char spacing.
	zh := score(t, map[string]any{"mode": "pltrdy", "tokenizer": "char"}, false, []string{"今天天气很好"}, "今天天气很好")
	if math.Abs(zh.Value-1) > 1e-7 {
		t.Errorf("pltrdy char self-score %v", zh.Value)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		opts    map[string]any
		summary bool
		field   string
	}{
		{map[string]any{"use_stemer": true}, false, "use_stemer"},
		{map[string]any{"mode": "rouge"}, false, "mode"},
		{map[string]any{"tokenizer": "jieba"}, false, "tokenizer"},
		{map[string]any{"mode": "pltrdy"}, true, "mode"},
		{map[string]any{"mode": "pltrdy", "use_stemmer": true}, false, "use_stemmer"},
		{map[string]any{"mode": "pltrdy", "tokenizer": "rouge155"}, false, "tokenizer"},
		{map[string]any{"use_stemmer": "yes"}, false, "use_stemmer"},
	} {
		_, err := newScorer(sdk.MustOptions(tc.opts), tc.summary)
		var ce *sdk.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%v: err = %v, want *sdk.ConfigError on %q", tc.opts, err, tc.field)
		}
	}
}

func TestNoTargets(t *testing.T) {
	s, _ := New(context.Background(), nil)
	_, err := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "q7"}, Prediction: "x"})
	if err == nil || !strings.Contains(err.Error(), `sample "q7" has no targets`) {
		t.Errorf("err = %v", err)
	}
}

func TestLCSLenMatchesTable(t *testing.T) {
	seqs := [][]int32{{}, {1}, {1, 2, 3}, {3, 2, 1}, {1, 1, 2, 2, 1}, {2, 1, 2, 1, 2, 3, 3}}
	// Longer random sequences cross 64-bit word boundaries, where the
	// bit-parallel LCS carries between words.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{63, 64, 65, 130, 200} {
		for _, alphabet := range []int{2, 5, 40} {
			s := make([]int32, n)
			for i := range s {
				s[i] = int32(rng.IntN(alphabet))
			}
			seqs = append(seqs, s)
		}
	}
	var buf lcsBuf // reused, as the pooled scratch reuses it
	for _, a := range seqs {
		for _, b := range seqs {
			l := lcsLen(a, b, &buf)
			tab := lcsTable(a, b)
			if want := int(tab[len(tab)-1]); l != want {
				t.Errorf("lcsLen(%v, %v) = %d, table says %d", a, b, l, want)
			}
			for _, left := range []bool{false, true} {
				if idx := lcsRefIndices(a, b, tab, left); len(idx) != l {
					t.Errorf("backtrack(%v, %v) has %d indices, want %d", a, b, len(idx), l)
				}
			}
		}
	}
}

func FuzzDefaultTokenizer(f *testing.F) {
	f.Add("Hello, World! It's 2024.", true)
	f.Add("中文 İstanbul \u212A", false)
	f.Fuzz(func(t *testing.T, s string, stemmed bool) {
		tok := defaultTokenizer{}
		if stemmed {
			tok.stems = newStemCache()
		}
		for _, w := range tok.tokenize(nil, s) {
			if w == "" {
				t.Fatalf("empty token from %q", s)
			}
			for i := 0; i < len(w); i++ {
				if c := w[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
					t.Fatalf("token %q from %q outside [a-z0-9]", w, s)
				}
			}
		}
	})
}

func FuzzCharTokenizer(f *testing.F) {
	f.Add("我爱北京, Tiananmen 2024年!")
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range (charTokenizer{stems: newStemCache()}).tokenize(nil, s) {
			if w == "" || strings.ContainsFunc(w, pytext.IsSpace) {
				t.Fatalf("bad token %q from %q", w, s)
			}
		}
	})
}

func FuzzRouge155Tokenizer(f *testing.F) {
	f.Add("a u.s. citizen -- was killed")
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range (rouge155Tokenizer{}).tokenize(nil, s) {
			if w == "" || strings.ContainsAny(w, " -") {
				t.Fatalf("bad token %q from %q", w, s)
			}
		}
	})
}

func benchmarkPairs(b *testing.B, opts map[string]any, summary bool) {
	s, err := newScorer(sdk.MustOptions(opts), summary)
	if err != nil {
		b.Fatal(err)
	}
	scorebench.Run(b, s)
}

func BenchmarkRougeL(b *testing.B) { benchmarkPairs(b, nil, false) }
func BenchmarkRougeLStemmed(b *testing.B) {
	benchmarkPairs(b, map[string]any{"use_stemmer": true}, false)
}
func BenchmarkRougeLsum(b *testing.B)    { benchmarkPairs(b, nil, true) }
func BenchmarkRougeLPltrdy(b *testing.B) { benchmarkPairs(b, map[string]any{"mode": "pltrdy"}, false) }

// Scorers are shared by the kernel's workers; pooled scratch memory must not
// leak between concurrent calls.
func TestConcurrentUse(t *testing.T) {
	texts := []string{"the cat sat on the mat", "a dog barked at the moon\nthen slept", "light is refracted", "今天天气很好", ""}
	for _, summary := range []bool{false, true} {
		s, err := newScorer(sdk.MustOptions(map[string]any{"use_stemmer": true}), summary)
		if err != nil {
			t.Fatal(err)
		}
		want := map[[2]int]float64{}
		for i := range texts {
			for j := range texts {
				r, _ := s.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{Targets: texts[i : i+1]}, Prediction: texts[j]})
				want[[2]int{i, j}] = r.Value
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
}

// appendIDs must find the tokens tokenize finds: the same id sequence as
// interning tokenize's output, on edge cases and on random mixes of the
// characters the tokenizer treats specially.
func TestDefaultTokenizerIDs(t *testing.T) {
	inputs := []string{"", "---", "Hello, World! It's 2024.", "\u212Aelvin", "\u0130stanbul İİ xİy", "café naïve ß ÆON", "中文 text 混合", "a\u0307b", "ABC abc AbC 123 a1B2"}
	alphabet := []string{"a", "Z", "q", "0", "9", " ", ",", "-", "\u212a", "\u0130", "é", "中", "\n", "ß", "\xff"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		inputs = append(inputs, b.String())
	}
	// Without the two letters that send the rest to the byte-at-a-time
	// path, and with longer tokens: the one-scan path.
	alphabet = []string{"a", "Z", "q", "0", "9", " ", ",", "-", "é", "中", "\n", "ß", "\xff", "abcdefgh", "ABCDEFGHIJ", "xyZ",
		strings.Repeat("long", 20), strings.Repeat("LoNg", 33), "\xe2\x84", "\xc4"}
	for range 6000 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		inputs = append(inputs, b.String())
	}
	tok := defaultTokenizer{}
	for _, in := range inputs {
		var want, got scratch
		wantIDs := want.ids(nil, tok.tokenize(nil, in))
		gotIDs := tok.appendIDs(nil, in, &got.tab, &got.word)
		if !slices.Equal(gotIDs, wantIDs) || got.tab.Len() != want.tab.Len() {
			t.Fatalf("%q: ids %v, want %v (%q)", in, gotIDs, wantIDs, tok.tokenize(nil, in))
		}
	}
}

// ScoreDetailsJSON writes json.Marshal's bytes of Score's details, and
// ScoreObjectJSON those of the details with value and invalid, for each
// scorer and mode, on pairs that score 0, 1 and between.
func TestScoreDetailsJSON(t *testing.T) {
	refs, preds := scorebench.Pairs(t, 50)
	preds = append(preds, "", "nothing in common", refs[0])
	refs = append(refs, "x", "the cat", refs[0])
	ctx := context.Background()
	for _, c := range []struct {
		build func(context.Context, sdk.Options) (sdk.Scorer, error)
		opts  map[string]any
	}{
		{New, nil}, {New, map[string]any{"use_stemmer": true}}, {New, map[string]any{"tokenizer": "char"}},
		{New, map[string]any{"mode": "pltrdy"}}, {NewSum, nil}, {NewN(2), nil}, {New, map[string]any{"alpha": 0.3}},
	} {
		sc, err := c.build(ctx, sdk.MustOptions(c.opts))
		if err != nil {
			t.Fatal(err)
		}
		s := sc.(*Scorer)
		for i := range refs {
			req := &sdk.ScoreRequest{Sample: &sdk.Sample{Targets: []string{refs[i]}}, Prediction: preds[i]}
			want, err := s.Score(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			wantJS, _ := json.Marshal(want.Details)
			got, js, err := s.ScoreDetailsJSON(ctx, req, nil)
			if err != nil || string(js) != string(wantJS) || got.Value != want.Value || got.Details != nil {
				t.Fatalf("%v pair %d: %s %+v %v, want %s", c.opts, i, js, got, err, wantJS)
			}
			// The score object: the details with the response's own
			// fields, as json.Marshal writes the merged map.
			want.Details["invalid"], want.Details["value"] = want.Invalid, want.Value
			wantObj, _ := json.Marshal(want.Details)
			if _, obj, err := s.ScoreObjectJSON(ctx, req, nil); err != nil || string(obj) != string(wantObj) {
				t.Fatalf("%v pair %d: score object %s %v, want %s", c.opts, i, obj, err, wantObj)
			}
		}
	}
}
