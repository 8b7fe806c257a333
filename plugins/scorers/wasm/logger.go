package wasm

import (
	"bytes"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Limits on what a guest may log, so that a module logging in a loop costs
// the host a bounded amount of work and disk.
const (
	logLinesPerSecond = 100
	logMaxCallBytes   = 64 << 10
)

// guestLogger forwards guest log lines to an hclog logger through a token
// bucket: a burst of logLinesPerSecond lines, refilled at that rate. Lines
// over the budget are counted and reported once the budget returns.
type guestLogger struct {
	log hclog.Logger
	now func() time.Time

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int
}

func newGuestLogger(log hclog.Logger, now func() time.Time) *guestLogger {
	return &guestLogger{log: log, now: now, tokens: logLinesPerSecond, last: now()}
}

// write logs each line of msg at level; msg is cut to logMaxCallBytes first.
func (g *guestLogger) write(level hclog.Level, msg []byte) {
	truncated := len(msg) > logMaxCallBytes
	if truncated {
		msg = msg[:logMaxCallBytes]
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.tokens += now.Sub(g.last).Seconds() * logLinesPerSecond
	if g.tokens > logLinesPerSecond {
		g.tokens = logLinesPerSecond
	}
	g.last = now
	for _, line := range bytes.Split(bytes.TrimRight(msg, "\n"), []byte("\n")) {
		if g.tokens < 1 {
			g.dropped++
			continue
		}
		g.tokens--
		if g.dropped > 0 {
			g.log.Warn("guest log lines dropped by the rate limit", "lines", g.dropped)
			g.dropped = 0
		}
		g.log.Log(level, string(line))
	}
	if truncated {
		g.log.Warn("guest log call cut", "limit_bytes", logMaxCallBytes)
	}
}

// tailWriter receives a guest's standard output and error. It keeps the last
// bytes written, so that a trap can be reported with the guest's own last
// words (a Go panic message, say), and forwards lines to the guest logger.
type tailWriter struct {
	log   *guestLogger
	level hclog.Level
	tail  []byte
}

const tailBytes = 4 << 10

func (w *tailWriter) Write(p []byte) (int, error) {
	w.log.write(w.level, p)
	keep := p
	if len(keep) > tailBytes {
		keep = keep[len(keep)-tailBytes:]
	}
	w.tail = append(w.tail, keep...)
	if len(w.tail) > tailBytes {
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-tailBytes:]...)
	}
	return len(p), nil
}

func (w *tailWriter) reset() { w.tail = w.tail[:0] }

func (w *tailWriter) String() string { return string(bytes.TrimSpace(w.tail)) }
