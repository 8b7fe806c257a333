//go:build unix

package runner

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used, user and system. The
// kernel's overhead is measured in CPU rather than wall time: with many
// requests in flight, wall time per sample is mostly queueing behind other
// samples, which says nothing about what the kernel costs.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
