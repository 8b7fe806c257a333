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
	w := New[int](Prefix, Options{})
	next := 0
	var inFlight []Item[int]
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for !w.Full() {
			w.Push(next, fmt.Sprintf("%s question %d", docs[next%len(docs)], next), next)
			next++
		}
		it, st := w.Pop()
		if st == Popped {
			inFlight = append(inFlight, it)
		}
		if len(inFlight) > 8 || st != Popped {
			w.Done(inFlight[0])
			inFlight = inFlight[1:]
		}
	}
}

// BenchmarkTreeWindowDistinct is the order's cost per sample where prompts
// share nothing worth ordering for (bench/throughput's short questions),
// with 64 in flight: what the order costs a run that cannot gain from it.
func BenchmarkTreeWindowDistinct(b *testing.B) {
	w := New[int](Prefix, Options{})
	next := 0
	var inFlight []Item[int]
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for !w.Full() {
			w.Push(next, fmt.Sprintf("The barn is red. The code for door %d is %d. What is the code for door %d?", next, 1000+next, next), next)
			next++
		}
		it, st := w.Pop()
		if st == Popped {
			inFlight = append(inFlight, it)
		}
		if len(inFlight) > 64 || st != Popped {
			w.Done(inFlight[0])
			inFlight = inFlight[1:]
		}
	}
}
