package bm25

import (
	"context"
	"errors"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

func newRetriever(t *testing.T, opts map[string]any) *Retriever {
	t.Helper()
	r, err := NewRetriever(context.Background(), sdk.MustOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// reference scores chunks of space-separated lowercase words, straight
// from the formula.
func reference(chunks []string, query string, k1, b float64) []float64 {
	docs := make([][]string, len(chunks))
	total := 0
	for i, c := range chunks {
		docs[i] = strings.Fields(c)
		total += len(docs[i])
	}
	avg := float64(total) / float64(len(docs))
	out := make([]float64, len(docs))
	seen := map[string]bool{}
	for _, q := range strings.Fields(query) {
		if seen[q] {
			continue
		}
		seen[q] = true
		df := 0
		for _, d := range docs {
			for _, w := range d {
				if w == q {
					df++
					break
				}
			}
		}
		n := float64(len(docs))
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		for i, d := range docs {
			tf := 0.0
			for _, w := range d {
				if w == q {
					tf++
				}
			}
			out[i] += idf * tf * (k1 + 1) / (tf + k1*(1-b+b*float64(len(d))/avg))
		}
	}
	return out
}

func TestScoresMatchFormula(t *testing.T) {
	// One chunk per line: chunk by characters with each line padded to the
	// same length, so chunk boundaries are the lines.
	lines := []string{
		"the quick brown fox jumps over the lazy dog",
		"a fox a fox a fox",
		"dogs and cats living together",
		"nothing to see here at all",
		"brown dog brown dog",
	}
	width := 0
	for _, l := range lines {
		width = max(width, len(l)+1)
	}
	var doc strings.Builder
	for _, l := range lines {
		doc.WriteString(l + strings.Repeat(" ", width-len(l)))
	}
	for _, p := range []struct{ k1, b float64 }{{1.2, 0.75}, {2, 0}, {0.5, 1}} {
		r := newRetriever(t, map[string]any{"chunk_by": "chars", "chunk_tokens": width, "top_k": 5, "order": "score", "k1": p.k1, "b": p.b})
		query := "Brown FOX, the dog!"
		resp, err := r.Retrieve(context.Background(), &sdk.RetrieveRequest{Sample: &sdk.Sample{Context: doc.String(), Question: query}})
		if err != nil {
			t.Fatal(err)
		}
		want := reference(lines, "brown fox the dog", p.k1, p.b)
		order := []int{0, 1, 2, 3, 4}
		sort.SliceStable(order, func(i, j int) bool { return want[order[i]] > want[order[j]] })
		for i, c := range resp.Chunks {
			if c.ID != order[i] || math.Abs(c.Score-want[c.ID]) > 1e-5 {
				t.Errorf("k1=%v b=%v: rank %d = chunk %d score %.6f, want chunk %d score %.6f", p.k1, p.b, i, c.ID, c.Score, order[i], want[order[i]])
			}
		}
	}
}

func opticks(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(sdktest.OpticksPath())
	if err != nil {
		t.Skipf("Go's Opticks test text: %v", err)
	}
	return string(b)
}

func TestFindsNeedle(t *testing.T) {
	text := opticks(t)[:150_000]
	needle := "\nThe best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.\n"
	at := len(text) / 3
	doc := text[:at] + needle + text[at:]
	r := newRetriever(t, map[string]any{"order": "score", "top_k": 5})
	resp, err := r.Retrieve(context.Background(), &sdk.RetrieveRequest{Sample: &sdk.Sample{
		Context: doc, Question: "What is the best thing to do in San Francisco?"}})
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(resp.Context, "\n\n")
	if !strings.Contains(first, "Dolores Park") || resp.Chunks[0].Offset > at {
		t.Errorf("best chunk %+v does not hold the needle", resp.Chunks[0])
	}
	if resp.Details["retriever"] != Name || resp.Details["chunks"].(int) < 60 {
		t.Errorf("details %v", resp.Details)
	}
}

func TestChineseByCharacter(t *testing.T) {
	b, err := os.ReadFile("../../../../shared/data/haystack/zh/The_Story_of_the_Stone.txt")
	if err != nil {
		t.Skipf("shared Chinese haystack: %v", err)
	}
	text := strings.ToValidUTF8(string(b[:100_000]), "")
	at := strings.IndexByte(text[len(text)/2:], '\n') + len(text)/2
	doc := text[:at] + "\n小企鹅在图书馆屋顶数星星。\n" + text[at:]
	r := newRetriever(t, map[string]any{"order": "score", "top_k": 1})
	resp, err := r.Retrieve(context.Background(), &sdk.RetrieveRequest{Sample: &sdk.Sample{
		Context: doc, Question: "企鹅在图书馆数什么？"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Context, "小企鹅") {
		t.Errorf("CJK question did not find its chunk; kept %+v", resp.Chunks)
	}
}

func TestErrorsAndOptions(t *testing.T) {
	ctx := context.Background()
	r := newRetriever(t, nil)
	_, err := r.Retrieve(ctx, &sdk.RetrieveRequest{Sample: &sdk.Sample{ID: "q", Context: "text", Question: " "}})
	var re *sdk.RequestError
	if !errors.As(err, &re) {
		t.Errorf("no question: %v", err)
	}
	resp, err := r.Retrieve(ctx, &sdk.RetrieveRequest{Sample: &sdk.Sample{Question: "q"}})
	if err != nil || resp.Context != "" {
		t.Errorf("empty context: %+v, %v", resp, err)
	}
	// A question sharing no term keeps the first chunks, in order.
	r = newRetriever(t, map[string]any{"chunk_by": "chars", "chunk_tokens": 4, "top_k": 2, "separator": "|"})
	resp, err = r.Retrieve(ctx, &sdk.RetrieveRequest{Sample: &sdk.Sample{Context: "aaaabbbbcccc", Question: "zzz"}})
	if err != nil || resp.Context != "aaaa|bbbb" {
		t.Errorf("no matching term: %q, %v", resp.Context, err)
	}
	for _, tc := range []struct {
		opts  map[string]any
		field string
	}{
		{map[string]any{"k1": -1}, "k1"},
		{map[string]any{"b": 1.5}, "b"},
		{map[string]any{"b": "high"}, "b"},
		{map[string]any{"top_k": -2}, "top_k"},
		{map[string]any{"embedder": "hashing"}, "embedder"},
		{map[string]any{"chunk_by": "lines"}, "chunk_by"},
	} {
		_, err := New(ctx, sdk.MustOptions(tc.opts))
		var ce *sdk.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("New(%v): %v, want a ConfigError on %s", tc.opts, err, tc.field)
		}
	}
}

func TestOverGRPC(t *testing.T) {
	set := sdk.NewSet("test", "v0")
	set.RegisterRetriever(Name, New)
	remote := sdktest.Retriever(t, set, Name, map[string]any{"top_k": 3, "order": "score"})
	doc := opticks(t)[:40_000]
	req := &sdk.RetrieveRequest{Sample: &sdk.Sample{Context: doc, Question: "prism refraction of light"}}
	got, err := remote.Retrieve(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want, err := newRetriever(t, map[string]any{"top_k": 3, "order": "score"}).Retrieve(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Context != want.Context || len(got.Chunks) != 3 {
		t.Fatalf("over gRPC kept %+v, in process %+v", got.Chunks, want.Chunks)
	}
	for i := range got.Chunks {
		if got.Chunks[i] != want.Chunks[i] {
			t.Errorf("chunk %d: %+v over gRPC, %+v in process", i, got.Chunks[i], want.Chunks[i])
		}
	}
}
