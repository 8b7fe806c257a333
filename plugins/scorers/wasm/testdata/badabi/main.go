// Command badabi implements the score ABI by hand but claims a version the
// host does not speak; the host must refuse to load it.
package main

import "unsafe"

var pinned = map[uint32][]byte{}

//go:wasmexport hayloft_abi_version
func abiVersion() int32 { return 99 }

//go:wasmexport malloc
func malloc(size uint32) uint32 {
	b := make([]byte, size+1)
	p := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	pinned[p] = b
	return p
}

//go:wasmexport free
func free(ptr uint32) { delete(pinned, ptr) }

//go:wasmexport score
func score(ptr, n uint32) uint64 {
	out := []byte(`{"value":1}`)
	p := malloc(uint32(len(out)))
	copy(pinned[p], out)
	return uint64(p)<<32 | uint64(len(out))
}

func main() {}
