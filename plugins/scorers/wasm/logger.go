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

// outputWriter receives a guest's standard output or error. It forwards
// whole lines to the guest logger (Go's runtime writes a panic in many small
// pieces) and keeps the first bytes written since the last reset, so that a
// failed call can be reported with the guest's own words: a Go panic or "out
// of memory" comes first, the goroutine dump after.
type outputWriter struct {
	log     *guestLogger
	level   hclog.Level
	head    []byte
	pending []byte // the start of a line not yet logged
}

const headBytes = 4 << 10

func (w *outputWriter) Write(p []byte) (int, error) {
	n := len(p)
	if room := headBytes - len(w.head); room > 0 {
		w.head = append(w.head, p[:min(room, len(p))]...)
	}
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
		if len(w.pending) > 0 {
			w.pending = appendCapped(w.pending, p[:i+1])
			w.log.write(w.level, w.pending)
			w.pending = w.pending[:0]
		} else {
			w.log.write(w.level, p[:i+1])
		}
		p = p[i+1:]
	}
	w.pending = appendCapped(w.pending, p)
	if len(w.pending) > logMaxCallBytes {
		w.flush()
	}
	return n, nil
}

// appendCapped appends src to dst up to one byte past what a log call
// keeps, so that a guest writing a huge line costs no huge copy.
func appendCapped(dst, src []byte) []byte {
	room := logMaxCallBytes + 1 - len(dst)
	if room <= 0 {
		return dst
	}
	return append(dst, src[:min(room, len(src))]...)
}

// flush logs a pending partial line; the host calls it after each call.
func (w *outputWriter) flush() {
	if len(w.pending) > 0 {
		w.log.write(w.level, w.pending)
		w.pending = w.pending[:0]
	}
}

func (w *outputWriter) reset() { w.head = w.head[:0] }

func (w *outputWriter) String() string { return string(bytes.TrimSpace(w.head)) }
