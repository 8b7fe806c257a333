// Package wasm is the built-in "wasm" scorer: it runs a community scorer
// compiled to WebAssembly under wazero, sandboxed and with hard limits on
// memory, time per call and input and output size. The ABI a module
// implements is documented in sdk/wasm/README.md; sdk/wasm helps write one in
// Go. Both ABI versions are spoken: 1 (JSON) and 2 (sdk/wasm/wire's binary
// fields, one guest call per sample).
//
// Instances are pooled and reused from call to call (fresh_instance = true
// gives each call its own). A module that breaks a limit or traps costs
// only the sample it was scoring: that call returns a *sdk.RequestError
// (codes Code*), the instance is thrown away, and the next call gets a
// fresh one.
package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/hayloft/hayloft/sdk"
	abi "github.com/hayloft/hayloft/sdk/wasm"
	"github.com/hayloft/hayloft/sdk/wasm/wire"
)

// Name is the scorer's registered name.
const Name = "wasm"

// scorer hosts one module. It is safe for concurrent use: each call takes an
// instance from a pool for its own use, and at most GOMAXPROCS instances
// exist at once, since a guest call is pure computation.
type scorer struct {
	name  string // the module's file name, for logs and errors
	cfg   *config
	glog  *guestLogger
	rt    wazero.Runtime
	cache wazero.CompilationCache

	compiled wazero.CompiledModule
	// version is the module's ABI version, 1 or 2.
	version int32
	// metered says the module was rewritten to check its deadline itself
	// (meter.go); otherwise wazero's close-on-context-done stops it.
	metered bool

	slots chan struct{} // one token per live instance

	mu     sync.Mutex
	idle   []*instance
	closed bool

	// discarded counts instances thrown away after a failed call.
	discarded atomic.Int64
}

// aggregator is a scorer whose module exports aggregate.
type aggregator struct{ *scorer }

var (
	_ sdk.Scorer     = (*scorer)(nil)
	_ sdk.Aggregator = aggregator{}
)

// New loads, verifies and compiles the module named by opts and starts one
// instance to check its ABI version. The result implements sdk.Aggregator
// when the module exports aggregate, and io.Closer. Logs go to the hclog
// logger in ctx (hclog.WithContext), named after the module.
//
// The module is compiled here rather than in Provision because whether the
// scorer is an Aggregator depends on its exports. The compiled code is kept
// on disk (os.UserCacheDir()/hayloft/wazero), so it happens once per module.
func New(ctx context.Context, opts sdk.Options) (sdk.Scorer, error) {
	cfg, err := decodeConfig(opts)
	if err != nil {
		return nil, err
	}
	return build(ctx, cfg)
}

// build makes the scorer for a decoded config, an aggregator when the
// module exports aggregate.
func build(ctx context.Context, cfg *config) (sdk.Scorer, error) {
	s, err := newScorer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if s.compiled.ExportedFunctions()[exportAggregate] != nil {
		return aggregator{s}, nil
	}
	return s, nil
}

func newScorer(ctx context.Context, cfg *config) (_ *scorer, err error) {
	code, err := readModule(cfg)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(filepath.Base(cfg.Module), ".wasm")
	s := &scorer{
		name:  name,
		cfg:   cfg,
		glog:  newGuestLogger(hclog.FromContext(ctx).Named(name), time.Now),
		slots: make(chan struct{}, max(runtime.GOMAXPROCS(0), 1)),
	}
	s.cache, err = openCache(cfg.cacheDir)
	if err != nil {
		s.glog.log.Warn("compilation cache unavailable; compiling in memory", "error", err)
		s.cache = wazero.NewCompilationCache()
	}
	if metered, err := meter(code); err != nil {
		s.glog.log.Info("module not metered: stopped by close-on-context-done instead, which slows loops", "reason", err)
	} else if !cfg.unmetered {
		code, s.metered = metered, true
	}
	rc := wazero.NewRuntimeConfigCompiler().
		WithCompilationCache(s.cache).
		// Without either a looping guest hangs its goroutine for ever.
		WithCloseOnContextDone(!s.metered).
		WithMemoryLimitPages(uint32(cfg.MemoryMB) * 16)
	s.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, s.rt); err != nil {
		return nil, fmt.Errorf("module %s: wasi: %w", name, err)
	}
	_, err = s.rt.NewHostModuleBuilder("hayloft").
		NewFunctionBuilder().WithFunc(s.hostLog).Export("log").
		NewFunctionBuilder().WithGoFunction(api.GoFunc(s.tick), nil, nil).Export(tickName).
		Instantiate(ctx)
	if err != nil {
		return nil, fmt.Errorf("module %s: host module: %w", name, err)
	}
	s.compiled, err = s.rt.CompileModule(ctx, code)
	if err != nil {
		if strings.Contains(err.Error(), "pages") {
			return nil, sdk.Configf("memory_mb", "module %s: %v", cfg.Module, err)
		}
		return nil, sdk.Configf("module", "compile %s: %v", cfg.Module, err)
	}
	if err := checkExports(s.compiled); err != nil {
		return nil, sdk.Configf("module", "%s: %v", cfg.Module, err)
	}
	in, err := s.instantiate(ctx)
	if err != nil {
		// A module that cannot start is unusable, whatever the sample.
		if requestCode(err) == CodeMemory {
			return nil, sdk.Configf("memory_mb", "%v", err)
		}
		return nil, sdk.Configf("module", "%v", err)
	}
	if s.version, err = s.checkVersion(ctx, in); err != nil {
		in.close(ctx)
		return nil, sdk.Configf("module", "%s: %v", cfg.Module, err)
	}
	s.idle = append(s.idle, in)
	return s, nil
}

