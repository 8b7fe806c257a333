//go:build wasip1

package wasm

import (
	"bytes"
	"unsafe"

	"github.com/hayloft/hayloft/sdk/wasm/internal/guest"
	"github.com/hayloft/hayloft/sdk/wasm/wire"
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

// out is the output buffer, reused from call to call: the host copies an
// output before its next call.
var out []byte

//go:wasmexport score
func score(ptr, n uint32) uint64 {
	raw, ok := guest.Bytes(ptr, n)
	if !ok {
		return guest.Return(errorOutput(out[:0], "score: input was not allocated by malloc"))
	}
	out = scoreOne(out[:0], bytes.Clone(raw))
	return guest.Return(out)
}

// scoreOne decodes one input, which it may keep (its strings share raw's
// memory), scores it and appends the output to b.
func scoreOne(b, raw []byte) []byte {
	in, err := wire.DecodeInput(raw)
	if err != nil {
		return errorOutput(b, "score: decode input: "+err.Error())
	}
	if scoreFunc == nil {
		return errorOutput(b, "score: no function registered (call wasm.Register in init)")
	}
	o, err := scoreFunc(Input{Sample: in.Sample, Prediction: in.Prediction, References: in.Sample.Targets, Options: in.Options})
	if err != nil {
		return errorOutput(b, err.Error())
	}
	if o.Error != "" {
		return errorOutput(b, o.Error)
	}
	mark := len(b)
	b, err = wire.AppendOutput(b, &wire.Output{Value: o.Value, HasValue: true, Invalid: o.Invalid, Details: o.Details, Stats: o.Stats})
	if err != nil {
		return errorOutput(b[:mark], "score: encode output: "+err.Error())
	}
	return b
}

func errorOutput(b []byte, msg string) []byte {
	b, _ = wire.AppendOutput(b, &wire.Output{Error: msg})
	return b
}
