package wasm

// The pool, instance reuse and the host's safety. Modules are
// hand-assembled with the helpers of meter_test.go (cat, vec, sec, name,
// leb); the Go guests are the ones TestMain builds.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/wasm/wire"
)

// rawABI describes a hand-assembled version 2 module: exports memory,
// hayloft_abi_version, malloc (always 65536), free (no-op) and score, and one
// mutable i32 global (index 0) starting at 0.
type rawABI struct {
	version []byte // code of hayloft_abi_version, () -> i32
	score   []byte // code of score, (i32, i32) -> i64
	pages   uint32
	dataAt  uint32
	data    []byte
	init    []byte // code of _initialize, () -> (); none if nil
}

func i32c(v int32) []byte { return appendS32([]byte{0x41}, v) }
func i64c(v int64) []byte { return appendSLEB([]byte{0x42}, v) }

func (m rawABI) bytes() []byte {
	if m.version == nil {
		m.version = i32c(2)
	}
	if m.pages == 0 {
		m.pages = 32
	}
	types := vec(
		[]byte{0x60, 0, 1, 0x7F},             // () -> i32
		[]byte{0x60, 1, 0x7F, 1, 0x7F},       // (i32) -> i32
		[]byte{0x60, 1, 0x7F, 0},             // (i32) -> ()
		[]byte{0x60, 2, 0x7F, 0x7F, 1, 0x7E}, // (i32, i32) -> i64
		[]byte{0x60, 0, 0},                   // () -> ()
	)
	fs := [][]byte{leb(0), leb(1), leb(2), leb(3)}
	if m.init != nil {
		fs = append(fs, leb(4))
	}
	funcs := vec(fs...)
	mem := vec(cat([]byte{0}, leb(m.pages)))
	globals := vec(cat([]byte{0x7F, 1}, i32c(0), []byte{0x0B}))
	ex := [][]byte{
		cat(name("memory"), []byte{2}, leb(0)),
		cat(name(exportVersion), []byte{0}, leb(0)),
		cat(name(exportMalloc), []byte{0}, leb(1)),
		cat(name(exportFree), []byte{0}, leb(2)),
		cat(name(exportScore), []byte{0}, leb(3)),
	}
	bodies := [][]byte{body(m.version), body(i32c(65536)), body(), body(m.score)}
	if m.init != nil {
		ex = append(ex, cat(name("_initialize"), []byte{0}, leb(4)))
		bodies = append(bodies, body(m.init))
	}
	exports := vec(ex...)
	code := vec(bodies...)
	out := cat([]byte("\x00asm\x01\x00\x00\x00"),
		sec(secType, types), sec(secFunction, funcs), sec(secMemory, mem),
		sec(secGlobal, globals), sec(secExport, exports), sec(secCode, code))
	if len(m.data) > 0 {
		seg := cat(leb(0), i32c(int32(m.dataAt)), []byte{0x0B}, leb(uint32(len(m.data))), m.data)
		out = cat(out, sec(secData, vec(seg)))
	}
	return out
}

// rawConfig writes code to a temporary file and returns a decoded config for it.
func rawConfig(t *testing.T, code []byte, opts map[string]any) *config {
	t.Helper()
	p := filepath.Join(t.TempDir(), "raw.wasm")
	if err := os.WriteFile(p, code, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(code)
	o := map[string]any{"module": p, "sha256": hex.EncodeToString(sum[:])}
	for k, v := range opts {
		o[k] = v
	}
	cfg, err := decodeConfig(sdk.MustOptions(o))
	if err != nil {
		t.Fatal(err)
	}
	cfg.cacheDir = t.TempDir()
	return cfg
}

func openRaw(t *testing.T, code []byte, opts map[string]any) *harness {
	t.Helper()
	sc, err := build(quiet, rawConfig(t, code, opts))
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	s := sc.(*scorer)
	t.Cleanup(func() { s.Close() })
	return &harness{Scorer: sc, s: s}
}

// New runs hayloft_abi_version under the timeout, like any guest call: a
// module whose version export loops fails New with a config error instead
// of holding the host's start for ever, metered or not (timeout 200ms).
func TestVersionExportIsBounded(t *testing.T) {
	loop := []byte{0x03, 0x40, 0x0C, 0x00, 0x0B, 0x00} // loop br 0 end unreachable
	for _, unmetered := range []bool{false, true} {
		t.Run(fmt.Sprintf("unmetered=%v", unmetered), func(t *testing.T) {
			cfg := rawConfig(t, rawABI{version: loop, score: i64c(0)}.bytes(), map[string]any{"timeout": "200ms"})
			cfg.unmetered = unmetered
			ctx, cancel := context.WithCancel(quiet)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				sc, err := build(ctx, cfg)
				if err == nil {
					sc.(*scorer).Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				var ce *sdk.ConfigError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), "did not return within the timeout") {
					t.Errorf("New: %v, want a config error: the version export timed out", err)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("New still running 5s after a 200ms timeout: hayloft_abi_version is unbounded")
				cancel() // unstick the guest (tick / close-on-context-done see it)
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("guest not stopped even by cancellation")
				}
			}
		})
	}
}

