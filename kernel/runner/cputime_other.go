//go:build !unix

package runner

import "time"

// processCPU is not available here; the runner falls back to wall time.
func processCPU() (time.Duration, bool) { return 0, false }
