package baseline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

func TestBestSentence(t *testing.T) {
	tests := []struct {
		name, text, question, want string
	}{
		{"needle",
			"The sky was grey. The best thing to do in San Francisco is eat a sandwich. Cats sleep all day.",
			"What is the best thing to do in San Francisco?",
			"The best thing to do in San Francisco is eat a sandwich."},
		{"rare term beats common ones",
			"The cat is on the mat. The dog is on the log. The magic word is xylophone.",
			"Which word is the magic word on the mat?",
			"The magic word is xylophone."},
		{"case folding", "ALPHA bravo. Charlie DELTA!", "delta?", "Charlie DELTA!"},
		{"tie goes to the earliest", "Red apple. Red apple. Green pear.", "red apple", "Red apple."},
		{"no match: first sentence", "One. Two. Three.", "zebra", "One."},
		{"newline ends a sentence", "first line without stop\nthe key is 7 here\nlast line", "what is the key", "the key is 7 here"},
		{"decimal point is not a stop", "Pi is about 3.14 in value. Nothing else.", "value of pi", "Pi is about 3.14 in value."},
		{"question and exclamation", "Is it late? It is noon! Go home.", "is it noon", "It is noon!"},
		{"cjk", "今天天气很好。企鹅数了三颗星星。大家都回家了！", "企鹅数了几颗星星？", "企鹅数了三颗星星。"},
		{"cjk fullwidth stops", "他问：你好吗？我很好！", "你好吗", "他问：你好吗？"},
		{"mixed scripts", "Model 東京 ranks first. Paris ranks second.", "東京", "Model 東京 ranks first."},
		{"empty context", "", "anything", ""},
		{"only punctuation", "... !!! ???", "x", ""},
		{"empty question", "First. Second.", "", "First."},
		{"non-ascii letters fold", "Élan vital. Über alles.", "über", "Über alles."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BestSentence(tt.text, tt.question); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOptions(t *testing.T) {
	tests := []struct {
		opts  map[string]any
		field string
	}{
		{map[string]any{"mode": "oracle"}, "mode"},
		{map[string]any{"seed": "x"}, "seed"},
		{map[string]any{"sede": 1}, "sede"},
	}
	for _, tt := range tests {
		_, err := New(context.Background(), sdk.MustOptions(tt.opts))
		var ce *sdk.ConfigError
		if !errors.As(err, &ce) || ce.Field != tt.field {
			t.Errorf("%v: err = %v, want ConfigError on %q", tt.opts, err, tt.field)
		}
	}
}

func TestGenerate(t *testing.T) {
	ctx := context.Background()
	extractive, _ := New(ctx, nil)
	random, _ := New(ctx, sdk.MustOptions(map[string]any{"mode": "random", "seed": 3}))
	tests := []struct {
		name     string
		m        sdk.Model
		sample   *sdk.Sample
		want     string
		wantCode string
	}{
		{"extractive", extractive, &sdk.Sample{ID: "a", Context: "Noise here. The code is 1234.", Question: "What is the code?"}, "The code is 1234.", ""},
		{"no sample", extractive, nil, "", sdk.CodeBadRequest},
		{"random without choices", random, &sdk.Sample{ID: "b"}, "", sdk.CodeBadRequest},
		{"random single choice", random, &sdk.Sample{ID: "c", Choices: []string{"only"}}, "only", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := tt.m.Generate(ctx, &sdk.GenerateRequest{Sample: tt.sample})
			if tt.wantCode != "" {
				var re *sdk.RequestError
				if !errors.As(err, &re) || re.Code != tt.wantCode {
					t.Fatalf("err = %v, want RequestError %s", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tt.want {
				t.Errorf("text = %q, want %q", resp.Text, tt.want)
			}
		})
	}
}

// Random answers depend on the seed and sample ID only: the same in any
// order and under concurrency, different for another seed, and close to
// uniform.
func TestRandomDeterministic(t *testing.T) {
	ctx := context.Background()
	choices := []string{"A", "B", "C", "D"}
	answer := func(m sdk.Model, id string) string {
		resp, err := m.Generate(ctx, &sdk.GenerateRequest{Sample: &sdk.Sample{ID: id, Choices: choices}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Text
	}
	m1, _ := New(ctx, sdk.MustOptions(map[string]any{"mode": "random", "seed": 42}))
	m2, _ := New(ctx, sdk.MustOptions(map[string]any{"mode": "random", "seed": 42}))
	m3, _ := New(ctx, sdk.MustOptions(map[string]any{"mode": "random", "seed": 43}))
	const n = 4000
	seq := make([]string, n)
	for i := range n {
		seq[i] = answer(m1, fmt.Sprint("id-", i))
	}
	conc := make([]string, n)
	var wg sync.WaitGroup
	for i := n - 1; i >= 0; i-- {
		wg.Add(1)
		go func() { defer wg.Done(); conc[i] = answer(m2, fmt.Sprint("id-", i)) }()
	}
	wg.Wait()
	counts := map[string]int{}
	differ := 0
	for i := range n {
		if seq[i] != conc[i] {
			t.Fatalf("id-%d: %q sequentially, %q concurrently", i, seq[i], conc[i])
		}
		counts[seq[i]]++
		if answer(m3, fmt.Sprint("id-", i)) != seq[i] {
			differ++
		}
	}
	for _, c := range choices {
		// Expect 1000 each; 5 standard deviations is about ±137.
		if counts[c] < 860 || counts[c] > 1140 {
			t.Errorf("choice %s drawn %d times of %d", c, counts[c], n)
		}
	}
	if differ < n/2 {
		t.Errorf("another seed changed only %d of %d answers", differ, n)
	}
}

func opticks(t testing.TB) string { return sdktest.Opticks(t) }

// The quickstart promise: the baseline finds the needle in a long haystack
// at any depth, in English and Chinese.
func TestFindsNeedle(t *testing.T) {
	en := opticks(t)
	zhPath := filepath.Join("..", "..", "..", "..", "shared", "data", "haystack", "zh", "The_Story_of_the_Stone.txt")
	zhBytes, zhErr := os.ReadFile(zhPath)
	tests := []struct {
		lang, hay, needle, question string
	}{
		{"en", en, "The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.",
			"What is the best thing to do in San Francisco?"},
	}
	if zhErr == nil {
		tests = append(tests, struct{ lang, hay, needle, question string }{"zh", string(zhBytes[:min(len(zhBytes), 300000)]),
			"小企鹅数了三十二颗星星。", "小企鹅数了几颗星星？"})
	} else {
		t.Logf("no Chinese haystack (%v); English only", zhErr)
	}
	for _, tt := range tests {
		for _, depth := range []float64{0, 0.1, 0.5, 0.9, 1} {
			t.Run(fmt.Sprintf("%s/%.1f", tt.lang, depth), func(t *testing.T) {
				at := insertionPoint(tt.hay, depth)
				text := tt.hay[:at] + "\n" + tt.needle + "\n" + tt.hay[at:]
				if got := BestSentence(text, tt.question); got != tt.needle {
					t.Errorf("got %q", got)
				}
			})
		}
	}
}

// insertionPoint is the line start nearest depth, so the needle is a
// sentence of its own.
func insertionPoint(hay string, depth float64) int {
	at := int(depth * float64(len(hay)))
	if i := strings.LastIndexByte(hay[:at], '\n'); i >= 0 {
		return i + 1
	}
	return 0
}

// BenchmarkBestSentence128K runs over the whole Opticks (about 130K tokens
// by cl100k, 567 KB) with a needle in the middle.
func BenchmarkBestSentence128K(b *testing.B) {
	hay := opticks(b)
	at := insertionPoint(hay, 0.5)
	text := hay[:at] + "The best thing to do in San Francisco is eat a sandwich.\n" + hay[at:]
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		BestSentence(text, "What is the best thing to do in San Francisco?")
	}
}

// The baseline answers from req.Sample, which must survive the gRPC trip.
func TestOverGRPC(t *testing.T) {
	set := sdk.NewSet("test", "0")
	set.RegisterModel(Name, New)
	m := sdktest.Model(t, set, Name, map[string]any{"mode": "extractive"})
	resp, err := m.Generate(context.Background(), &sdk.GenerateRequest{
		Messages: []sdk.Message{{Role: "user", Content: "ignored"}},
		Sample:   &sdk.Sample{ID: "x", Context: "Noise. The vault code is 7781. More noise.", Question: "What is the vault code?"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "The vault code is 7781." {
		t.Errorf("text = %q", resp.Text)
	}
	_, err = m.Generate(context.Background(), &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: "x"}}})
	var re *sdk.RequestError
	if !errors.As(err, &re) || re.Code != sdk.CodeBadRequest {
		t.Errorf("no sample: err = %v", err)
	}
}
