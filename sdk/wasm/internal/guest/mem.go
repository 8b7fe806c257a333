//go:build wasip1

package guest

import "unsafe"

// pinned keeps the buffers malloc handed to the host reachable: the host
// holds only their addresses, which the garbage collector cannot see. Go's
// collector does not move objects, so an address stays valid while its entry
// lives.
var pinned = map[uint32][]byte{}

// returned is the last output handed to the host, kept reachable until the
// next call, by which time the host has copied it.
var returned []byte

// Alloc returns the address of a new buffer of size bytes.
func Alloc(size uint32) uint32 {
	if size == 0 {
		size = 1 // a distinct, freeable address even for empty data
	}
	b := make([]byte, size)
	p := addr(b)
	pinned[p] = b
	return p
}

// Free releases a buffer returned by Alloc; unknown addresses are ignored,
// as free(NULL) is in C.
func Free(ptr uint32) { delete(pinned, ptr) }

// Bytes returns the first n bytes of the buffer at ptr, which must come
// from Alloc.
func Bytes(ptr, n uint32) ([]byte, bool) {
	b, ok := pinned[ptr]
	if !ok || int(n) > len(b) {
		return nil, false
	}
	return b[:n], true
}

// Return keeps b until the next call and packs its address and length into
// the ABI's result word: address in the high 32 bits, length in the low.
func Return(b []byte) uint64 {
	n := len(b)
	if cap(b) == 0 {
		b = make([]byte, 1)
	}
	returned = b
	return uint64(addr(b[:1]))<<32 | uint64(uint32(n))
}

func addr(b []byte) uint32 {
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}
