package bleu

import (
	"math/rand/v2"
	"testing"
)

func TestIDTableMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var tab idTable
	for round := 0; round < 20; round++ {
		tab.reset()
		ref := map[uint64]uint32{}
		n := rng.IntN(3000)
		for i := 0; i < n; i++ {
			key := rng.Uint64N(uint64(n/2 + 1)) // plenty of repeats
			want, ok := ref[key]
			if !ok {
				want = uint32(len(ref))
				ref[key] = want
			}
			if got := tab.intern(key); got != want {
				t.Fatalf("round %d: intern(%d) = %d, want %d", round, key, got, want)
			}
		}
		if tab.len() != len(ref) {
			t.Fatalf("len = %d, want %d", tab.len(), len(ref))
		}
		for i := 0; i < 500; i++ {
			key := rng.Uint64N(uint64(n + 10))
			want, wantOK := ref[key]
			if got, ok := tab.get(key); ok != wantOK || got != want {
				t.Fatalf("get(%d) = %d,%v want %d,%v", key, got, ok, want, wantOK)
			}
		}
	}
}
