package wasm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/hayloft/hayloft/sdk"
)

// Request error codes of a guest that broke a limit or failed. The sample
// gets the error; the run goes on with a fresh instance.
const (
	CodeTimeout        = "wasm_timeout"          // the call outlived the timeout option
	CodeTrap           = "wasm_trap"             // the guest trapped, panicked or exited
	CodeMemory         = "wasm_memory"           // the guest ran out of its memory_mb
	CodeInputTooLarge  = "wasm_input_too_large"  // the input exceeded max_input_bytes; the guest was not called
	CodeOutputTooLarge = "wasm_output_too_large" // the output exceeded max_output_bytes
	CodeBadOutput      = "wasm_bad_output"       // the output was out of bounds or not the ABI's JSON
	CodeGuestError     = "wasm_scorer_error"     // the guest returned {"error": …}
)

// Export names of the ABI (sdk/wasm/README.md).
const (
	exportVersion   = "hayloft_abi_version"
	exportMalloc    = "malloc"
	exportFree      = "free"
	exportScore     = "score"
	exportAggregate = "aggregate"
)

// minInputBuffer is the smallest input buffer a version 2 instance is given,
// so that short inputs of different lengths do not each grow it.
const minInputBuffer = 4096

// stderrFirstLines is how much of a call's standard error is shown at
// warning level at most (its first paragraph); the rest is at debug level.
const stderrFirstLines = 8

// instance is one instantiated module. It is used by one call at a time.
type instance struct {
	mod                      api.Module
	malloc, free, score, agg api.Function
	stdout, stderr           *outputWriter
	// buf and bufCap are a version 2 instance's input buffer, allocated
	// by its malloc and reused from call to call, grown when an input
	// needs more.
	buf, bufCap uint32
	// stack holds a call's parameters and results, so that a call
	// allocates nothing for them.
	stack [2]uint64
}

// instantiate starts a fresh instance of the compiled module, running its
// _initialize under the call timeout so that a hostile initialiser is as
// bounded as a hostile score.
func (s *scorer) instantiate(ctx context.Context) (*instance, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	stderr := &outputWriter{log: s.glog, level: hclog.Warn, firstLines: stderrFirstLines}
	stdout := &outputWriter{log: s.glog, level: hclog.Info}
	// No WithFS, WithEnv, WithArgs, WithSysWalltime, WithSysNanotime or
	// WithRandSource: wazero's defaults are no files, no environment, no
	// arguments, a fake clock and a seeded random source, which keeps guests
	// sandboxed and their results reproducible.
	mc := wazero.NewModuleConfig().
		WithName(""). // anonymous, so that any number of instances may coexist
		WithStartFunctions("_initialize").
		WithStdout(stdout).
		WithStderr(stderr)
	mod, err := s.rt.InstantiateModule(ctx, s.compiled, mc)
	stdout.flush()
	stderr.flush()
	if err != nil {
		s.glog.log.Debug("instantiation failed", "error", err)
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return nil, &sdk.RequestError{Code: CodeTimeout, Msg: fmt.Sprintf("module %s: _initialize ran longer than the timeout %s", s.name, s.cfg.timeout)}
		case ctx.Err() != nil:
			return nil, fmt.Errorf("module %s: instantiate: %w", s.name, context.Cause(ctx))
		case saysOutOfMemory(stderr):
			return nil, &sdk.RequestError{Code: CodeMemory, Msg: fmt.Sprintf("module %s: _initialize ran out of memory (memory_mb %d)%s", s.name, s.cfg.MemoryMB, lastWords(stderr))}
		}
		return nil, &sdk.RequestError{Code: CodeTrap, Msg: fmt.Sprintf("module %s: instantiate: %s%s", s.name, firstLine(err), lastWords(stderr))}
	}
	stdout.reset()
	return &instance{
		mod:    mod,
		malloc: mod.ExportedFunction(exportMalloc),
		free:   mod.ExportedFunction(exportFree),
		score:  mod.ExportedFunction(exportScore),
		agg:    mod.ExportedFunction(exportAggregate),
		stdout: stdout,
		stderr: stderr,
	}, nil
}

