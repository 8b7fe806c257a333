//go:build wasip1

package agg

import (
	"encoding/json"
	"fmt"

	"github.com/hayloft/hayloft/sdk/wasm"
	"github.com/hayloft/hayloft/sdk/wasm/internal/guest"
)

//go:wasmexport aggregate
func aggregate(ptr, n uint32) uint64 {
	return guest.Return(runAggregate(ptr, n))
}

func runAggregate(ptr, n uint32) []byte {
	raw, ok := guest.Bytes(ptr, n)
	if !ok {
		return errorJSON(fmt.Sprintf("aggregate: input %#x+%d was not allocated by malloc", ptr, n))
	}
	if aggregateFunc == nil {
		return errorJSON("aggregate: no function registered (call agg.Register in init)")
	}
	var in wasm.AggregateInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return errorJSON("aggregate: decode input: " + err.Error())
	}
	out, err := aggregateFunc(in)
	if err != nil {
		return errorJSON(err.Error())
	}
	b, err := json.Marshal(out)
	if err != nil {
		return errorJSON("aggregate: encode output: " + err.Error())
	}
	return b
}

func errorJSON(msg string) []byte {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	return b
}
