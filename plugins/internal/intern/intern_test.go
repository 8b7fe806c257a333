package intern

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestTableMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var v Table
	for round := range 20 {
		v.Reset()
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
			lookup := v.Lookup
			if rng.IntN(2) == 0 { // the same table through its hashed entry
				lookup = func(tok []byte, add bool) (uint32, bool) {
					h := HashStart
					for _, c := range tok {
						h = HashByte(h, c)
					}
					return v.LookupHashed(tok, h, add)
				}
			}
			if got, ok := lookup([]byte(tok), true); !ok || got != want {
				t.Fatalf("round %d: intern(%q) = %d, want %d", round, tok, got, want)
			}
		}
		if v.Len() != len(ref) {
			t.Fatalf("len = %d, want %d", v.Len(), len(ref))
		}
		for range 500 {
			tok := fmt.Sprint("t", rng.IntN(n+10))
			want, wantOK := ref[tok]
			if got, ok := v.Lookup([]byte(tok), false); ok != wantOK || got != want {
				t.Fatalf("get(%q) = %d,%v want %d,%v", tok, got, ok, want, wantOK)
			}
		}
	}
}

// A table interns as a map does through Intern, and through LookupHashed
// fed Sum's hashes: on tokens of every length around Sum's word and tail
// sizes and the head's 8 bytes, differing in one byte, with zero bytes that
// the head's padding must not confuse ("a" and "a\x00"). headOf is the
// zero-padded first 8 bytes.
func TestInternAndSum(t *testing.T) {
	for _, c := range []struct {
		name   string
		lookup func(v *Table, tok []byte, add bool) (uint32, bool)
	}{
		{"Intern", (*Table).Intern},
		{"LookupHashed+Sum", func(v *Table, tok []byte, add bool) (uint32, bool) {
			return v.LookupHashed(tok, Sum(string(tok)), add)
		}},
	} {
		rng := rand.New(rand.NewPCG(9, 10))
		var v Table
		for round := range 10 {
			v.Reset()
			ref := map[string]uint32{}
			for range 5000 {
				b := make([]byte, rng.IntN(20))
				for i := range b {
					b[i] = "ab\x00\xff"[rng.IntN(4)]
				}
				var pad [8]byte
				copy(pad[:], b)
				head := uint64(0)
				for i := 7; i >= 0; i-- {
					head = head<<8 | uint64(pad[i])
				}
				if got := headOf(b); got != head {
					t.Fatalf("headOf(%q) = %#x, want %#x", b, got, head)
				}
				tok := string(b)
				id, ok := ref[tok]
				if !ok {
					id = uint32(len(ref))
					ref[tok] = id
				}
				if got, ok := c.lookup(&v, b, true); !ok || got != id {
					t.Fatalf("%s, round %d: intern(%q) = %d, want %d", c.name, round, tok, got, id)
				}
			}
			for tok, want := range ref {
				if got, ok := c.lookup(&v, []byte(tok), false); !ok || got != want {
					t.Fatalf("%s: get(%q) = %d,%v want %d", c.name, tok, got, ok, want)
				}
			}
			if _, ok := c.lookup(&v, []byte("not there at all"), false); ok {
				t.Fatalf("%s: a token never interned was found", c.name)
			}
		}
	}
}
