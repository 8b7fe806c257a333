//go:build !unix

package bridge

import (
	"os"
	"os/exec"
)

// Without process groups only the server itself can be stopped.
func ownGroup(cmd *exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, kill bool) error {
	if kill {
		return cmd.Process.Kill()
	}
	return cmd.Process.Signal(os.Interrupt)
}

// groupAlive cannot see a group here; the server's own exit is all.
func groupAlive(cmd *exec.Cmd) bool { return false }
