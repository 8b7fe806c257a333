//go:build !unix

package wasm

import "time"

// cpuTime is unknown on this platform.
func cpuTime() (time.Duration, bool) { return 0, false }