// openCache opens the on-disk compilation cache under dir, or under the
// user cache directory when dir is empty.
func openCache(dir string) (wazero.CompilationCache, error) {
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(base, "hayloft", "wazero")
	}
	return wazero.NewCompilationCacheWithDir(dir)
}

// checkExports verifies the exports the ABI requires, with their signatures,
// before anything runs.
func checkExports(m wazero.CompiledModule) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	want := []struct {
		name     string
		params   []api.ValueType
		results  []api.ValueType
		optional bool
	}{
		{exportVersion, nil, []api.ValueType{i32}, false},
		{exportMalloc, []api.ValueType{i32}, []api.ValueType{i32}, false},
		{exportFree, []api.ValueType{i32}, nil, false},
		{exportScore, []api.ValueType{i32, i32}, []api.ValueType{i64}, false},
		{exportAggregate, []api.ValueType{i32, i32}, []api.ValueType{i64}, true},
	}
	exports := m.ExportedFunctions()
	if len(m.ExportedMemories()) == 0 {
		return errors.New("exports no memory")
	}
	for _, w := range want {
		f := exports[w.name]
		if f == nil {
			if w.optional {
				continue
			}
			return fmt.Errorf("does not export %s (is it a reactor module built with -buildmode=c-shared?)", w.name)
		}
		if !sameTypes(f.ParamTypes(), w.params) || !sameTypes(f.ResultTypes(), w.results) {
			return fmt.Errorf("export %s has signature %s, want %s",
				w.name, signature(f.ParamTypes(), f.ResultTypes()), signature(w.params, w.results))
		}
	}
	return nil
}

// checkVersion returns the module's ABI version, which the host must speak.
// It is a guest call like any other, under the timeout: a module whose
// version export loops must not hold the host's start for ever.
func (s *scorer) checkVersion(ctx context.Context, in *instance) (int32, error) {
	callCtx, cancel := s.callContext(ctx)
	defer cancel()
	res, err := in.mod.ExportedFunction(exportVersion).Call(callCtx)
	if err != nil {
		if timedOut(callCtx) {
			return 0, fmt.Errorf("%s did not return within the timeout (%v)", exportVersion, s.cfg.timeout)
		}
		return 0, fmt.Errorf("%s: %w", exportVersion, err)
	}
	v := int32(res[0])
	if v < 1 || v > abi.ABIVersion {
		return 0, fmt.Errorf("ABI version %d is not supported (this host speaks versions 1 and %d)", v, abi.ABIVersion)
	}
	return v, nil
}

func requestCode(err error) string {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		return re.Code
	}
	return ""
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func signature(params, results []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, ", ")
	}
	return "(" + names(params) + ") -> (" + names(results) + ")"
}

// hostLog is the guest's one import, hayloft.log(ptr, len).
func (s *scorer) hostLog(_ context.Context, m api.Module, ptr, n uint32) {
	// Read at most one byte over the limit: enough for write to see that
	// the message was cut, without copying a guest's whole memory.
	msg, ok := m.Memory().Read(ptr, min(n, logMaxCallBytes+1))
	if !ok {
		s.glog.log.Warn("guest log call outside memory ignored", "ptr", ptr, "len", n)
		return
	}
	s.glog.write(hclog.Info, msg)
}

