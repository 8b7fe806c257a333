// Command wasm-scorer is a sandboxed hayloft scorer: keyword coverage, the
// share of a reference's content words found in the prediction. It builds to
// a WebAssembly reactor module; see README.md.
package main

import (
	"github.com/hayloft/hayloft/sdk/wasm"
	"github.com/hayloft/hayloft/sdk/wasm/agg"
)

func init() {
	wasm.Register(score)
	agg.Register(aggregate)
}

// main is never called: a c-shared (reactor) module is initialised by the
// host through _initialize and then driven through its exports.
func main() {}
