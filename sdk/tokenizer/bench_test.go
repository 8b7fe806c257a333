package tokenizer

import (
	"hash/maphash"
	"strings"
	"testing"
)

// benchText is about 1 MB: a third each of English, Chinese and Go source.
func benchText(b *testing.B) string {
	var sb strings.Builder
	for _, p := range mixedCorpus(b, 350<<10) {
		sb.WriteString(p.text)
	}
	return sb.String()
}

func BenchmarkEncode(b *testing.B) {
	text := benchText(b)
	for _, name := range []string{"cl100k_base", "o200k_base"} {
		e, err := Get(name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/hayloft", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				e.Encode(text)
			}
		})
		b.Run(name+"/hayloft-count", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				e.Count(text)
			}
		})
		ref := reference(b, name)
		b.Run(name+"/pkoukk", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				ref.EncodeOrdinary(text)
			}
		})
	}
}

// BenchmarkEncodeCold measures the encoder without its piece cache's help:
// every iteration sees text it has not cached (the cache is per encoding, so
// a fresh one is built per iteration outside the timer).
func BenchmarkEncodeCold(b *testing.B) {
	text := benchText(b)
	e, err := Get("cl100k_base")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		b.StopTimer()
		fresh := &Encoding{name: e.name, split: e.split, ranks: e.ranks, decoder: e.decoder}
		fresh.cache.seed = maphash.MakeSeed()
		b.StartTimer()
		fresh.Encode(text)
	}
}
