package chunk

import (
	"strings"
	"testing"
)

// BenchmarkSplit500 splits a 1.1M-token document (Opticks, 8 times) into
// chunks of 500 cl100k tokens.
func BenchmarkSplit500(b *testing.B) {
	text := strings.Repeat(opticks(b), 8)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := Split(text, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
