package bridge

import "syscall"

// dieWithParent has Linux send the server SIGTERM if the hayloft process
// dies without closing the bridge (a SIGKILL, or go-plugin's short grace
// running out while the server drains). The signal follows the death of
// the thread that started the server; Go ends threads only when a goroutine
// locked to one exits, which hayloft's callers do not do.
func dieWithParent(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGTERM
}
