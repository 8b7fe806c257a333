//go:build unix

package main

import (
	"syscall"
	"time"
)

// selfCPU is the user and system CPU this process has used so far: the fake
// server's, which shares the machine with the client it measures.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
