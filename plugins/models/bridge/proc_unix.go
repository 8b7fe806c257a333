//go:build unix

package bridge

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the server in a process group of its own, so stopping
// it also stops whatever it spawned (vLLM forks engine workers; a shell
// wrapper forks the server).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

func signalGroup(cmd *exec.Cmd, kill bool) error {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	return syscall.Kill(-cmd.Process.Pid, sig)
}

// groupAlive reports whether any process of the group is left. Zombies
// count: an orphan waits for init to reap it, which takes a moment.
func groupAlive(cmd *exec.Cmd) bool {
	return syscall.Kill(-cmd.Process.Pid, 0) == nil
}
