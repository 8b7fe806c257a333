package wasm

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/wasm/wire"
)

// Why the scorer meters a module, or else sets WithCloseOnContextDone:
// without either a looping guest ignores its context, and the calling
// goroutine spins for ever. The test proves it by leaving a goroutine
// burning a core until the process exits, so it runs only when asked:
// HAYLOFT_WASM_HANG_TEST=1.
func TestRunawayGuestHangsWithoutCloseOnContextDone(t *testing.T) {
	if os.Getenv("HAYLOFT_WASM_HANG_TEST") == "" {
		t.Skip("leaves a spinning goroutine behind; set HAYLOFT_WASM_HANG_TEST=1 to run")
	}
	path, _ := module(t, "hostile")
	code, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler()) // no WithCloseOnContextDone
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	if _, err := rt.NewHostModuleBuilder("hayloft").NewFunctionBuilder().
		WithFunc(func(context.Context, api.Module, uint32, uint32) {}).Export("log").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	compiled, err := rt.CompileModule(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatal(err)
	}
	input, err := wire.AppendInput(nil, &sdk.Sample{ID: "x"}, "loop", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := mod.ExportedFunction(exportMalloc).Call(ctx, uint64(len(input)))
	if err != nil {
		t.Fatal(err)
	}
	mod.Memory().Write(uint32(res[0]), input)

	const timeout = 200 * time.Millisecond
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := mod.ExportedFunction(exportScore).Call(callCtx, res[0], uint64(len(input)))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the guest stopped (%v): wazero now interrupts loops without close-on-context-done", err)
	case <-time.After(10 * timeout):
		t.Logf("the call still runs %v after its %v deadline: the goroutine is lost", 10*timeout, timeout)
	}
}
