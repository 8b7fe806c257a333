package sdk

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// The hand-written encoding must be json.Marshal's byte for byte: cache
// keys hash it.
func TestMessagesJSON(t *testing.T) {
	tricky := []string{
		"", "plain", `quote " and \ backslash`, "\b\f\n\r\t\x00\x01\x1f\x7f",
		"<html> & </html>", "é ü 日本 🐄", "\u2028 and \u2029",
		"bad \xff utf8 \xc3", "\xe2\x80", "cut \xf0\x9f\x90", strings.Repeat("long line\n", 1000),
	}
	cases := [][]Message{nil, {}, {{Role: "user", Content: "hi"}}}
	for _, s := range tricky {
		cases = append(cases, []Message{{Role: "system", Content: s}, {Role: s, Content: "q " + s}})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		cases = append(cases, []Message{{Role: "user", Content: string(b)}})
	}
	for i, msgs := range cases {
		want, err := json.Marshal(msgs)
		if err != nil {
			t.Fatal(err)
		}
		got := MessagesJSON(msgs)
		if string(got) != string(want) {
			t.Errorf("case %d: got %q, want %q", i, got, want)
		}
		if n := MessagesJSONLen(msgs); n != len(want) || cap(got) != len(want) {
			t.Errorf("case %d: length %d, capacity %d, want %d", i, n, cap(got), len(want))
		}
	}
}
