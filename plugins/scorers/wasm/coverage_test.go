package wasm

import (
	"context"
	"fmt"
	"github.com/hayloft/hayloft/sdk/sdktest"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// The keyword-coverage example, run through the host as a user would.
func TestKeywordCoverage(t *testing.T) {
	h := open(t, "coverage", nil)
	if _, ok := h.Scorer.(sdk.Aggregator); !ok {
		t.Fatal("the coverage module exports aggregate but the scorer is not an Aggregator")
	}
	if _, ok := h.Scorer.(io.Closer); !ok {
		t.Fatal("the scorer is not an io.Closer")
	}
	cases := []struct {
		name       string
		prediction string
		targets    []string
		opts       map[string]any
		want       float64
		invalid    bool
		stats      []float64
	}{
		// quick brown fox jumps over lazy dog: 7 content words ("the" is a stopword).
		{name: "partial", prediction: "A quick fox", targets: []string{"The quick brown fox jumps over the lazy dog"}, want: 2.0 / 7, stats: []float64{2, 7}},
		{name: "case and punctuation", prediction: "FOX, dog; quick!", targets: []string{"quick fox dog"}, want: 1, stats: []float64{3, 3}},
		{name: "best reference", prediction: "cherry pie", targets: []string{"apple banana", "cherry"}, want: 1, stats: []float64{1, 1}},
		// Each Han character is a word: 贾 宝 玉 的 通 灵, six distinct.
		{name: "chinese", prediction: "宝玉", targets: []string{"贾宝玉的通灵宝玉"}, want: 2.0 / 6, stats: []float64{2, 6}},
		{name: "only stopwords", prediction: "the", targets: []string{"the of and"}, invalid: true},
		{name: "no references", prediction: "x", invalid: true},
		{name: "min_length option", prediction: "elephant", targets: []string{"big elephant ran"},
			opts: map[string]any{"min_length": 4}, want: 1, stats: []float64{1, 1}},
		{name: "stopwords option", prediction: "red", targets: []string{"red apple"},
			opts: map[string]any{"stopwords": []string{"apple"}}, want: 1, stats: []float64{1, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := h
			if tc.opts != nil {
				sc = open(t, "coverage", map[string]any{"options": tc.opts})
			}
			got, err := sc.score(tc.prediction, tc.targets...)
			if err != nil {
				t.Fatal(err)
			}
			if got.Invalid != tc.invalid {
				t.Fatalf("invalid = %v, want %v (%+v)", got.Invalid, tc.invalid, got)
			}
			if tc.invalid {
				return
			}
			if diff := got.Value - tc.want; diff > 1e-12 || diff < -1e-12 {
				t.Errorf("value %v, want %v (details %v)", got.Value, tc.want, got.Details)
			}
			if fmt.Sprint(got.Stats) != fmt.Sprint(tc.stats) {
				t.Errorf("stats %v, want %v", got.Stats, tc.stats)
			}
		})
	}
}

func TestKeywordCoverageOptionsAreStrict(t *testing.T) {
	h := open(t, "coverage", map[string]any{"options": map[string]any{"min_lenght": 3}})
	_, err := h.score("x", "y")
	if requestCode(err) != CodeGuestError || !strings.Contains(err.Error(), "min_lenght") {
		t.Fatalf("got %v, want a %s naming min_lenght", err, CodeGuestError)
	}
}

func TestKeywordCoverageAggregate(t *testing.T) {
	h := open(t, "coverage", nil)
	var scores []*sdk.ScoreResponse
	for _, c := range [][2]string{
		{"A quick fox", "The quick brown fox jumps over the lazy dog"}, // 2 of 7
		{"cherry", "cherry"},     // 1 of 1
		{"the", "the of and"},    // invalid
		{"blue sky", "blue sea"}, // 1 of 2
	} {
		s, err := h.score(c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		scores = append(scores, s)
	}
	agg, err := h.Scorer.(sdk.Aggregator).Aggregate(context.Background(), &sdk.AggregateRequest{Scores: scores})
	if err != nil {
		t.Fatal(err)
	}
	// The micro-average, 4 of 10, not the mean of 2/7, 1 and 1/2.
	if agg.Value != 0.4 || agg.N != 3 || agg.Invalid != 1 {
		t.Errorf("aggregate %+v, want value 0.4, n 3, invalid 1", agg)
	}
	// The module's bootstrap interval: resamples of 2/7, 1/1 and 1/2 range
	// from 2/7 to 1.
	if agg.CILow < 2.0/7 || agg.CIHigh > 1 || agg.CILow > agg.Value || agg.CIHigh < agg.Value || agg.CILow == agg.CIHigh {
		t.Errorf("interval [%v, %v] around %v", agg.CILow, agg.CIHigh, agg.Value)
	}
	// The module's own error reaches the caller, and the scorer goes on.
	_, err = h.Scorer.(sdk.Aggregator).Aggregate(context.Background(), &sdk.AggregateRequest{Scores: []*sdk.ScoreResponse{{Value: 1}}})
	if requestCode(err) != CodeGuestError || !strings.Contains(err.Error(), "want 2 stats") {
		t.Errorf("aggregate of a score without stats: %v", err)
	}
	if _, err := h.score("cherry", "cherry"); err != nil {
		t.Errorf("score after a failed aggregate: %v", err)
	}
}

// A long English document from Go's own test data: the context is not sent
// by default, and a reference drawn from the text is fully covered by it.
func TestKeywordCoverageLongDocument(t *testing.T) {
	text, err := os.ReadFile(sdktest.OpticksPath())
	if err != nil {
		t.Skip(err)
	}
	sample := &sdk.Sample{
		ID:      "opticks",
		Context: strings.Repeat(string(text), 3), // well over max_input_bytes
		Targets: []string{"The Sines of Incidence, Reflexion, and Refraction, are the Sines of the Angles"},
	}
	// A Go guest under close-on-context-done scans text at a few hundred
	// KB/s (see README.md), so this half-megabyte prediction needs seconds.
	h := open(t, "coverage", map[string]any{"timeout": "60s"})
	got, err := h.Score(context.Background(), &sdk.ScoreRequest{Sample: sample, Prediction: string(text)})
	if err != nil {
		t.Fatal(err)
	}
	// sines, incidence, reflexion, refraction, angles.
	if got.Value != 1 || fmt.Sprint(got.Stats) != "[5 5]" {
		t.Errorf("got %v %v, want 1 [5 5]", got.Value, got.Stats)
	}
	withContext := open(t, "coverage", map[string]any{"include_context": true})
	if _, err := withContext.Score(context.Background(), &sdk.ScoreRequest{Sample: sample, Prediction: "x"}); requestCode(err) != CodeInputTooLarge {
		t.Errorf("with include_context: %v, want %s", err, CodeInputTooLarge)
	}
}

func TestConcurrentScoring(t *testing.T) {
	h := open(t, "coverage", nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8*25)
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				// i+1 of i+2 distinct words are predicted.
				var ref, pred []string
				for w := range i + 2 {
					ref = append(ref, fmt.Sprintf("w%dx%d", g, w))
				}
				pred = ref[:i+1]
				got, err := h.score(strings.Join(pred, " "), strings.Join(ref, " "))
				if err != nil {
					errs <- err
					continue
				}
				if want := float64(i+1) / float64(i+2); got.Value != want {
					errs <- fmt.Errorf("goroutine %d call %d: %v, want %v", g, i, got.Value, want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := h.s.discarded.Load(); n != 0 {
		t.Errorf("%d instances discarded", n)
	}
	if live := len(h.s.idle); live > cap(h.s.slots) {
		t.Errorf("%d idle instances, more than the %d allowed", live, cap(h.s.slots))
	}
}
