// Package intern maps tokens to dense ids, for the scorers that count or
// align tokens (BLEU's n-grams, ROUGE's LCS): comparing ids is what they
// need, and a reused table does it without a string or map entry per token.
package intern

import (
	"math/bits"
	"unsafe"
)

// Table interns tokens (byte strings) as dense ids 0, 1, 2, … in order of
// first sight, like a map[string]uint32 but without a string per token: the
// token's bytes are copied into an arena that reset empties, and the slots
// are marked with a generation, so a pooled Table is reused segment after
// segment without clearing or allocating.
type Table struct {
	slots []vocabSlot
	arena []byte
	gen   uint32
	n     int
	bits  uint
}

type vocabSlot struct {
	head     uint64 // the token's first 8 bytes (headOf): most tokens are compared without the arena
	gen      uint32
	hash     uint32
	off, len uint32 // the token's length, and its bytes after the first 8 in the arena
	id       uint32
}

// headOf is tok's first 8 bytes as a little-endian word, zero-padded. A
// shorter token is read in two overlapping pieces whose shared bytes agree,
// without a loop.
func headOf(tok []byte) uint64 {
	n := len(tok)
	switch {
	case n >= 8:
		return uint64(tok[0]) | uint64(tok[1])<<8 | uint64(tok[2])<<16 | uint64(tok[3])<<24 |
			uint64(tok[4])<<32 | uint64(tok[5])<<40 | uint64(tok[6])<<48 | uint64(tok[7])<<56
	case n >= 4:
		lo := uint64(tok[0]) | uint64(tok[1])<<8 | uint64(tok[2])<<16 | uint64(tok[3])<<24
		t := tok[n-4:]
		hi := uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24
		return lo | hi<<(8*(n-4))
	case n > 0:
		return uint64(tok[0]) | uint64(tok[n/2])<<(8*(n/2)) | uint64(tok[n-1])<<(8*(n-1))
	}
	return 0
}

// Head is the head of tok that InternHead wants.
func Head(tok []byte) uint64 { return headOf(tok) }

// Reset forgets every token, keeping the memory.
func (v *Table) Reset() {
	v.gen++
	v.n = 0
	v.arena = v.arena[:0]
	if v.gen == 0 { // wrapped: old marks could look current
		clear(v.slots)
		v.gen = 1
	}
}

// Len is the number of tokens interned since the last Reset.
func (v *Table) Len() int { return v.n }

// Bytes is the memory the table holds, for a pool deciding whether a table
// grown by one huge input is worth keeping.
func (v *Table) Bytes() int { return cap(v.arena) + 32*cap(v.slots) }

// HashStart and HashByte are the token hash (FNV-1a: tokens are short, and
// a byte loop beats a call), step by step, for a caller that builds a token
// byte by byte and can hash it on the way (LookupHashed).
const HashStart uint32 = 2166136261

// HashByte adds byte c to hash h.
func HashByte(h uint32, c byte) uint32 { return (h ^ uint32(c)) * 16777619 }

// Sum is a second token hash, a word at a time, for callers that have a
// whole token at hand rather than byte by byte: faster on tokens longer
// than a few bytes. A table must see one hash only (Sum or HashByte's) from
// one Reset to the next: it compares bytes only when hashes agree.
func Sum(s string) uint32 {
	const k = 0x9e3779b97f4a7c15
	h := uint64(len(s)) * k
	for len(s) >= 8 {
		h = bits.RotateLeft64((h^le64(s))*k, 31)
		s = s[8:]
	}
	var tail uint64
	switch {
	case len(s) >= 4:
		tail = uint64(le32(s)) | uint64(le32(s[len(s)-4:]))<<32
	case len(s) > 0:
		tail = uint64(s[0]) | uint64(s[len(s)/2])<<8 | uint64(s[len(s)-1])<<16
	}
	h = (h ^ tail) * k
	return uint32(h>>32) ^ uint32(h)
}

// le64 and le32 read a little-endian word from the start of s (the
// compiler makes each one load).
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

