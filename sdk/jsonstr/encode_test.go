package jsonstr

import (
	"encoding/json"
	"strings"
	"testing"
)

// AppendQuoted and QuotedLen must give json.Marshal's bytes on every
// input: cache keys hash them.
func FuzzAppendQuoted(f *testing.F) {
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "\b\f\n\r\t\x00\x01\x1f\x7f",
		"<html> & </html>", "é ü 日本 🐄", "\u2028 and \u2029",
		"bad \xff utf8 \xc3", "\xe2\x80", "cut \xf0\x9f\x90", "\xed\xa0\x80", strings.Repeat("long line\n", 100),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendQuoted([]byte("x"), s)
		if string(got[1:]) != string(want) {
			t.Fatalf("AppendQuoted(%q) = %s, json.Marshal %s", s, got[1:], want)
		}
		if n := QuotedLen(s); n != len(want) {
			t.Fatalf("QuotedLen(%q) = %d, want %d", s, n, len(want))
		}
	})
}

// Pieces of any size, cut anywhere, join to AppendQuoted's inside: a cut
// never parts bytes a rune's first byte reads as one.
func FuzzAppendQuotedPiece(f *testing.F) {
	for _, s := range []string{
		"\xe2" + strings.Repeat("\x80", 20), "ab\xf0\x9f\x90\x84cd\xf0\x9f\x90", strings.Repeat("é日🐄", 9),
		"\xff\xfe" + strings.Repeat("\xbf", 11) + "z", "<&>\u2028\n",
	} {
		for limit := range 12 {
			f.Add(s, limit)
		}
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		want := AppendQuoted(nil, s)
		var got []byte
		for rest := s; rest != ""; {
			n := len(got)
			got, rest = AppendQuotedPiece(got, rest, limit)
			if len(got) == n && rest != "" {
				t.Fatalf("no progress on %q", rest)
			}
		}
		if string(got) != string(want[1:len(want)-1]) {
			t.Fatalf("pieces of %q (limit %d) = %q, want %q", s, limit, got, want[1:len(want)-1])
		}
	})
}
