package bleu

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestVocabMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var v vocab
	for round := range 20 {
		v.reset()
		ref := map[string]uint32{}
		n := rng.IntN(3000)
		for range n {
			tok := fmt.Sprint("t", rng.IntN(n/2+1)) // plenty of repeats
			if rng.IntN(50) == 0 {
				tok = "" // the empty token is a token too
			}
			want, ok := ref[tok]
			if !ok {
				want = uint32(len(ref))
				ref[tok] = want
			}
			if got, ok := v.lookup([]byte(tok), true); !ok || got != want {
				t.Fatalf("round %d: intern(%q) = %d, want %d", round, tok, got, want)
			}
		}
		if v.len() != len(ref) {
			t.Fatalf("len = %d, want %d", v.len(), len(ref))
		}
		for range 500 {
			tok := fmt.Sprint("t", rng.IntN(n+10))
			want, wantOK := ref[tok]
			if got, ok := v.lookup([]byte(tok), false); ok != wantOK || got != want {
				t.Fatalf("get(%q) = %d,%v want %d,%v", tok, got, ok, want, wantOK)
			}
		}
	}
}
