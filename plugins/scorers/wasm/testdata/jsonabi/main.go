// Command jsonabi implements version 1 of the ABI by hand, JSON in and out,
// as modules built before version 2 do: the host must still score it. It
// scores exact match and reports the prediction's length in details.
package main

import (
	"encoding/json"
	"unsafe"
)

var pinned = map[uint32][]byte{}

//go:wasmexport hayloft_abi_version
func abiVersion() int32 { return 1 }

//go:wasmexport malloc
func malloc(size uint32) uint32 {
	b := make([]byte, size+1)
	p := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	pinned[p] = b
	return p
}

//go:wasmexport free
func free(ptr uint32) { delete(pinned, ptr) }

// frees counts free calls, reported in details: version 1 frees the input
// and the output of every call.
var frees int

type input struct {
	Prediction string   `json:"prediction"`
	References []string `json:"references"`
}

//go:wasmexport score
func score(ptr, n uint32) uint64 {
	var in input
	out := map[string]any{"value": 0.0}
	if err := json.Unmarshal(pinned[ptr][:n], &in); err != nil {
		out = map[string]any{"error": err.Error()}
	}
	for _, r := range in.References {
		if r == in.Prediction {
			out["value"] = 1.0
		}
	}
	if out["error"] == nil {
		out["details"] = map[string]any{"length": len(in.Prediction), "pinned": len(pinned)}
	}
	b, _ := json.Marshal(out)
	p := malloc(uint32(len(b)))
	copy(pinned[p], b)
	return uint64(p)<<32 | uint64(len(b))
}

func main() {}