// tick is a metered guest's import, called when its fuel runs out: it ends
// the call once its deadline (callContext) has passed, its context is done
// or the scorer is closing. A
// panic is how a host function aborts a guest call in wazero; the call
// returns it as an error, which classify names from the contexts.
func (s *scorer) tick(ctx context.Context, _ []uint64) {
	if ctx.Err() != nil {
		panic(fmt.Errorf("guest stopped: %w", context.Cause(ctx)))
	}
	if d, ok := ctx.Value(deadlineKey{}).(time.Time); ok && !time.Now().Before(d) {
		panic(fmt.Errorf("guest stopped: %w", context.DeadlineExceeded))
	}
	if s.isClosed() {
		panic(errors.New("guest stopped: scorer closed"))
	}
}

// acquire returns an instance for the caller's exclusive use.
func (s *scorer) acquire(ctx context.Context) (*instance, error) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("module %s: waiting for an instance: %w", s.name, context.Cause(ctx))
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.slots
		return nil, fmt.Errorf("module %s: scorer closed", s.name)
	}
	if n := len(s.idle); n > 0 {
		in := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		return in, nil
	}
	s.mu.Unlock()
	in, err := s.instantiate(ctx)
	if err != nil {
		<-s.slots
		return nil, err
	}
	return in, nil
}

// release returns a healthy instance to the pool.
func (s *scorer) release(in *instance) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		in.close(context.Background())
	} else {
		s.idle = append(s.idle, in)
		s.mu.Unlock()
	}
	<-s.slots
}

// discard closes an instance that failed; the next acquire starts a new one.
func (s *scorer) discard(in *instance) {
	in.close(context.Background())
	s.discarded.Add(1)
	<-s.slots
}

// run calls fn (an export name) with input on a pooled instance.
func (s *scorer) run(ctx context.Context, export string, input []byte) ([]byte, error) {
	if err := s.checkInput(export, len(input)); err != nil {
		return nil, err
	}
	in, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	fn := in.score
	if export == exportAggregate {
		fn = in.agg
	}
	out, err := s.call(ctx, in, fn, input)
	switch {
	case err != nil:
		s.discard(in)
		return nil, err
	case in.mod.IsClosed():
		// An unmetered module is closed by wazero when its call's context
		// ends, which can happen just as the call returns: the answer
		// stands, the instance goes.
		s.discard(in)
	case s.cfg.FreshInstance:
		in.close(context.Background())
		<-s.slots
	default:
		s.release(in)
	}
	return out, nil
}

func (s *scorer) checkInput(export string, n int) error {
	if int64(n) > s.cfg.MaxInputBytes {
		return &sdk.RequestError{Code: CodeInputTooLarge,
			Msg: fmt.Sprintf("module %s: %s input is %d bytes, over max_input_bytes %d", s.name, export, n, s.cfg.MaxInputBytes)}
	}
	return nil
}

func (s *scorer) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// scoreOutput is the JSON a module's score returns.
type scoreOutput struct {
	Value   *float64       `json:"value"`
	Invalid bool           `json:"invalid"`
	Details map[string]any `json:"details"`
	Stats   []float64      `json:"stats"`
	Error   string         `json:"error"`
}

// ReadsSample implements sdk.SampleReader: the kernel sends the context
// only to a module that asked for it (include_context).
func (s *scorer) ReadsSample() bool { return s.cfg.IncludeContext }

// Score implements sdk.Scorer.
func (s *scorer) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	input, err := s.encode(nil, req)
	if err != nil {
		return nil, err
	}
	raw, err := s.run(ctx, exportScore, input)
	if err != nil {
		return nil, err
	}
	return s.response(req.Sample.ID, raw)
}

// encode appends a request's input, in the module's ABI version, to b.
func (s *scorer) encode(b []byte, req *sdk.ScoreRequest) ([]byte, error) {
	if req == nil || req.Sample == nil {
		return nil, &sdk.RequestError{Code: sdk.CodeBadRequest, Msg: "score request without a sample"}
	}
	sample := *req.Sample
	if !s.cfg.IncludeContext {
		sample.Context = ""
	}
	var err error
	if s.version == 1 {
		var input []byte
		input, err = json.Marshal(abi.Input{
			Sample:     sample,
			Prediction: req.Prediction,
			References: req.Sample.Targets,
			Options:    s.cfg.Options,
		})
		b = append(b, input...)
	} else {
		b, err = wire.AppendInput(b, &sample, req.Prediction, s.cfg.Options)
	}
	if err != nil {
		return nil, fmt.Errorf("module %s: encode sample %q: %w", s.name, req.Sample.ID, err)
	}
	return b, nil
}

