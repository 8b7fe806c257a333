package prompt

import (
	"context"
	"strings"
	"testing"
)

// BenchmarkFit fits a ~128K-token context (Opticks, repeated) into windows
// of 128K (no cut: one count) and 32K (middle cut: encode, cut, recount).
func BenchmarkFit(b *testing.B) {
	enc := cl100k(b)
	text := opticks(b)
	s := niahLike(strings.Repeat(text, 128000/enc.Count(text)+1))
	n := NewFitter(enc, 1, 0).CountMessages(s.Render())
	for _, c := range []struct {
		name   string
		window int
	}{{"fits", n + 1024}, {"middle-32K", 32768}} {
		b.Run(c.name, func(b *testing.B) {
			f := NewFitter(enc, c.window, 1024)
			b.SetBytes(int64(len(s.Context)))
			for b.Loop() {
				if _, err := f.Fit(context.Background(), s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
