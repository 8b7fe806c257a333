package sendorder

import (
	"fmt"
	"testing"
)

// BenchmarkTreeWindow is the order's cost per sample with a full look-ahead:
// push, pop and done, on questions about documents of 2 KB.
func BenchmarkTreeWindow(b *testing.B) {
	docs := make([]string, 64)
	for i := range docs {
		docs[i] = text(uint64(i), 2000)
	}
	benchWindow(b, 8, Options{}, func(i int) string { return fmt.Sprintf("%s question %d", docs[i%len(docs)], i) })
}

// BenchmarkTreeWindowDistinct is the order's cost per sample where prompts
// share nothing worth ordering for (bench/throughput's short questions),
// with 64 in flight: what the order costs a run that cannot gain from it.
func BenchmarkTreeWindowDistinct(b *testing.B) {
	benchWindow(b, 64, Options{}, doors)
}

// BenchmarkTreeWindowDistinctAssumed is the same with the cache size
// assumed, as for bench/throughput's server, which reports none.
func BenchmarkTreeWindowDistinctAssumed(b *testing.B) {
	benchWindow(b, 64, Options{Assumed: true}, doors)
}

func doors(i int) string {
	return fmt.Sprintf("The barn is red. The code for door %d is %d. What is the code for door %d?", i, 1000+i, i)
}

// benchWindow keeps the prefix window full of prompt(i) and about
// inFlight of them sent, one sample per iteration.
func benchWindow(b *testing.B, inFlight int, opts Options, prompt func(i int) string) {
	w := New[int](Prefix, opts)
	next := 0
	var sent []Item[int]
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for !w.Full() {
			w.Push(next, prompt(next), next)
			next++
		}
		it, st := w.Pop()
		if st == Popped {
			sent = append(sent, it)
		}
		if len(sent) > inFlight || st != Popped {
			w.Done(sent[0])
			sent = sent[1:]
		}
	}
}
