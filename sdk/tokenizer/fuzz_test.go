package tokenizer

import (
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzAgainstTiktokenGo compares our encoder with pkoukk/tiktoken-go on
// arbitrary valid UTF-8 (tiktoken-go replaces invalid bytes with U+FFFD
// before encoding, so on invalid input the two differ by design).
func FuzzAgainstTiktokenGo(f *testing.F) {
	for _, s := range []string{
		"hello world", " \n\n \n\n", "I'm 'Re 'LL 'sx", "ǅungla ǈa", "x\u0301y\u0301 ", "a\u0300\u0300B",
		"你好，世界", "1234567 89", "  \t\r\n  x", "//comment\n/*x*/", "\u3000a\u00a0b", "ʰʰʰa",
		"Ab'S ABC'd ǅ'll", "\u0301", "\u0301A", "a\u2028\u2029b", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip()
		}
		for _, name := range []string{"cl100k_base", "o200k_base", "r50k_base"} {
			e, err := Get(name)
			if err != nil {
				t.Fatal(err)
			}
			want := reference(t, name).EncodeOrdinary(s)
			got := e.Encode(s)
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("%s %q: got %v, reference %v", name, s, got, want)
			}
			if e.Count(s) != len(want) {
				t.Fatalf("%s %q: Count %d, want %d", name, s, e.Count(s), len(want))
			}
			if e.Decode(got) != s {
				t.Fatalf("%s %q: round trip gives %q", name, s, e.Decode(got))
			}
		}
	})
}