func hashToken(tok []byte) uint32 {
	h := HashStart
	for _, c := range tok {
		h = HashByte(h, c)
	}
	return h
}

func (v *Table) slot(h uint32) uint32 { return (h * 0x9e3779b1) >> (32 - v.bits) }

// Lookup returns the id of tok. With intern, a new token gets the next id;
// without, a token not interned since the last reset gets ok false.
func (v *Table) Lookup(tok []byte, intern bool) (id uint32, ok bool) {
	return v.LookupHashed(tok, hashToken(tok), intern)
}

// LookupHashed is Lookup for a token whose hash h the caller computed with
// HashStart and HashByte.
func (v *Table) LookupHashed(tok []byte, h uint32, intern bool) (id uint32, ok bool) {
	return v.lookup(tok, headOf(tok), h, intern)
}

// Intern is Lookup with a hash of its own, cheaper than HashByte's on short
// tokens: a token of up to 8 bytes is hashed from its head. A table must
// see Intern only, or Lookup and LookupHashed only, from one Reset to the
// next.
func (v *Table) Intern(tok []byte, intern bool) (id uint32, ok bool) {
	return v.InternHead(tok, headOf(tok), intern)
}

// InternHead is Intern for a caller that has tok's first 8 bytes as a
// little-endian word, zero-padded (for a token of up to 8 bytes, a load
// of the 8 bytes where it starts, masked to its length): a scanner that
// reads words anyway saves headOf's assembly.
func (v *Table) InternHead(tok []byte, head uint64, intern bool) (id uint32, ok bool) {
	var h uint32
	if len(tok) <= 8 {
		const k = 0x9e3779b97f4a7c15
		x := (head ^ uint64(len(tok))<<60) * k
		h = uint32(x>>32) ^ uint32(x)
	} else {
		h = Sum(unsafe.String(unsafe.SliceData(tok), len(tok)))
	}
	return v.lookup(tok, head, h, intern)
}

// lookup finds or adds tok, whose first 8 bytes are head and hash is h.
// Only the bytes after the first 8 go to the arena: the head holds the
// rest, and most tokens are no longer.
func (v *Table) lookup(tok []byte, head uint64, h uint32, intern bool) (id uint32, ok bool) {
	if intern && 2*(v.n+1) > len(v.slots) {
		v.grow()
	}
	if len(v.slots) == 0 {
		return 0, false
	}
	mask := uint32(len(v.slots) - 1)
	for i := v.slot(h); ; i = (i + 1) & mask {
		s := &v.slots[i]
		if s.gen != v.gen {
			if !intern {
				return 0, false
			}
			// Field by field: a composite literal is built on the stack
			// and copied, and the copy's wide loads stall on the narrow
			// stores just made.
			s.head, s.gen, s.hash, s.off, s.len, s.id = head, v.gen, h, uint32(len(v.arena)), uint32(len(tok)), uint32(v.n)
			if len(tok) > 8 {
				v.arena = append(v.arena, tok[8:]...)
			}
			v.n++
			return s.id, true
		}
		if s.hash == h && s.head == head && s.len == uint32(len(tok)) &&
			(len(tok) <= 8 || string(v.arena[s.off:s.off+s.len-8]) == string(tok[8:])) {
			return s.id, true
		}
	}
}

// grow doubles the table (at least 64 slots) and reinserts live entries.
func (v *Table) grow() {
	old, oldGen := v.slots, v.gen
	size := max(64, 2*len(old))
	v.slots = make([]vocabSlot, size)
	v.bits = uint(bits.TrailingZeros(uint(size)))
	v.gen = 1
	mask := uint32(size - 1)
	for _, s := range old {
		if s.gen != oldGen || v.n == 0 {
			continue
		}
		for i := v.slot(s.hash); ; i = (i + 1) & mask {
			if v.slots[i].gen != v.gen {
				s.gen = v.gen
				v.slots[i] = s
				break
			}
		}
	}
}
