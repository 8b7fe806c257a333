//go:build wasip1

package agg

import (
	"github.com/hayloft/hayloft/sdk/wasm/internal/guest"
)

//go:wasmexport aggregate
func aggregate(ptr, n uint32) uint64 {
	return guest.Return(guest.Call("aggregate", "agg.Register", ptr, n, aggregateFunc))
}
