package chunk

import (
	"errors"
	"github.com/hayloft/hayloft/sdk/sdktest"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/tokenizer"
)

func opticks(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(sdktest.OpticksPath())
	if err != nil {
		t.Skipf("Go's Opticks test text: %v", err)
	}
	return string(b)
}

// stone returns the first n bytes (cut to a rune boundary) of the Chinese
// novel in the shared data directory.
func stone(t testing.TB, n int) string {
	t.Helper()
	b, err := os.ReadFile("../../../../shared/data/haystack/zh/The_Story_of_the_Stone.txt")
	if err != nil {
		t.Skipf("shared Chinese haystack: %v", err)
	}
	s := string(b[:min(n, len(b))])
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// checkPartition asserts the invariants of every split: ids count up from
// 0, offsets point at the text, chunks are valid UTF-8 and non-empty, and
// without overlap they tile the text exactly.
func checkPartition(t *testing.T, text string, chunks []Chunk, overlap bool) {
	t.Helper()
	var b strings.Builder
	for i, c := range chunks {
		if c.ID != i {
			t.Fatalf("chunk %d has id %d", i, c.ID)
		}
		if c.Text == "" || !utf8.ValidString(c.Text) {
			t.Fatalf("chunk %d = %q: empty or invalid UTF-8", i, c.Text)
		}
		if c.Offset < 0 || c.Offset+len(c.Text) > len(text) || text[c.Offset:c.Offset+len(c.Text)] != c.Text {
			t.Fatalf("chunk %d: offset %d does not locate its text", i, c.Offset)
		}
		if !overlap && c.Offset != b.Len() {
			t.Fatalf("chunk %d starts at %d, want %d (gap or overlap)", i, c.Offset, b.Len())
		}
		b.WriteString(c.Text)
	}
	if !overlap && b.String() != text {
		t.Fatalf("chunks joined = %d bytes, want the %d-byte text", b.Len(), len(text))
	}
}

func TestSplitTokensEnglish(t *testing.T) {
	text := opticks(t)[:200_000]
	enc, err := tokenizer.Get("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	ids := enc.Encode(text)
	for _, tc := range []struct {
		size, overlap int
	}{{500, 0}, {500, 100}, {128, 0}, {1, 0}, {7, 6}} {
		chunks, err := Split(text, Options{Size: tc.size, Overlap: tc.overlap})
		if err != nil {
			t.Fatal(err)
		}
		step := tc.size - tc.overlap
		want := (max(len(ids)-tc.overlap, 1) + step - 1) / step
		// A chunk of three tokens or fewer can lie inside one character
		// (Opticks has a few) and is dropped; longer ones never are.
		if tc.size > 3 && len(chunks) != want {
			t.Errorf("size %d overlap %d: %d chunks, want %d", tc.size, tc.overlap, len(chunks), want)
		}
		checkPartition(t, text, chunks, tc.overlap > 0)
		// Where no boundary falls inside a character (its tokens decode to
		// valid UTF-8), a chunk is exactly its tokens.
		for i, c := range chunks {
			lo := i * step
			if tc.size <= 3 {
				break // ids no longer line up once a chunk is dropped
			}
			if got, want := c.Text, enc.Decode(ids[lo:min(lo+tc.size, len(ids))]); utf8.ValidString(want) && got != want {
				t.Fatalf("size %d overlap %d chunk %d = %q, want tokens %d.. decoded %q", tc.size, tc.overlap, i, got, lo, want)
			}
		}
	}
}

func TestSplitTokensChinese(t *testing.T) {
	text := stone(t, 300_000)
	enc, err := tokenizer.Get("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	bounds, err := tokenBounds(enc, text)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := Split(text, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkPartition(t, text, chunks, false)
	if want := (len(bounds) - 1 + 499) / 500; len(chunks) != want {
		t.Errorf("%d chunks, want %d", len(chunks), want)
	}
	moved := 0
	for i, c := range chunks[1:] {
		raw := bounds[(i+1)*500]
		if c.Offset < raw || c.Offset-raw > 3 {
			t.Fatalf("chunk %d at byte %d, token boundary at %d", i+1, c.Offset, raw)
		}
		if c.Offset != raw {
			moved++
		}
	}
	// cl100k spells many CJK characters in two or three byte tokens; the
	// test is only meaningful if some boundary fell inside one.
	if moved == 0 {
		t.Fatal("no chunk boundary fell inside a character; the test text exercises nothing")
	}
	t.Logf("%d chunks, %d boundaries moved to a rune start", len(chunks), moved)
}

func TestSplitEmojiBoundaries(t *testing.T) {
	// Emoji and rare CJK characters are several byte-level tokens each, so
	// one-token chunks cut inside them on almost every boundary.
	text := strings.Repeat("👩‍👩‍👧 a😀b 龘🦀", 50)
	enc, err := tokenizer.Get("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	tokens := len(enc.Encode(text))
	for _, size := range []int{1, 2, 3, 5, 500} {
		chunks, err := Split(text, Options{Size: size})
		if err != nil {
			t.Fatal(err)
		}
		checkPartition(t, text, chunks, false)
		if size == 1 && len(chunks) >= tokens {
			t.Errorf("size 1: %d chunks for %d tokens; expected empty pieces inside characters to be dropped", len(chunks), tokens)
		}
	}
}

func TestSplitChars(t *testing.T) {
	for _, tc := range []struct {
		text          string
		size, overlap int
		want          []Chunk
	}{
		{"中文😀ab", 2, 0, []Chunk{{0, 0, "中文"}, {1, 6, "😀a"}, {2, 11, "b"}}},
		{"中文😀ab", 3, 1, []Chunk{{0, 0, "中文😀"}, {1, 6, "😀ab"}}},
		{"abcd", 2, 1, []Chunk{{0, 0, "ab"}, {1, 1, "bc"}, {2, 2, "cd"}}},
		{"abc", 10, 0, []Chunk{{0, 0, "abc"}}},
		{"", 10, 0, nil},
	} {
		got, err := Split(tc.text, Options{By: ByChars, Size: tc.size, Overlap: tc.overlap})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("Split(%q, %d, %d) = %+v, want %+v", tc.text, tc.size, tc.overlap, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("Split(%q, %d, %d)[%d] = %+v, want %+v", tc.text, tc.size, tc.overlap, i, got[i], tc.want[i])
			}
		}
	}
	text := stone(t, 100_000)
	chunks, err := Split(text, Options{By: ByChars, Size: 333})
	if err != nil {
		t.Fatal(err)
	}
	checkPartition(t, text, chunks, false)
	for _, c := range chunks[:len(chunks)-1] {
		if n := utf8.RuneCountInString(c.Text); n != 333 {
			t.Fatalf("chunk %d has %d characters", c.ID, n)
		}
	}
}

func TestSplitOptions(t *testing.T) {
	for _, tc := range []struct {
		opts  Options
		field string
	}{
		{Options{Size: -1}, "chunk_tokens"},
		{Options{Size: 10, Overlap: 10}, "chunk_overlap"},
		{Options{Overlap: -1}, "chunk_overlap"},
		{Options{By: "words"}, "chunk_by"},
		{Options{Tokenizer: "nope"}, "tokenizer"},
		{Options{By: ByChars, Tokenizer: "cl100k_base"}, "tokenizer"},
	} {
		_, err := Split("text", tc.opts)
		var ce *sdk.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("Split with %+v: error %v, want a ConfigError on %s", tc.opts, err, tc.field)
		}
	}
	if _, err := Split("bad \xff byte", Options{}); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
	if _, err := Split("o200k text", Options{Tokenizer: "o200k_base", Size: 2}); err != nil {
		t.Errorf("o200k_base: %v", err)
	}
}