func (in *instance) close(ctx context.Context) {
	_ = in.mod.Close(ctx) // the instance is being thrown away; nothing to report
}

// call copies input into the guest, runs fn on it and returns a copy of the
// output. Everything runs under one deadline, so a guest cannot stretch a
// call by stalling in malloc or free. Any error means the instance may be in
// a bad state, or is already closed, and must not be reused.
//
// Version 1 allocates the input with malloc and frees input and output
// after each call: four guest calls. Version 2 writes the input into a buffer
// the instance keeps, and the guest keeps its output until its next call:
// one guest call, unless the buffer must grow.
func (s *scorer) call(ctx context.Context, in *instance, fn api.Function, input []byte) ([]byte, error) {
	callCtx, cancel := s.callContext(ctx)
	defer cancel()
	in.stderr.reset()
	defer in.stdout.flush()
	defer in.stderr.flush()
	name := fn.Definition().Name()
	inPtr, err := s.inputBuffer(ctx, callCtx, in, uint32(len(input)))
	if err != nil {
		return nil, err
	}
	if !in.mod.Memory().Write(inPtr, input) {
		return nil, &sdk.RequestError{Code: CodeBadOutput,
			Msg: fmt.Sprintf("module %s: malloc(%d) returned %#x, outside its memory", s.name, len(input), inPtr)}
	}
	in.stack = [2]uint64{uint64(inPtr), uint64(len(input))}
	if err := fn.CallWithStack(callCtx, in.stack[:]); err != nil {
		return nil, s.classify(ctx, callCtx, in, name, err)
	}
	outPtr, outLen := uint32(in.stack[0]>>32), uint32(in.stack[0])
	if int64(outLen) > s.cfg.MaxOutputBytes {
		return nil, &sdk.RequestError{Code: CodeOutputTooLarge,
			Msg: fmt.Sprintf("module %s: %s returned %d bytes, over max_output_bytes %d", s.name, name, outLen, s.cfg.MaxOutputBytes)}
	}
	view, ok := in.mod.Memory().Read(outPtr, outLen)
	if !ok {
		return nil, &sdk.RequestError{Code: CodeBadOutput,
			Msg: fmt.Sprintf("module %s: %s returned %#x+%d, outside its memory", s.name, name, outPtr, outLen)}
	}
	// Read returns a view of guest memory, which the next call may change.
	out := append([]byte(nil), view...)
	if s.version == 1 {
		for _, p := range []uint32{outPtr, inPtr} {
			if err := s.callFree(ctx, callCtx, in, p); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// deadlineKey is the context key of a metered call's deadline.
type deadlineKey struct{}

// callContext bounds a guest call by the timeout option. A metered guest
// stops only in tick, which reads the deadline from the context, so it
// needs no timer: context.WithTimeout's, made and stopped for every call,
// cost some 1 µs of a 45 µs call. An unmetered one is stopped by wazero
// when the context is done, which takes the timer.
func (s *scorer) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if !s.metered {
		return context.WithTimeout(ctx, s.cfg.timeout)
	}
	return context.WithValue(ctx, deadlineKey{}, time.Now().Add(s.cfg.timeout)), func() {}
}

// timedOut reports whether a call's context has passed its deadline, the
// timer's or the one tick reads.
func timedOut(callCtx context.Context) bool {
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return true
	}
	d, ok := callCtx.Value(deadlineKey{}).(time.Time)
	return ok && !time.Now().Before(d)
}

// inputBuffer returns where to write an input of n bytes: a fresh malloc
// for version 1; for version 2 the instance's buffer, first replaced by a
// larger one if n does not fit.
func (s *scorer) inputBuffer(parent, callCtx context.Context, in *instance, n uint32) (uint32, error) {
	if s.version != 1 && n <= in.bufCap {
		return in.buf, nil
	}
	size := n
	if s.version != 1 {
		size = max(n, 2*in.bufCap, minInputBuffer)
		if in.bufCap > 0 {
			if err := s.callFree(parent, callCtx, in, in.buf); err != nil {
				return 0, err
			}
			in.buf, in.bufCap = 0, 0
		}
	}
	in.stack[0] = uint64(size)
	if err := in.malloc.CallWithStack(callCtx, in.stack[:]); err != nil {
		return 0, s.classify(parent, callCtx, in, exportMalloc, err)
	}
	p := uint32(in.stack[0])
	if s.version != 1 {
		in.buf, in.bufCap = p, size
	}
	return p, nil
}

func (s *scorer) callFree(parent, callCtx context.Context, in *instance, p uint32) error {
	in.stack[0] = uint64(p)
	if err := in.free.CallWithStack(callCtx, in.stack[:]); err != nil {
		return s.classify(parent, callCtx, in, exportFree, err)
	}
	return nil
}

// classify turns a failed guest call into the error recorded for the sample.
// Cancellation of the caller's own context is passed through unchanged: the
// run is stopping, and the sample was not at fault.
func (s *scorer) classify(parent, callCtx context.Context, in *instance, fn string, err error) error {
	if parent.Err() != nil {
		return fmt.Errorf("module %s: %s: %w", s.name, fn, context.Cause(parent))
	}
	if s.isClosed() {
		return fmt.Errorf("module %s: %s: scorer closed during the call", s.name, fn)
	}
	if timedOut(callCtx) {
		return &sdk.RequestError{Code: CodeTimeout, Msg: fmt.Sprintf("module %s: %s ran longer than the timeout %s", s.name, fn, s.cfg.timeout)}
	}
	s.glog.log.Debug("guest call failed", "export", fn, "error", err)
	words := lastWords(in.stderr)
	if s.outOfMemory(in) {
		return &sdk.RequestError{Code: CodeMemory, Msg: fmt.Sprintf("module %s: %s ran out of memory (memory at %d of %d MiB): %s%s",
			s.name, fn, in.mod.Memory().Size()>>20, s.cfg.MemoryMB, firstLine(err), words)}
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return &sdk.RequestError{Code: CodeTrap, Msg: fmt.Sprintf("module %s: %s exited with code %d%s", s.name, fn, exit.ExitCode(), words)}
	}
	return &sdk.RequestError{Code: CodeTrap, Msg: fmt.Sprintf("module %s: %s trapped: %s%s", s.name, fn, firstLine(err), words)}
}

// outOfMemory guesses whether a failure came from the memory limit. wazero
// refuses memory.grow past the limit without telling the host, so the signs
// are indirect: Go's runtime says "out of memory" before it exits, and a
// guest whose memory has reached the limit most likely failed to grow it.
func (s *scorer) outOfMemory(in *instance) bool {
	if saysOutOfMemory(in.stderr) {
		return true
	}
	mem := in.mod.Memory()
	return mem != nil && uint64(mem.Size()) >= uint64(s.cfg.MemoryMB)<<20
}

// saysOutOfMemory reports whether a guest's standard error says it ran out
// of memory, in the words of Go's runtime ("out of memory", "cannot
// allocate memory") or a C library's.
func saysOutOfMemory(w *outputWriter) bool {
	t := strings.ToLower(w.String())
	return strings.Contains(t, "out of memory") || strings.Contains(t, "cannot allocate memory")
}

// lastWords formats the start of what a guest wrote to standard error
// during the failed call, for an error message.
func lastWords(w *outputWriter) string {
	// The first paragraph is the message; a Go guest's goroutine dump
	// follows a blank line and is in the log.
	t, _, _ := strings.Cut(w.String(), "\n\n")
	if t == "" {
		return ""
	}
	const max = 1024
	if len(t) > max {
		t = t[:max] + "…"
	}
	return "\n" + t
}

// firstLine drops wazero's wasm stack trace from a trap error: the guest's
// own words say more, and the trace is logged.
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}
