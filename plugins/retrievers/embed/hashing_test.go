package embed

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

func TestTerms(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"The best thing, in San-Francisco!", []string{"the", "best", "thing", "in", "san", "francisco"}},
		{"Route 66 and R2D2", []string{"route", "66", "and", "r2d2"}},
		{"贾宝玉说：好", []string{"贾", "宝", "玉", "说", "好"}},
		{"abc中文DEF", []string{"abc", "中", "文", "def"}},
		{"カタカナ 한국어", []string{"カ", "タ", "カ", "ナ", "한", "국", "어"}},
		{"Œuvre déjà ÉTÉ 😀 x", []string{"œuvre", "déjà", "été", "x"}},
		{"", nil},
		{" ... ", nil},
	} {
		var got []string
		Terms(tc.text, func(w string) { got = append(got, w) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("Terms(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func nonZero(v []float32) int {
	n := 0
	for _, x := range v {
		if x != 0 {
			n++
		}
	}
	return n
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestHashingFeatures(t *testing.T) {
	ctx := context.Background()
	// With 2^20 buckets, collisions among a handful of features are
	// vanishingly unlikely, so the number of non-zero buckets counts the
	// features.
	for _, tc := range []struct {
		words, chars int
		text         string
		features     int
	}{
		{1, 0, "cat", 1},
		{1, 3, "cat", 4},               // cat, " ca", "cat", "at "
		{2, 0, "black cat", 3},         // black, cat, "black cat"
		{2, 3, "black cat", 3 + 5 + 3}, // + " bl","bla","lac","ack","ck " + " ca","cat","at "
		{1, 3, "中文", 2 + 2},            // 中, 文, " 中 ", " 文 "
		{1, 2, "é", 1 + 2},             // é, " é", "é "
		{2, 0, "a a a", 2},             // a, "a a": repeats count once each
	} {
		h, err := NewHashing(1<<20, tc.words, tc.chars)
		if err != nil {
			t.Fatal(err)
		}
		vecs, err := h.Embed(ctx, []string{tc.text})
		if err != nil {
			t.Fatal(err)
		}
		if got := nonZero(vecs[0]); got != tc.features {
			t.Errorf("words=%d chars=%d %q: %d features, want %d", tc.words, tc.chars, tc.text, got, tc.features)
		}
	}
}

func TestHashingVectors(t *testing.T) {
	ctx := context.Background()
	h, err := ParseHashing("")
	if err != nil {
		t.Fatal(err)
	}
	if h.Dim() != 1024 || h.Identity() != "hashing:dim=1024,words=2,chars=3" {
		t.Fatalf("defaults: dim %d identity %q", h.Dim(), h.Identity())
	}
	texts := []string{
		"Light is refracted by the prism into colours.",
		"The prism refracts light into its colours.",
		"The best thing to do in San Francisco is eat a sandwich.",
		"",
	}
	a, err := h.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := h.Embed(ctx, slices.Clone(texts))
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Errorf("text %d embeds differently on a second call", i)
		}
		if n := norm(a[i]); i < 3 && math.Abs(n-1) > 1e-5 {
			t.Errorf("text %d has norm %v", i, n)
		}
	}
	if nonZero(a[3]) != 0 {
		t.Error("the empty text has features")
	}
	if near, far := dot(a[0], a[1]), dot(a[0], a[2]); near <= far {
		t.Errorf("paraphrase similarity %.3f <= unrelated %.3f", near, far)
	}

	w := h.Weights(a[:3])
	// A bucket in every doc weighs 1; one in none weighs 1 + ln(1+N).
	everywhere, nowhere := -1, -1
	for i := range w {
		in := 0
		for _, v := range a[:3] {
			if v[i] != 0 {
				in++
			}
		}
		if in == 3 && everywhere < 0 {
			everywhere = i
		}
		if in == 0 && nowhere < 0 {
			nowhere = i
		}
	}
	if everywhere < 0 || math.Abs(float64(w[everywhere])-1) > 1e-6 {
		t.Errorf("bucket %d in every doc weighs %v, want 1", everywhere, w[max(everywhere, 0)])
	}
	if want := 1 + math.Log(4); math.Abs(float64(w[nowhere])-want) > 1e-6 {
		t.Errorf("bucket %d in no doc weighs %v, want %v", nowhere, w[nowhere], want)
	}
	v := slices.Clone(a[0])
	Apply(w, v)
	if n := norm(v); math.Abs(n-1) > 1e-5 {
		t.Errorf("weighted vector has norm %v", n)
	}
}

func TestHashingCancel(t *testing.T) {
	h, _ := NewHashing(64, 1, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Embed(ctx, []string{"a", "b"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed on a cancelled context: %v", err)
	}
}

func TestNewConfig(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		c     Config
		field string
		id    string
	}{
		{Config{}, "", "hashing:dim=1024,words=2,chars=3"},
		{Config{Embedder: "hashing:dim=64,chars=0"}, "", "hashing:dim=64,words=2,chars=0"},
		{Config{Embedder: "openai:http://127.0.0.1:1/v1", Model: "bge"}, "", "openai:http://127.0.0.1:1/v1:bge"},
		{Config{Embedder: "hashing:dim=0"}, "embedder", ""},
		{Config{Embedder: "hashing:size=3"}, "embedder", ""},
		{Config{Embedder: "hashing:dim=x"}, "embedder", ""},
		{Config{Embedder: "bert"}, "embedder", ""},
		{Config{Embedder: "hashing", Model: "m"}, "embedding_model", ""},
		{Config{Embedder: "hashing", BatchSize: 3}, "batch_size", ""},
		{Config{Embedder: "openai:"}, "embedder", ""},
		{Config{Embedder: "openai:ftp://x", Model: "m"}, "embedder", ""},
		{Config{Embedder: "openai:http://127.0.0.1:1/v1"}, "embedding_model", ""},
		{Config{Embedder: "openai:http://127.0.0.1:1/v1", Model: "m", APIKeyEnv: "HAYLOFT_TEST_SURELY_UNSET"}, "api_key_env", ""},
		{Config{Embedder: "openai:http://127.0.0.1:1/v1", Model: "m", BatchSize: -1}, "batch_size", ""},
	} {
		e, err := New(ctx, tc.c)
		if tc.field == "" {
			if err != nil || e.Identity() != tc.id {
				t.Errorf("New(%+v) = %v, %v; want identity %q", tc.c, e, err, tc.id)
			}
			continue
		}
		var ce *sdk.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("New(%+v): error %v, want a ConfigError on %s", tc.c, err, tc.field)
		}
	}
}
