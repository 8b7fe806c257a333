//go:build wasip1

package guest

import "unsafe"

// pinned keeps buffers handed to the host reachable: the host holds only
// their addresses, which the garbage collector cannot see. Go's collector
// does not move objects, so an address stays valid while its entry lives.
var pinned = map[uint32][]byte{}

// Alloc returns the address of a new buffer of size bytes.
func Alloc(size uint32) uint32 {
	if size == 0 {
		size = 1 // a distinct, freeable address even for empty data
	}
	return pin(make([]byte, size))
}

// Free releases a buffer returned by Alloc or Return; unknown addresses are
// ignored, as free(NULL) is in C.
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

// Return pins b until the host frees it and packs its address and length
// into the ABI's result word: address in the high 32 bits, length in the low.
func Return(b []byte) uint64 {
	n := len(b)
	if n == 0 {
		b = make([]byte, 1)
	}
	return uint64(pin(b))<<32 | uint64(uint32(n))
}

func pin(b []byte) uint32 {
	p := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	pinned[p] = b
	return p
}
