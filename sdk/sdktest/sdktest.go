// Package sdktest runs a hayloft component over a real gRPC connection inside
// `go test`, without building a plugin binary, and checks components against
// the contracts the kernel relies on.
//
// The connection is the protocol's own: a loopback TCP listener, the plugin
// server with its production options (message limits, panic recovery), and
// the host-side client. Whatever breaks across the process boundary (an
// option that does not decode strictly, metadata that is not JSON, an error
// that loses its kind) breaks here too.
package sdktest

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

// Task configures set's task name with opts and returns its remote client.
// opts is an sdk.Options, raw JSON ([]byte, json.RawMessage), nil, or any
// value that encodes to a JSON object. Everything is closed on t.Cleanup.
func Task(t testing.TB, set *sdk.Set, name string, opts any) *plugin.TaskClient {
	t.Helper()
	return mustConfigure(t, set, sdk.KindTask, name, opts).(*plugin.TaskClient)
}

// Model is Task for models.
func Model(t testing.TB, set *sdk.Set, name string, opts any) *plugin.ModelClient {
	t.Helper()
	return mustConfigure(t, set, sdk.KindModel, name, opts).(*plugin.ModelClient)
}

// Scorer is Task for scorers.
func Scorer(t testing.TB, set *sdk.Set, name string, opts any) *plugin.ScorerClient {
	t.Helper()
	return mustConfigure(t, set, sdk.KindScorer, name, opts).(*plugin.ScorerClient)
}

// Retriever is Task for retrievers.
func Retriever(t testing.TB, set *sdk.Set, name string, opts any) *plugin.RetrieverClient {
	t.Helper()
	return mustConfigure(t, set, sdk.KindRetriever, name, opts).(*plugin.RetrieverClient)
}

func mustConfigure(t testing.TB, set *sdk.Set, kind sdk.Kind, name string, opts any) plugin.Component {
	t.Helper()
	c, err := Configure(t, set, kind, name, opts)
	if err != nil {
		t.Fatalf("configure %s %q: %v", kind, name, err)
	}
	return c
}

// Configure is like Task but for any kind, and returns the Configure error
// (a *sdk.ConfigError for bad options) instead of failing the test, so
// option validation can be tested.
func Configure(t testing.TB, set *sdk.Set, kind sdk.Kind, name string, opts any) (plugin.Component, error) {
	t.Helper()
	raw, err := encodeOptions(opts)
	if err != nil {
		t.Fatalf("sdktest: options for %s %q: %v", kind, name, err)
	}
	conn := Dial(t, set)
	comp, err := plugin.Configure(context.Background(), conn, kind, name, raw)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := comp.Close(); err != nil {
			t.Errorf("close %s %q: %v", kind, name, err)
		}
	})
	return comp, nil
}

func encodeOptions(opts any) (sdk.Options, error) {
	switch o := opts.(type) {
	case nil:
		return nil, nil
	case sdk.Options:
		return o, nil
	case json.RawMessage:
		return sdk.Options(o), nil
	case []byte:
		return sdk.Options(o), nil
	}
	b, err := json.Marshal(opts)
	return sdk.Options(b), err
}

// Dial starts a plugin server for set on a loopback listener and returns a
// connection to it, both torn down on t.Cleanup. Most tests want Task, Model,
// Scorer or Retriever instead.
func Dial(t testing.TB, set *sdk.Set) *grpc.ClientConn {
	t.Helper()
	logger := testLogger(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sdktest: listen: %v", err)
	}
	g := grpc.NewServer(plugin.ServerOptions(logger)...)
	plugin.NewServer(set, logger).Register(g)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = g.Serve(lis)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(),
		append(plugin.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		g.Stop()
		t.Fatalf("sdktest: dial %s: %v", lis.Addr(), err)
	}
	// Cleanups run last-in first-out: the component's Close (registered by
	// Configure, later) runs before the connection and server go away.
	t.Cleanup(func() {
		_ = conn.Close()
		g.Stop()
		<-served
	})
	return conn
}

// testLogger sends plugin logs to t.Log until the test ends; writing to a
// finished test's log would panic.
func testLogger(t testing.TB) hclog.Logger {
	w := &tbWriter{t: t}
	t.Cleanup(w.stop)
	return hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Debug, Output: w})
}

type tbWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *tbWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(string(p))
	}
	return len(p), nil
}

func (w *tbWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}
