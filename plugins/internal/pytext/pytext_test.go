package pytext

import (
	"slices"
	"testing"
)

// Expected values are what CPython 3.11 prints for the same calls.
func TestPythonSemantics(t *testing.T) {
	fields := []struct {
		in   string
		want []string
	}{
		{"a b\tc", []string{"a", "b", "c"}},
		{"a\x1cb\x1fc", []string{"a", "b", "c"}}, // str.split splits on separators
		{"a\u3000b\u00a0c", []string{"a", "b", "c"}},
		{"  ", []string{}},
	}
	fields = append(fields, struct {
		in   string
		want []string
	}{" x\xffy \u2009z\u2003 ", []string{"x\xffy", "z"}})
	for _, c := range fields {
		if got := Fields(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Fields(%q) = %q, want %q", c.in, got, c.want)
		}
		// NextField walks the same fields.
		got := []string{}
		b := []byte(c.in)
		for i := 0; ; {
			start, end := NextField(b, i)
			if start == len(b) {
				break
			}
			got = append(got, string(b[start:end]))
			i = end
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("NextField over %q = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Strip("\x1d x \u2028"); got != "x" {
		t.Errorf("Strip = %q", got)
	}
	for in, want := range map[string]string{
		" x \x1e": " x", "x": "x", "x.": "x.", "": "", " ": "", "x\u00a0": "x", "x\u0085\u3000\t": "x",
		"x\u2028y": "x\u2028y", "é": "é", "x\x7f": "x\x7f", "x\x1f": "x", "x\xff": "x\xff",
	} {
		if got := RStrip(in); got != want {
			t.Errorf("RStrip(%q) = %q, want %q", in, got, want)
		}
	}
	lower := map[string]string{
		"ΟΔΟΣ":   "οδος", // word-final sigma
		"ΟΔΟΣ Α": "οδος α",
		"Σ":      "σ", // no cased letter before: not final
		"İ":      "i\u0307",
		"ABC":    "abc",
	}
	for in, want := range lower {
		if got := Lower(in); got != want {
			t.Errorf("Lower(%q) = %q, want %q", in, got, want)
		}
	}
}
