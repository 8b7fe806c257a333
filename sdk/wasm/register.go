package wasm

import "fmt"

// scoreFunc is the module's one registered scorer: a module is one scorer, so
// the registry holds a single entry.
var scoreFunc ScoreFunc

// Register makes f the module's score function. Call it once, from init or
// main. Registering twice panics: it is a programming error, found by the
// first test run of the module.
func Register(f ScoreFunc) {
	if f == nil {
		panic("wasm: Register(nil)")
	}
	if scoreFunc != nil {
		panic("wasm: Register called twice")
	}
	scoreFunc = f
}

// Registered returns the registered score function, or nil; for tests of a
// scorer built for an ordinary target.
func Registered() ScoreFunc { return scoreFunc }

// Logf formats a line and sends it to the host's logger (on wasip1) or to
// standard error (elsewhere). The host rate-limits guest logs, so a module
// that logs in a tight loop loses lines rather than slowing the run.
func Logf(format string, args ...any) {
	Log(fmt.Sprintf(format, args...))
}
