//go:build wasip1

package wasm

import (
	"encoding/json"
	"fmt"
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
	return guest.Return(runScore(ptr, n))
}

// runScore decodes the input, calls the registered function and encodes its
// result. A panic in the scorer is deliberately not recovered: the instance
// traps, the host discards it and records the panic message, so a broken
// scorer never keeps running on corrupted state.
func runScore(ptr, n uint32) []byte {
	raw, ok := guest.Bytes(ptr, n)
	if !ok {
		return errorJSON(fmt.Sprintf("score: input %#x+%d was not allocated by malloc", ptr, n))
	}
	if scoreFunc == nil {
		return errorJSON("score: no function registered (call wasm.Register in init)")
	}
	var in Input
	if err := json.Unmarshal(raw, &in); err != nil {
		return errorJSON("score: decode input: " + err.Error())
	}
	out, err := scoreFunc(in)
	if err != nil {
		return errorJSON(err.Error())
	}
	b, err := json.Marshal(out)
	if err != nil {
		return errorJSON("score: encode output: " + err.Error())
	}
	return b
}

func errorJSON(msg string) []byte {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	return b
}
