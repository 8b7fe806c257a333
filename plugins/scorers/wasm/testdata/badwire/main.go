// Command badwire implements version 2 of the ABI by hand and returns,
// when its prediction names one, a malformed output, so that tests can
// check the host refuses each without harm; "ok" scores 1.
package main

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/hayloft/hayloft/sdk/wasm/wire"
)

var pinned = map[uint32][]byte{}

// out keeps the last output alive until the next call.
var out []byte

//go:wasmexport hayloft_abi_version
func abiVersion() int32 { return 2 }

//go:wasmexport malloc
func malloc(size uint32) uint32 {
	b := make([]byte, size+1)
	p := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	pinned[p] = b
	return p
}

//go:wasmexport free
func free(ptr uint32) { delete(pinned, ptr) }

func u32(b []byte, n uint32) []byte { return binary.LittleEndian.AppendUint32(b, n) }

//go:wasmexport score
func score(ptr, n uint32) uint64 {
	in, err := wire.DecodeInput(append([]byte(nil), pinned[ptr][:n]...))
	if err != nil {
		out, _ = wire.AppendOutput(nil, &wire.Output{Error: err.Error()})
		return ret(out)
	}
	switch in.Prediction {
	case "truncated":
		out = []byte{wire.OutValue, wire.TagNumber, 1, 2}
	case "wrong type":
		out = u32([]byte{wire.OutValue, wire.TagString}, 1)
		out = append(out, 'x')
	case "nan":
		out = binary.LittleEndian.AppendUint64([]byte{wire.OutValue, wire.TagNumber}, math.Float64bits(math.NaN()))
	case "huge count":
		out = u32([]byte{wire.OutStats, wire.TagArray}, 0x7fffffff)
	case "huge string":
		out = u32([]byte{wire.OutError, wire.TagString}, 0xfffffff0)
	case "deep":
		out = []byte{wire.OutDetails, wire.TagObject, 1, 0, 0, 0, 1, 0, 0, 0, 'k'}
		for range 1000 {
			out = u32(append(out, wire.TagArray), 1)
		}
		out = append(out, wire.TagNull)
	case "no value":
		out = []byte{}
	case "outside memory":
		return uint64(0xfffffff0)<<32 | 64
	case "over the cap":
		out = make([]byte, 2<<20)
		return ret(out)
	default:
		v := 0.0
		for _, t := range in.Sample.Targets {
			if t == in.Prediction {
				v = 1
			}
		}
		out, _ = wire.AppendOutput(nil, &wire.Output{Value: v, HasValue: true})
	}
	return ret(out)
}

func ret(b []byte) uint64 {
	if len(b) == 0 {
		b = append(b, 0)[:0]
	}
	p := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b[:1]))))
	return uint64(p)<<32 | uint64(len(b))
}

func main() {}
