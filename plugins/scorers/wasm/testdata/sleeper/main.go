// Command sleeper burns CPU in a busy loop on every call, as a scorer that
// "sleeps" by spinning would: the wazero clock a guest sees is fake, so only
// work, not waiting, can make a call slow.
package main

import "github.com/hayloft/hayloft/sdk/wasm"

type options struct {
	Spins uint64 `json:"spins"`
}

func score(in wasm.Input) (wasm.Output, error) {
	opts := options{Spins: 1 << 62}
	if err := in.DecodeOptions(&opts); err != nil {
		return wasm.Output{}, err
	}
	x := uint64(len(in.Prediction))
	for i := uint64(0); i < opts.Spins; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return wasm.Output{Value: 1, Details: map[string]any{"x": x}}, nil
}

func init() { wasm.Register(score) }

func main() {}