// counterModule's score adds one to its global and returns it as the value:
// a module that is not pure.
func counterModule() []byte {
	const at = 1 << 20
	return rawABI{
		score: cat(
			[]byte{0x23, 0}, i32c(1), []byte{0x6A, 0x24, 0}, // global0 += 1
			i32c(at+2), []byte{0x23, 0, 0xB8, 0x39, 0, 0}, // f64.store(at+2, f64(global0))
			i64c(int64(at)<<32|10),
		),
		data:   []byte{wire.OutValue, wire.TagNumber},
		dataAt: at,
	}.bytes()
}

// fresh_instance gives every call an instance of its own; pooled calls share
// one and see each other's state (by design).
func TestFreshInstanceIsolation(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		t.Run(fmt.Sprintf("fresh=%v", fresh), func(t *testing.T) {
			h := openRaw(t, counterModule(), map[string]any{"fresh_instance": fresh})
			var got []float64
			for range 4 {
				r, err := h.score("x")
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, r.Value)
			}
			want := []float64{1, 2, 3, 4}
			if fresh {
				want = []float64{1, 1, 1, 1}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("values %v, want %v", got, want)
			}
		})
	}
}

// Concurrency with a stateful module: every call gets a distinct counter
// value from its instance, and the idle pool never exceeds its bound.
func TestPoolBoundedUnderConcurrency(t *testing.T) {
	h := openRaw(t, counterModule(), nil)
	done := make(chan error, 64)
	for range 64 {
		go func() {
			_, err := h.score("x")
			done <- err
		}()
	}
	for range 64 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	h.s.mu.Lock()
	idle := len(h.s.idle)
	h.s.mu.Unlock()
	if idle > cap(h.s.slots) || len(h.s.slots) != 0 {
		t.Errorf("%d idle, %d slots held, cap %d", idle, len(h.s.slots), cap(h.s.slots))
	}
}

// A pure Go guest scores the same with pooled and fresh instances, however
// many calls a pooled instance has served.
func TestDeterminismPooledVsFresh(t *testing.T) {
	pooled := open(t, "coverage", nil)
	fresh := open(t, "coverage", map[string]any{"fresh_instance": true})
	preds := []string{"A quick fox", "FOX, dog; quick!", "宝玉", "the", strings.Repeat("lazy dog ", 50)}
	ref := "The quick brown fox jumps over the lazy dog 贾宝玉的通灵宝玉"
	for round := range 20 {
		for _, p := range preds {
			a, errA := pooled.score(p, ref)
			b, errB := fresh.score(p, ref)
			if fmt.Sprint(errA) != fmt.Sprint(errB) {
				t.Fatalf("round %d %q: errors %v vs %v", round, p, errA, errB)
			}
			if errA == nil && (a.Value != b.Value || a.Invalid != b.Invalid || fmt.Sprint(a.Details) != fmt.Sprint(b.Details)) {
				t.Fatalf("round %d %q: pooled %+v, fresh %+v", round, p, a, b)
			}
		}
	}
}

// A module whose _initialize loops (or grows memory to the limit) is stopped
// by the timeout at New, metered or not.
func TestInitializeIsBounded(t *testing.T) {
	loop := []byte{0x03, 0x40, 0x0C, 0x00, 0x0B}
	growMax := []byte{0x41, 0x80, 0x80, 0x04, 0x40, 0x00, 0x1A} // memory.grow(65536); drop
	for _, tc := range []struct {
		name string
		init []byte
	}{{"loop", loop}, {"grow", growMax}} {
		for _, unmetered := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/unmetered=%v", tc.name, unmetered), func(t *testing.T) {
				cfg := rawConfig(t, rawABI{init: tc.init, score: i64c(0)}.bytes(), map[string]any{"timeout": "200ms"})
				cfg.unmetered = unmetered
				start := time.Now()
				sc, err := build(quiet, cfg)
				if err == nil {
					sc.(*scorer).Close()
				}
				t.Logf("%v after %v", err, time.Since(start))
				if d := time.Since(start); d > 3*time.Second {
					t.Errorf("New took %v with a 200ms timeout", d)
				}
				if tc.name == "loop" && err == nil {
					t.Error("a looping _initialize was accepted")
				}
			})
		}
	}
}
