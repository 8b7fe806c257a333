// Package agg adds the optional aggregate export to a Go wasm scorer. Import
// it only in modules that compute a corpus-level value other than the mean of
// sample values (a micro-average, corpus BLEU): the host treats a module that
// exports aggregate as an sdk.Aggregator, and one that does not as a plain
// scorer whose corpus value is the mean.
package agg

import "github.com/hayloft/hayloft/sdk/wasm"

// aggregateFunc is the module's one registered aggregate function.
var aggregateFunc wasm.AggregateFunc

// Register makes f the module's aggregate function. Registering twice panics.
func Register(f wasm.AggregateFunc) {
	if f == nil {
		panic("agg: Register(nil)")
	}
	if aggregateFunc != nil {
		panic("agg: Register called twice")
	}
	aggregateFunc = f
}

// Registered returns the registered aggregate function, or nil.
func Registered() wasm.AggregateFunc { return aggregateFunc }