// response decodes a score output, in the module's ABI version.
func (s *scorer) response(id string, raw []byte) (*sdk.ScoreResponse, error) {
	var out wire.Output
	var err error
	if s.version == 1 {
		var o scoreOutput
		if err = decodeOutput(raw, &o); err == nil {
			out = wire.Output{Invalid: o.Invalid, Details: o.Details, Stats: o.Stats, Error: o.Error}
			if o.Value != nil {
				out.Value, out.HasValue = *o.Value, true
			}
		}
	} else {
		out, err = wire.DecodeOutput(raw)
	}
	if err != nil {
		return nil, &sdk.RequestError{Code: CodeBadOutput, Msg: fmt.Sprintf("module %s: score output for sample %q: %v", s.name, id, err)}
	}
	if out.Error != "" {
		return nil, &sdk.RequestError{Code: CodeGuestError, Msg: fmt.Sprintf("module %s: sample %q: %s", s.name, id, out.Error)}
	}
	if !out.HasValue && !out.Invalid {
		return nil, &sdk.RequestError{Code: CodeBadOutput, Msg: fmt.Sprintf("module %s: score output for sample %q has no value", s.name, id)}
	}
	return &sdk.ScoreResponse{Value: out.Value, Invalid: out.Invalid, Details: out.Details, Stats: out.Stats}, nil
}

// aggregateOutput is the JSON a module's aggregate returns.
type aggregateOutput struct {
	Value   *float64       `json:"value"`
	N       *int           `json:"n"`
	Invalid *int           `json:"invalid"`
	CILow   *float64       `json:"ci_low"`
	CIHigh  *float64       `json:"ci_high"`
	Details map[string]any `json:"details"`
	Error   string         `json:"error"`
}

// Aggregate implements sdk.Aggregator. Sample details are not sent, to keep
// the input within max_input_bytes for large evals: an aggregate reads
// values, invalid flags and stats.
func (a aggregator) Aggregate(ctx context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	s := a.scorer
	in := abi.AggregateInput{Scores: make([]abi.Score, len(req.Scores)), Options: s.cfg.Options}
	n, invalid := 0, 0
	for i, sc := range req.Scores {
		if sc == nil {
			return nil, &sdk.RequestError{Code: sdk.CodeBadRequest, Msg: fmt.Sprintf("aggregate: score %d is nil", i)}
		}
		in.Scores[i] = abi.Score{Value: sc.Value, Invalid: sc.Invalid, Stats: sc.Stats}
		if sc.Invalid {
			invalid++
		} else {
			n++
		}
	}
	input, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("module %s: encode aggregate input: %w", s.name, err)
	}
	raw, err := s.run(ctx, exportAggregate, input)
	if err != nil {
		return nil, err
	}
	var out aggregateOutput
	if err := decodeOutput(raw, &out); err != nil {
		return nil, &sdk.RequestError{Code: CodeBadOutput, Msg: fmt.Sprintf("module %s: aggregate output: %v", s.name, err)}
	}
	if out.Error != "" {
		return nil, &sdk.RequestError{Code: CodeGuestError, Msg: fmt.Sprintf("module %s: aggregate: %s", s.name, out.Error)}
	}
	if out.Value == nil {
		return nil, &sdk.RequestError{Code: CodeBadOutput, Msg: fmt.Sprintf("module %s: aggregate output has no value", s.name)}
	}
	resp := &sdk.AggregateResponse{Value: *out.Value, N: n, Invalid: invalid, CILow: *out.Value, CIHigh: *out.Value, Details: out.Details}
	if out.N != nil {
		resp.N = *out.N
	}
	if out.Invalid != nil {
		resp.Invalid = *out.Invalid
	}
	if out.CILow != nil {
		resp.CILow = *out.CILow
	}
	if out.CIHigh != nil {
		resp.CIHigh = *out.CIHigh
	}
	return resp, nil
}

// decodeOutput decodes a guest's JSON object. Unknown fields are allowed, so
// that a newer module can add fields an older host ignores.
func decodeOutput(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w (output starts %q)", err, abbreviate(string(raw), 80))
	}
	return nil
}

// Close releases every instance, the runtime and the compilation cache.
// Calls in flight fail; later calls return an error.
func (s *scorer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	ctx := context.Background()
	for _, in := range idle {
		in.close(ctx)
	}
	var errs []error
	if s.rt != nil {
		errs = append(errs, s.rt.Close(ctx))
	}
	if s.cache != nil {
		errs = append(errs, s.cache.Close(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("module %s: close: %w", s.name, err)
	}
	return nil
}
