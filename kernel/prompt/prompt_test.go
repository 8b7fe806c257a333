package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"github.com/hayloft/hayloft/sdk/sdktest"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/tokenizer"
)

var update = flag.Bool("update", false, "rewrite golden files")

func opticks(t testing.TB) string { return sdktest.Opticks(t) }

// chinese returns the first n bytes (whole runes) of a Chinese novel, or
// skips when the shared data is absent.
func chinese(t testing.TB, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "data", "haystack", "zh", "The_Story_of_the_Stone.txt"))
	if os.IsNotExist(err) {
		t.Skipf("shared haystack absent: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := string(b[:n])
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

func cl100k(t testing.TB) *tokenizer.Encoding {
	t.Helper()
	e, err := tokenizer.Get("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func niahLike(context string) *sdk.Sample {
	return &sdk.Sample{
		ID:       "s1",
		Context:  context,
		Question: "What is the best thing to do in San Francisco?",
		Messages: []sdk.Message{
			{Role: "system", Content: "You are a helpful AI bot that answers questions for a user. Keep your response short and direct"},
			{Role: "user", Content: sdk.ContextSlot},
			{Role: "user", Content: sdk.QuestionSlot + " Don't give information outside the document or repeat your findings"},
		},
	}
}

func TestFit(t *testing.T) {
	enc := cl100k(t)
	text := opticks(t)[:40000]
	full := niahLike(text)
	fullTokens := NewFitter(enc, 1, 0).CountMessages(full.Render())
	noContext := *full
	noContext.Context = ""
	fixedTokens := NewFitter(enc, 1, 0).CountMessages(noContext.Render())
	cases := []struct {
		name      string
		window    int
		maxTokens int
		strategy  Strategy
		truncated bool
		check     func(t *testing.T, orig, got string)
	}{
		{name: "fits", window: fullTokens + 100, maxTokens: 100, strategy: Middle,
			check: func(t *testing.T, orig, got string) {
				if got != orig {
					t.Error("context changed although it fits")
				}
			}},
		{name: "fits exactly", window: fullTokens + 7, maxTokens: 7, strategy: None},
		{name: "middle", window: 2000, maxTokens: 300, strategy: Middle, truncated: true,
			check: func(t *testing.T, orig, got string) {
				if !strings.HasPrefix(orig, got[:200]) || !strings.HasSuffix(orig, got[len(got)-200:]) {
					t.Error("middle cut did not keep both ends")
				}
			}},
		{name: "default strategy is middle", window: 2000, maxTokens: 300, truncated: true,
			check: func(t *testing.T, orig, got string) {
				if !strings.HasPrefix(orig, got[:200]) || !strings.HasSuffix(orig, got[len(got)-200:]) {
					t.Error("middle cut did not keep both ends")
				}
			}},
		{name: "left", window: 1000, maxTokens: 100, strategy: Left, truncated: true,
			check: func(t *testing.T, orig, got string) {
				if !strings.HasSuffix(orig, got) || strings.HasPrefix(orig, got[:100]) {
					t.Error("left cut did not keep exactly the end")
				}
			}},
		{name: "right", window: 1000, maxTokens: 100, strategy: Right, truncated: true,
			check: func(t *testing.T, orig, got string) {
				if !strings.HasPrefix(orig, got) || strings.HasSuffix(orig, got[len(got)-100:]) {
					t.Error("right cut did not keep exactly the start")
				}
			}},
		{name: "only the template fits", window: fixedTokens + 10, maxTokens: 10, strategy: Right, truncated: true,
			check: func(t *testing.T, orig, got string) {
				if got != "" {
					t.Errorf("context %q, want empty", got)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := NewFitter(enc, c.window, c.maxTokens)
			f.Strategy = c.strategy
			got, err := f.Fit(context.Background(), full)
			if err != nil {
				t.Fatal(err)
			}
			if got.PromptTokens > f.Budget() {
				t.Errorf("PromptTokens %d > budget %d", got.PromptTokens, f.Budget())
			}
			if n := f.CountMessages(got.Messages); n != got.PromptTokens {
				t.Errorf("PromptTokens %d, recount %d", got.PromptTokens, n)
			}
			if got.Truncated != c.truncated {
				t.Errorf("Truncated = %v, want %v", got.Truncated, c.truncated)
			}
			if c.truncated != (got.DroppedTokens > 0) {
				t.Errorf("DroppedTokens = %d with Truncated %v", got.DroppedTokens, got.Truncated)
			}
			if got.Messages[0].Content != full.Messages[0].Content || !strings.HasPrefix(got.Messages[2].Content, full.Question+" ") {
				t.Error("instruction or question was changed")
			}
			if got.Messages[1].Content != got.Context {
				t.Error("Context field differs from the sent context")
			}
			if c.check != nil {
				c.check(t, text, got.Context)
			}
		})
	}
}

func TestFitErrors(t *testing.T) {
	enc := cl100k(t)
	s := niahLike(opticks(t)[:20000])
	total := NewFitter(enc, 1, 0).CountMessages(s.Render())

	f := NewFitter(enc, 1000, 100)
	f.Strategy = None
	_, err := f.Fit(context.Background(), s)
	var oe *OverflowError
	if !errors.As(err, &oe) {
		t.Fatalf("strategy none: err %v, want *OverflowError", err)
	}
	if oe.Excess() != total-900 || oe.PromptTokens != total || oe.Budget != 900 {
		t.Errorf("OverflowError %+v, want prompt %d budget 900", oe, total)
	}
	var re *sdk.RequestError
	if !errors.As(err, &re) || re.Code != sdk.CodeContextLength {
		t.Errorf("OverflowError does not unwrap to a context_length_exceeded RequestError: %v", err)
	}

	for _, window := range []int{30, 60} {
		_, err = NewFitter(enc, window, 10).Fit(context.Background(), s)
		if !errors.Is(err, ErrWindowTooSmall) {
			t.Errorf("window %d: err %v, want ErrWindowTooSmall", window, err)
		}
	}
	if _, err := NewFitter(enc, 0, 0).Fit(context.Background(), s); err == nil {
		t.Error("window 0 accepted")
	}
	bad := NewFitter(enc, 1000, 10)
	bad.Strategy = "centre"
	if _, err := bad.Fit(context.Background(), s); err == nil || !strings.Contains(err.Error(), "centre") {
		t.Errorf("bad strategy: err %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewFitter(enc, 1000, 10).Fit(ctx, s); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err %v", err)
	}
}

func TestParseStrategy(t *testing.T) {
	for in, want := range map[string]Strategy{"": Middle, "middle": Middle, "left": Left, "right": Right, "none": None} {
		got, err := ParseStrategy(in)
		if err != nil || got != want {
			t.Errorf("ParseStrategy(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseStrategy("Middle"); err == nil {
		t.Error("ParseStrategy(Middle) accepted")
	}
}

// Property: whatever the window and strategy, the fitted prompt is within
// budget, valid UTF-8, and not much shorter than the budget allows.
func TestFitPropertyRandomWindows(t *testing.T) {
	texts := map[string]string{"english": opticks(t)[:30000], "chinese": chinese(t, 30000)}
	strategies := []Strategy{Middle, Left, Right}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, encName := range []string{"cl100k_base", "o200k_base"} {
		enc, err := tokenizer.Get(encName)
		if err != nil {
			t.Fatal(err)
		}
		for lang, text := range texts {
			s := niahLike(text)
			full := NewFitter(enc, 1, 0).CountMessages(s.Render())
			for range 60 {
				window := 100 + rng.IntN(full) // nearly always a cut
				f := NewFitter(enc, window, rng.IntN(90))
				f.Strategy = strategies[rng.IntN(len(strategies))]
				got, err := f.Fit(context.Background(), s)
				if err != nil {
					t.Fatalf("%s/%s window %d %s: %v", encName, lang, window, f.Strategy, err)
				}
				if got.PromptTokens > f.Budget() {
					t.Fatalf("%s/%s window %d %s: %d tokens > budget %d", encName, lang, window, f.Strategy, got.PromptTokens, f.Budget())
				}
				if got.Truncated && got.PromptTokens < f.Budget()-8 {
					t.Errorf("%s/%s window %d %s: %d tokens, budget %d: cut too much", encName, lang, window, f.Strategy, got.PromptTokens, f.Budget())
				}
				for _, m := range got.Messages {
					if !utf8.ValidString(m.Content) {
						t.Fatalf("%s/%s window %d %s: invalid UTF-8 after the cut", encName, lang, window, f.Strategy)
					}
				}
			}
		}
	}
}

func TestTrimPartialRunes(t *testing.T) {
	cases := []struct{ in, end, start string }{
		{"abc", "abc", "abc"},
		{"", "", ""},
		{"ab\xe4\xbd", "ab", "ab\xe4\xbd"},
		{"ab你", "ab你", "ab你"},
		{"\xbd\xa0好", "\xbd\xa0好", "好"},
		{"x\xf0\x9f\x91", "x", "x\xf0\x9f\x91"},
		{"\x9f\x91\x8dy", "\x9f\x91\x8dy", "y"},
		{"\xef\xbf\xbd", "\xef\xbf\xbd", "\xef\xbf\xbd"},
	}
	for _, c := range cases {
		if got := trimEnd(c.in); got != c.end {
			t.Errorf("trimEnd(%q) = %q, want %q", c.in, got, c.end)
		}
		if got := trimStart(c.in); got != c.start {
			t.Errorf("trimStart(%q) = %q, want %q", c.in, got, c.start)
		}
	}
}

// The fitted prompt of a fixed sample is pinned in testdata so that a change
// in counting or cutting shows up as a diff.
func TestFitGolden(t *testing.T) {
	s := niahLike(opticks(t)[:20000])
	got, err := NewFitter(cl100k(t), 600, 100).Fit(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "middle_600.golden.json")
	if *update {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if string(want) != string(out) {
		t.Errorf("fitted prompt differs from %s:\n%s", path, out)
	}
}
