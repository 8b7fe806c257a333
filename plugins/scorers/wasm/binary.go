package wasm

import (
	"errors"
	"fmt"
)

// This file reads and writes the pieces of the WebAssembly binary format
// that meter.go rewrites.

// reader decodes a module's bytes; the first error sticks, and every read
// after it returns zero.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) more() bool { return r.err == nil && r.off < len(r.b) }

func (r *reader) end() error {
	if r.err == nil && r.off != len(r.b) {
		r.fail(fmt.Errorf("%d bytes left over", len(r.b)-r.off))
	}
	return r.err
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail(errors.New("truncated"))
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) bytes(n uint32) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)-r.off) {
		r.fail(errors.New("truncated"))
		return nil
	}
	p := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return p
}

func (r *reader) skip(n uint32) { r.bytes(n) }

func (r *reader) rest() []byte {
	if r.err != nil {
		return nil
	}
	p := r.b[r.off:]
	r.off = len(r.b)
	return p
}

// leb returns the bytes of a LEB128 number of at most max bytes.
func (r *reader) leb(max int) []byte {
	start := r.off
	for i := 0; r.err == nil; i++ {
		if i == max {
			r.fail(errors.New("LEB128 number too long"))
			return nil
		}
		if r.byte()&0x80 == 0 {
			break
		}
	}
	if r.err != nil {
		return nil
	}
	return r.b[start:r.off]
}

func (r *reader) u32() uint32 {
	p := r.leb(5)
	var v uint64
	for i, c := range p {
		v |= uint64(c&0x7F) << (7 * i)
	}
	if v > 1<<32-1 {
		r.fail(errors.New("u32 out of range"))
		return 0
	}
	return uint32(v)
}

func (r *reader) name() string { return string(r.bytes(r.u32())) }

func (r *reader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
	if flags > 7 {
		r.fail(fmt.Errorf("limits flags %d", flags))
	}
}

// blockType skips a block type: empty (0x40), a value type, or a type index
// as a signed LEB128.
func (r *reader) blockType() {
	if !r.more() {
		r.fail(errors.New("truncated"))
		return
	}
	switch c := r.b[r.off]; c {
	case 0x40, 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F:
		r.off++
	default:
		if c&0xC0 == 0x40 { // a negative one-byte number: no value type we know
			r.fail(fmt.Errorf("block type %#x", c))
			return
		}
		r.leb(5)
	}
}

// valType reads a value type, refusing the typed references that take more
// than a byte.
func (r *reader) valType() byte {
	t := r.byte()
	switch t {
	case 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F:
	default:
		r.fail(fmt.Errorf("value type %#x", t))
	}
	return t
}

// memarg skips a memory argument: alignment (with bit 6 set, a memory index
// follows) and offset.
func (r *reader) memarg() {
	align := r.u32()
	if align&0x40 != 0 {
		r.u32()
	}
	r.leb(10)
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendS32(b []byte, v int32) []byte { return appendSLEB(b, v) }

// appendSLEB appends v in signed LEB128, as i32.const and i64.const take it.
func appendSLEB[T int32 | int64](b []byte, v T) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendName(b []byte, s string) []byte {
	return append(appendU32(b, uint32(len(s))), s...)
}

func appendRaw(b, p []byte) []byte { return append(b, p...) }
