//go:build unix && !linux

package bridge

import "syscall"

// dieWithParent is Linux-only; elsewhere Close is the only stop.
func dieWithParent(attr *syscall.SysProcAttr) {}
