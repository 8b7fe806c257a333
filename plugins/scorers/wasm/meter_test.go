package wasm

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/hayloft/hayloft/sdk"
)

// Every module the tests build is metered, not left to the slower
// close-on-context-done, and so the other tests run metered modules.
func TestTestModulesAreMetered(t *testing.T) {
	for name := range testModules {
		t.Run(name, func(t *testing.T) {
			path, _ := module(t, name)
			code, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := meter(code); err != nil {
				t.Fatalf("meter: %v", err)
			}
			if name == "badabi" {
				return // the host refuses it for its version
			}
			if h := open(t, name, nil); !h.s.metered {
				t.Error("the scorer runs the module unmetered")
			}
		})
	}
}

// A module left unmetered, as one the rewrite refuses is, runs under
// close-on-context-done: a loop still ends at its deadline, and close still
// stops a call in flight.
func TestUnmeteredModuleIsStillStopped(t *testing.T) {
	path, sum := module(t, "hostile")
	cfg, err := decodeConfig(sdk.MustOptions(map[string]any{"module": path, "sha256": sum, "timeout": "300ms"}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.cacheDir, cfg.unmetered = testCacheDir, true
	sc, err := build(quiet, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{Scorer: sc, s: sc.(*scorer)}
	t.Cleanup(func() { h.s.Close() })
	if h.s.metered {
		t.Fatal("metered")
	}
	start := time.Now()
	if _, err := h.score("loop"); requestCode(err) != CodeTimeout {
		t.Fatalf("loop: %v, want %s", err, CodeTimeout)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the loop ran %v past a 300ms timeout", d)
	}
	requireDiscardedThenRecovers(t, h, true)
}

// In the rewritten Go modules, every function begins with a fuel check, or
// with a lead-in (constant-time instructions) and then a loop, and every
// loop header is followed by one: read back from the output, not taken from
// the rewrite's word.
func TestMeteredCodeChecksEveryLoop(t *testing.T) {
	for _, name := range []string{"coverage", "hostile"} {
		path, _ := module(t, name)
		code, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out, err := meter(code)
		if err != nil {
			t.Fatal(err)
		}
		m := &meterer{fuelGlobal: 1 << 30} // walk checks nothing against it
		var fuel []byte                    // global.get of the fuel global, from the first check
		r := reader{b: out, off: 8}
		for r.more() {
			id, size := r.byte(), r.u32()
			body := r.bytes(size)
			if id != secCode {
				continue
			}
			br := reader{b: body}
			n := br.u32()
			loops, leads := 0, 0
			for i := range n {
				fr := reader{b: br.bytes(br.u32())}
				for range fr.u32() {
					fr.u32()
					fr.byte()
				}
				fcode := fr.rest()
				if fuel == nil {
					fuel = fcode[:bytes.IndexByte(fcode, 0x42)] // up to i64.const cost
				}
				leadIn := !bytes.HasPrefix(fcode, fuel) // then a loop must come first
				_, err := m.walk(fcode, func(op, _ uint32, at, next int) {
					if leadIn && !leadInOp(op) {
						leadIn = false
						if op != 0x03 {
							t.Fatalf("%s: function %d begins with neither a fuel check nor a lead-in and a loop: % x", name, i, fcode[:min(16, len(fcode))])
						}
						leads++
					}
					if op == 0x03 {
						loops++
						if !bytes.HasPrefix(fcode[next:], fuel) {
							t.Errorf("%s: function %d: loop at %d has no fuel check", name, i, at)
						}
					}
				})
				if err != nil {
					t.Fatalf("%s: function %d: %v", name, i, err)
				}
			}
			if loops < 1000 {
				t.Errorf("%s: %d loops checked; a Go module has thousands", name, loops)
			}
			if leads < int(n)/2 {
				t.Errorf("%s: %d of %d functions check at their first loop only; most of a Go module's should", name, leads, n)
			}
		}
	}
}

// leadInOp is leadIn, restated: what may precede a function's first loop
// when the rewrite leaves out its entry check.
func leadInOp(op uint32) bool {
	switch op {
	case 0x02, 0x20, 0x21, 0x22, 0x23, 0x41, 0x42:
		return true
	}
	return false
}

// Hand-assembled modules, built with a few helpers that write the binary
// format.

func leb(v uint32) []byte { return appendU32(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func vec(items ...[]byte) []byte { return cat(leb(uint32(len(items))), cat(items...)) }

func sec(id byte, body []byte) []byte { return cat([]byte{id}, leb(uint32(len(body))), body) }

func name(s string) []byte { return cat(leb(uint32(len(s))), []byte(s)) }

// body is a function body without locals.
func body(code ...[]byte) []byte {
	b := cat(leb(0), cat(code...), []byte{0x0B})
	return cat(leb(uint32(len(b))), b)
}

func call(i uint32) []byte { return cat([]byte{0x10}, leb(i)) }

const chainDepth = 40 // 2^40 calls: hours, without a single loop

// pathological is a module whose exports each run for ever, or as good as,
// and some that check that the rewrite kept every function index right:
//
//	import env.f                      function 0
//	spin:   loop br 0                 function 1
//	chain0…chain39: call the next twice, no loop at all   functions 2…41
//	big:    a loop around that many additions                function 42
//	seven:  i32.const 7                                   function 43
//	answer: call env.f; call_indirect table[0] (seven); add the global's
//	        call_indirect through ref.func seven          function 44
//	start:  call env.f                                    function 45
//	fill:   a loop filling all 256 pages of memory        function 46
func pathological(additions int) []byte {
	const (
		fSpin   = 1
		fChain  = 2
		fBig    = fChain + chainDepth
		fSeven  = fBig + 1
		fAnswer = fSeven + 1
		fStart  = fAnswer + 1
		fFill   = fStart + 1
	)
	types := vec([]byte{0x60, 0, 0}, []byte{0x60, 0, 1, 0x7F})
	imports := vec(cat(name("env"), name("f"), []byte{0}, leb(0)))
	var funcs [][]byte
	var bodies [][]byte
	add := func(typ uint32, b []byte) {
		funcs = append(funcs, leb(typ))
		bodies = append(bodies, b)
	}
	add(0, body([]byte{0x03, 0x40, 0x0C, 0x00, 0x0B})) // spin
	for i := range chainDepth {
		if i == chainDepth-1 {
			add(0, body())
			continue
		}
		next := uint32(fChain + i + 1)
		add(0, body(call(next), call(next)))
	}
	var sum [][]byte
	for range additions {
		sum = append(sum, []byte{0x20, 0, 0x41, 1, 0x6A, 0x21, 0}) // local.get 0; i32.const 1; i32.add; local.set 0
	}
	bigCode := cat([]byte{0x03, 0x40}, cat(sum...), []byte{0x0C, 0x00, 0x0B})
	bigBody := cat(vec(cat(leb(1), []byte{0x7F})), bigCode, []byte{0x0B})
	add(0, cat(leb(uint32(len(bigBody))), bigBody))
	add(1, body([]byte{0x41, 7}))
	add(1, body(call(0),
		[]byte{0x41, 0, 0x11, 1, 0},       // i32.const 0; call_indirect type 1 table 0
		[]byte{0x41, 0, 0x25, 1},          // i32.const 0; table.get 1 (filled below)
		[]byte{0x1A},                      // drop
		[]byte{0x23, 0, 0x1A},             // global.get 0; drop
		[]byte{0x41, 0, 0x11, 1, 0, 0x6A}, // again, and add: 14
	))
	add(0, body(call(0)))
	add(0, body([]byte{0x03, 0x40, 0x41, 0, 0x41, 0, 0x41, 0x80, 0x80, 0x80, 0x08, 0xFC, 11, 0, 0x0C, 0, 0x0B})) // loop: memory.fill(0, 0, 16 MiB)
	tables := vec([]byte{0x70, 0, 1}, []byte{0x70, 0, 1})
	globals := vec(cat([]byte{0x70, 0}, []byte{0xD2}, leb(fSeven), []byte{0x0B}))
	exports := vec(
		cat(name("spin"), []byte{0}, leb(fSpin)),
		cat(name("chain"), []byte{0}, leb(fChain)),
		cat(name("big"), []byte{0}, leb(fBig)),
		cat(name("answer"), []byte{0}, leb(fAnswer)),
		cat(name("fill"), []byte{0}, leb(fFill)),
	)
	elems := vec(
		cat(leb(0), []byte{0x41, 0, 0x0B}, vec(leb(fSeven))),                                                        // table 0, by index
		cat(leb(6), leb(1), []byte{0x41, 0, 0x0B}, []byte{0x70}, vec(cat([]byte{0xD2}, leb(fSeven), []byte{0x0B}))), // table 1, by expression
	)
	return cat([]byte("\x00asm\x01\x00\x00\x00"),
		sec(secType, types), sec(secImport, imports), sec(secFunction, vec(funcs...)),
		sec(secTable, tables), sec(secMemory, vec([]byte{0, 0x80, 2})), sec(secGlobal, globals), sec(secExport, exports),
		sec(secStart, leb(fStart)), sec(secElement, elems), sec(secCode, vec(bodies...)),
		sec(secCustom, cat(name("name"), []byte{1, 2, 3})))
}

// meteredRuntime instantiates code, metered, in a runtime without
// close-on-context-done, with a tick like the scorer's.
func meteredRuntime(t *testing.T, code []byte, envCalls *atomic.Int64) api.Module {
	t.Helper()
	metered, err := meter(code)
	if err != nil {
		t.Fatalf("meter: %v", err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	t.Cleanup(func() { rt.Close(ctx) })
	tick := func(ctx context.Context, _ []uint64) {
		if ctx.Err() != nil {
			panic(errors.New("stopped"))
		}
	}
	if _, err := rt.NewHostModuleBuilder(tickModule).NewFunctionBuilder().WithGoFunction(api.GoFunc(tick), nil, nil).Export(tickName).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().WithFunc(func() { envCalls.Add(1) }).Export("f").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, metered, wazero.NewModuleConfig())
	if err != nil {
		t.Fatalf("instantiate the metered module: %v", err)
	}
	return mod
}

// A metered guest stops within its deadline however it avoids loops, and
// the rewrite keeps calls, tables, globals and the start function right.
func TestMeterStopsRunawayGuests(t *testing.T) {
	var envCalls atomic.Int64
	mod := meteredRuntime(t, pathological(20000), &envCalls)
	if envCalls.Load() != 1 {
		t.Errorf("start function called env.f %d times, want 1", envCalls.Load())
	}
	res, err := mod.ExportedFunction("answer").Call(context.Background())
	if err != nil || res[0] != 14 || envCalls.Load() != 2 {
		t.Fatalf("answer = %v, %v, env.f calls %d; want 14, nil, 2", res, err, envCalls.Load())
	}
	for _, export := range []string{"spin", "chain", "big", "fill"} {
		t.Run(export, func(t *testing.T) {
			const timeout = 100 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			_, err := mod.ExportedFunction(export).Call(ctx)
			if err == nil || !strings.Contains(err.Error(), "stopped") {
				t.Fatalf("error %v, want the tick's", err)
			}
			// Generous for a loaded machine; unmetered, these run for hours.
			if d := time.Since(start); d > 20*timeout {
				t.Errorf("stopped after %v, deadline %v", d, timeout)
			}
		})
	}
}

// The rewrite refuses what it does not understand, with an error and
// without a panic.
func TestMeterRefuses(t *testing.T) {
	head := []byte("\x00asm\x01\x00\x00\x00")
	fn := func(code ...byte) []byte {
		return cat(head, sec(secType, vec([]byte{0x60, 0, 0})), sec(secFunction, vec(leb(0))), sec(secCode, vec(body(code))))
	}
	cases := []struct {
		name string
		code []byte
		want string
	}{
		{"not wasm", []byte("not wasm"), "not a version 1"},
		{"section past the end", cat(head, []byte{secType, 50, 0}), "truncated"},
		{"unknown section", cat(head, sec(99, nil)), "unknown section 99"},
		{"unknown opcode", fn(0x06, 0x40), "opcode 0x6"},
		{"unknown prefixed opcode", fn(0xFC, 99), "opcode 0xfc 99"},
		{"block not ended", fn(0x02, 0x40), "does not end"},
		{"overlong LEB128", fn(0x41, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), "too long"},
		{"typed reference local", cat(head, sec(secType, vec([]byte{0x60, 0, 0})), sec(secFunction, vec(leb(0))),
			sec(secCode, vec(cat(leb(5), []byte{1, 1, 0x63, 0x70, 0x0B})))), "value type 0x63"},
		// Valid once the rewrite adds the fuel global: it must not let
		// the guest refill its own fuel.
		{"global past the module's", fn(0x42, 0, 0x24, 0), "global index 0 out of range"},
		{"64-bit memory", cat(head, sec(secMemory, vec([]byte{4, 1}))), "64-bit memory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := meter(tc.code)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// A corrupted module, truncated or with bytes changed, is metered or
// refused, never a panic (FuzzMeter explores further).
func TestMeterSurvivesCorruption(t *testing.T) {
	good := pathological(3)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		b := bytes.Clone(good)
		if i%3 == 0 {
			b = b[:rng.IntN(len(b))]
		} else {
			for range 1 + rng.IntN(4) {
				b[8+rng.IntN(len(b)-8)] = byte(rng.Uint32())
			}
		}
		_, _ = meter(b)
	}
}

// Whatever the bytes, meter returns a module or an error, never a panic.
func FuzzMeter(f *testing.F) {
	f.Add(pathological(3))
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, code []byte) {
		out, err := meter(code)
		if err == nil && !bytes.HasPrefix(out, []byte("\x00asm")) {
			t.Fatalf("output %q", out[:min(8, len(out))])
		}
	})
}

// A function that opens with a lead-in and a loop is checked at the loop
// only, and that check charges the whole function: what follows the loop
// runs once per entry and is paid for there. One that opens otherwise keeps
// its entry check.
func TestMeterLeadLoop(t *testing.T) {
	head := []byte("\x00asm\x01\x00\x00\x00")
	tail := bytes.Repeat([]byte{0x01}, 6400) // nops: 100 units of code after the loop
	for _, tc := range []struct {
		name       string
		code       []byte
		entryCheck bool
	}{
		// block; loop; end; end
		{"lead-in then loop", cat([]byte{0x02, 0x40, 0x03, 0x40, 0x0B, 0x0B}, tail), false},
		// nop; loop; end: a nop is not a lead-in
		{"work before the loop", cat([]byte{0x01, 0x03, 0x40, 0x0B}, tail), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod := cat(head, sec(secType, vec([]byte{0x60, 0, 0})), sec(secFunction, vec(leb(0))), sec(secCode, vec(body(tc.code))))
			out, err := meter(mod)
			if err != nil {
				t.Fatal(err)
			}
			var fcode []byte
			for r := (reader{b: out, off: 8}); r.more(); {
				id, size := r.byte(), r.u32()
				b := r.bytes(size)
				if id != secCode {
					continue
				}
				br := reader{b: b}
				br.u32()
				fr := reader{b: br.bytes(br.u32())}
				for range fr.u32() {
					fr.u32()
					fr.byte()
				}
				fcode = fr.rest()
			}
			if got := len(fcode) > 0 && fcode[0] == 0x23; got != tc.entryCheck { // global.get: a check
				t.Fatalf("entry check %v, want %v: % x", got, tc.entryCheck, fcode[:min(24, len(fcode))])
			}
			if tc.entryCheck {
				return
			}
			// After block and loop: global.get fuel; i64.const cost.
			cr := reader{b: fcode, off: 4}
			if cr.byte() != 0x23 {
				t.Fatalf("no check after the loop: % x", fcode[:min(24, len(fcode))])
			}
			cr.u32()
			if cr.byte() != 0x42 {
				t.Fatalf("no cost after the fuel's global.get: % x", fcode[:min(24, len(fcode))])
			}
			whole := len(tc.code) + 1 // and the function's end
			if got, want := cr.leb(10), appendS32(nil, int32(1+whole/meterBytesPerUnit)); !bytes.Equal(got, want) {
				t.Errorf("the loop's check charges % x, want % x (the whole function)", got, want)
			}
		})
	}
}
