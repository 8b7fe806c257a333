//go:build wasip1

package wasm

import (
	"unsafe"

	"github.com/hayloft/hayloft/sdk/wasm/internal/guest"
)

//go:wasmimport hayloft log
func hostLog(ptr unsafe.Pointer, n uint32)

// Log sends msg to the host's logger.
func Log(msg string) {
	if msg == "" {
		return
	}
	hostLog(unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
}

//go:wasmexport hayloft_abi_version
func abiVersion() int32 { return ABIVersion }

//go:wasmexport malloc
func malloc(size uint32) uint32 { return guest.Alloc(size) }

//go:wasmexport free
func free(ptr uint32) { guest.Free(ptr) }

//go:wasmexport score
func score(ptr, n uint32) uint64 {
	return guest.Return(guest.Call("score", "wasm.Register", ptr, n, scoreFunc))
}
