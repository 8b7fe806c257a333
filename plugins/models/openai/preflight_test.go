package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// deadURL is an address nothing listens on, for the life of the test.
func deadURL(t *testing.T) string {
	t.Helper()
	// A socket bound but never listening: a connection to it is refused,
	// and, unlike a listener's port closed again, the port cannot go to a
	// server started meanwhile (this test's own once did).
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/v1", sa.(*syscall.SockaddrInet4).Port)
}

func TestPreflight(t *testing.T) { eachTransport(t, testPreflight) }

func testPreflight(t *testing.T, transport string) {
	status := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"message":"no"}}`, code)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/v1"
	}
	cases := []struct {
		name, base string
		field      string // "" : Provision succeeds
		msg        string
	}{
		{"no server", deadURL(t), "base_url", "is the server running?"},
		{"key refused", status(http.StatusUnauthorized), "api_key_env", "HTTP 401"},
		{"forbidden", status(http.StatusForbidden), "api_key_env", "HTTP 403"},
		// Not every server lists models: a 404 there means the server is up.
		{"no /models", status(http.StatusNotFound), "", ""},
		// A failing server is there; its samples retry.
		{"server error", status(http.StatusInternalServerError), "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := newTransportClient(t, transport, c.base, nil).Provision(context.Background())
			var ce *sdk.ConfigError
			switch {
			case c.field == "" && err != nil:
				t.Errorf("Provision: %v", err)
			case c.field != "" && (!errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(ce.Msg, c.msg)):
				t.Errorf("Provision: %v, want a config error on %s saying %q", err, c.field, c.msg)
			}
		})
	}
}

// A 404 before any request worked is the config's (base_url, model); after
// one worked it is the sample's.
func TestFirstRequest404(t *testing.T) {
	var ok atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ok.Load() {
			http.Error(w, `{"error":{"message":"model not found"}}`, http.StatusNotFound)
			return
		}
		w.Write([]byte(`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL+"/v1", nil)
	_, err := c.Generate(context.Background(), chat("a"))
	var ce *sdk.ConfigError
	if !errors.As(err, &ce) || ce.Field != "base_url" || !strings.Contains(ce.Msg, "404") {
		t.Fatalf("first 404: %v, want a config error", err)
	}
	ok.Store(true)
	if _, err := c.Generate(context.Background(), chat("b")); err != nil {
		t.Fatal(err)
	}
	ok.Store(false)
	_, err = c.Generate(context.Background(), chat("c"))
	var re *sdk.RequestError
	if !errors.As(err, &re) || errors.As(err, &ce) {
		t.Errorf("404 after a success: %v, want the sample's request error", err)
	}
}

// After max_connection_failures requests in a row without an answer the
// error is no longer the sample's: the kernel ends the eval with it.
func TestConsecutiveConnectionFailures(t *testing.T) {
	c := newTestClient(t, deadURL(t), map[string]any{"max_retries": 0, "max_connection_failures": 3})
	for i := 1; i <= 3; i++ {
		_, err := c.Generate(context.Background(), chat("x"))
		perSample := sdk.IsRetryable(err)
		if i < 3 && !perSample {
			t.Fatalf("failure %d: %v, want the sample's retryable error", i, err)
		}
		if i == 3 && (perSample || !strings.Contains(err.Error(), "3 requests in a row") || !strings.Contains(err.Error(), "is the server running?")) {
			t.Fatalf("failure 3: %v, want the eval-ending error", err)
		}
	}
	// 0 never stops.
	c = newTestClient(t, deadURL(t), map[string]any{"max_retries": 0, "max_connection_failures": 0})
	for range 5 {
		if _, err := c.Generate(context.Background(), chat("x")); !sdk.IsRetryable(err) {
			t.Fatalf("with 0: %v", err)
		}
	}
	if _, err := NewClient(context.Background(), sdk.MustOptions(map[string]any{"base_url": "http://x/v1", "max_connection_failures": -1})); err == nil {
		t.Error("max_connection_failures = -1 accepted")
	}
}

// Requests their callers gave up on (an interruption, another row of the
// same model ending) say nothing of the server: they do not count towards
// max_connection_failures, and the next request without an answer fails
// alone.
func TestCancelledRequestsAreNotConnectionFailures(t *testing.T) {
	c := newTestClient(t, deadURL(t), map[string]any{"max_retries": 0, "max_connection_failures": 2})
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.Generate(ctx, chat("x")); err == nil {
			t.Fatal("a cancelled request succeeded")
		}
	}
	if _, err := c.Generate(context.Background(), chat("x")); !sdk.IsRetryable(err) {
		t.Fatalf("the first unanswered request after 3 cancelled ones: %v, want the sample's retryable error", err)
	}
}
