package embed

import (
	"context"
	"github.com/hayloft/hayloft/sdk/sdktest"
	"os"
	"testing"

	"github.com/hayloft/hayloft/plugins/retrievers/chunk"
)

// BenchmarkHashing embeds Opticks in chunks of 500 cl100k tokens with the
// default hashing embedder.
func BenchmarkHashing(b *testing.B) {
	raw, err := os.ReadFile(sdktest.OpticksPath())
	if err != nil {
		b.Skip(err)
	}
	chunks, err := chunk.Split(string(raw), chunk.Options{})
	if err != nil {
		b.Fatal(err)
	}
	texts := make([]string, len(chunks))
	for i, c := range chunks {
		texts[i] = c.Text
	}
	h, _ := ParseHashing("")
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := h.Embed(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
	}
}
