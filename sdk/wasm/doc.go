// Package wasm is the guest side of hayloft's sandboxed scorers: a scorer
// written in Go and compiled to a WebAssembly module that the built-in "wasm"
// scorer runs under wazero with hard limits on memory, time and output size.
//
// A scorer author writes one function and registers it:
//
//	func score(in wasm.Input) (wasm.Output, error) { … }
//
//	func init() { wasm.Register(score) }
//	func main() {}
//
// and builds a reactor module:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o scorer.wasm .
//
// Importing this package adds the exports the host needs (hayloft_abi_version,
// malloc, free, score); importing sdk/wasm/agg adds the optional aggregate
// export. The ABI itself, for authors using other languages, is in README.md.
//
// The types and Register also build for ordinary targets, so a scorer's unit
// tests run with a plain `go test` and `go vet ./...` works on any platform.
package wasm
