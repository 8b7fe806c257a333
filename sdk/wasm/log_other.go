//go:build !wasip1

package wasm

import (
	"fmt"
	"os"
)

// Log sends msg to the host's logger; outside a wasm module it goes to
// standard error.
func Log(msg string) {
	fmt.Fprintln(os.Stderr, msg)
}
