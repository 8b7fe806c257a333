package openai

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
	"github.com/hayloft/hayloft/sdk"
)

// connServer is a chat server on 127.0.0.1 that counts the connections
// made to it; handle, when set, answers instead of the fixed answer.
type connServer struct {
	*httptest.Server
	conns  atomic.Int32
	handle func(w http.ResponseWriter, r *http.Request) bool // false: answer as usual
}

const connAnswer = `{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`

func newConnServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request) bool) *connServer {
	s := &connServer{handle: handle}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.handle != nil && s.handle(w, r) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(connAnswer))
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// rawServer is a TCP server on 127.0.0.1 that hands each connection to
// serve, for answers net/http's server would not give; accepted counts
// the connections. Its URL is the API root.
func rawServer(t *testing.T, serve func(conn net.Conn)) (base string, accepted *atomic.Int32) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted = new(atomic.Int32)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer conn.Close()
				serve(conn)
			}()
		}
	}()
	return "http://" + l.Addr().String() + "/v1", accepted
}

func TestConnPoolRouting(t *testing.T) {
	tests := []struct {
		base   string
		pooled bool
		url    string
		target string // "" : not the pool's
	}{
		{"http://127.0.0.1:8000/v1", true, "http://127.0.0.1:8000/v1/chat/completions", "/v1/chat/completions"},
		{"http://127.0.0.1:8000/v1", true, "http://127.0.0.1:8000/tokenize", "/tokenize"},
		{"http://127.0.0.1:8000", true, "http://127.0.0.1:8000", "/"},
		{"http://127.0.0.1:8000/v1", true, "http://127.0.0.1:80001/v1", ""},
		{"http://127.0.0.1:8000/v1", true, "http://other:8000/v1", ""},
		{"http://127.0.0.1:8000/v1", true, "http://127.0.0.1:8000/v1/a b", ""},
		{"http://127.0.0.1:8000/v1", true, "http://127.0.0.1:8000/v1/é", ""},
		{"https://api.openai.com/v1", false, "", ""},
		{"http://bücher.example/v1", false, "", ""},
	}
	if newConnPool("http://127.0.0.1:8000/v1", "sk-1\r\nX-Injected: 1") != nil {
		t.Error("a key with a line break went to the pool, whose head would carry it as is")
	}
	for _, tt := range tests {
		p := newConnPool(tt.base, "")
		if (p != nil) != tt.pooled {
			t.Errorf("%s: pooled %v, want %v", tt.base, p != nil, tt.pooled)
		}
		if p == nil {
			continue
		}
		got, ok := p.target(tt.url)
		if ok != (tt.target != "") || got != tt.target {
			t.Errorf("%s: target(%s) = %q, %v; want %q", tt.base, tt.url, got, ok, tt.target)
		}
	}
}

// Requests one after another share one connection; an answer that says
// Connection: close is not reused.
func TestConnPoolReuse(t *testing.T) {
	for _, closing := range []bool{false, true} {
		s := newConnServer(t, func(w http.ResponseWriter, r *http.Request) bool {
			if closing {
				w.Header().Set("Connection", "close")
			}
			return false
		})
		c := newTransportClient(t, TransportAuto, s.URL+"/v1", nil)
		const n = 20
		for i := range n {
			resp, err := c.Generate(context.Background(), chat("hello"))
			if err != nil || resp.Text != "ok" || len(resp.Attempts) != 1 {
				t.Fatalf("request %d: %+v, %v", i, resp, err)
			}
		}
		want := int32(1)
		if closing {
			want = n
		}
		if got := s.conns.Load(); got != want {
			t.Errorf("Connection: close %v: %d connections for %d requests, want %d", closing, got, n, want)
		}
	}
}

// A connection the server closed while it sat idle is noticed before use:
// the next request goes out on a new one, in a single attempt.
func TestConnPoolStaleConnection(t *testing.T) {
	s := newConnServer(t, nil)
	c := newTransportClient(t, TransportAuto, s.URL+"/v1", map[string]any{"max_retries": 0})
	c.pool.staleAfter = 0 // check every reuse
	if _, err := c.Generate(context.Background(), chat("one")); err != nil {
		t.Fatal(err)
	}
	s.CloseClientConnections()
	// The close reaches this end of the connection asynchronously; a
	// request sent before it does would fail like net/http's would.
	c.pool.mu.Lock()
	idle := c.pool.idle[0]
	c.pool.mu.Unlock()
	for end := time.Now().Add(5 * time.Second); alive(idle.Conn); runtime.Gosched() {
		if time.Now().After(end) {
			t.Fatal("the server's close never reached the idle connection")
		}
	}
	resp, err := c.Generate(context.Background(), chat("two"))
	if err != nil || len(resp.Attempts) != 1 {
		t.Fatalf("after the server closed the idle connection: %+v, %v", resp, err)
	}
	if got := s.conns.Load(); got != 2 {
		t.Errorf("%d connections, want 2", got)
	}
}

// Cancelling the caller's context ends a request the server holds at
// once, closes its connection (the server sees the request go), and the
// client goes on working.
func TestConnPoolCancel(t *testing.T) {
	held := make(chan struct{})
	gone := make(chan struct{})
	var once sync.Once
	s := newConnServer(t, func(w http.ResponseWriter, r *http.Request) bool {
		first := false
		once.Do(func() { first = true })
		if !first {
			return false
		}
		// The server watches for the client going away only once the
		// body has been read.
		io.Copy(io.Discard, r.Body)
		close(held)
		<-r.Context().Done()
		close(gone)
		return true
	})
	c := newTransportClient(t, TransportAuto, s.URL+"/v1", nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-held
		cancel()
	}()
	_, err := c.Generate(ctx, chat("held"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	<-gone
	resp, err := c.Generate(context.Background(), chat("next"))
	if err != nil || resp.Text != "ok" {
		t.Fatalf("after a cancelled request: %+v, %v", resp, err)
	}
}

// BenchmarkRoundTrip compares the two transports on one small chat
// request to a loopback server in this process (so the figures include
// the server's CPU): allocations and time per request.
func BenchmarkRoundTrip(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(connAnswer))
	}))
	defer srv.Close()
	for _, tr := range []string{TransportAuto, TransportNetHTTP} {
		b.Run("transport="+tr, func(b *testing.B) {
			c := newBenchClient(b, srv.URL+"/v1", tr)
			req := chat("Read the passage and answer briefly. How many ships were logged that day?")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Generate(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func newBenchClient(b *testing.B, base, transport string) *Client {
	c, err := NewClient(context.Background(), sdk.MustOptions(map[string]any{"base_url": base, "model": "fake-model", "transport": transport}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// Bodies of every size go out whole: copied behind the head, written
// beside it (writev), or encoded as they are sent.
func TestConnPoolBodySizes(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{})
	defer srv.Close()
	c := newTransportClient(t, TransportAuto, srv.BaseURL(), nil)
	for _, n := range []int{10, copyBody + 100, streamBodyBytes + 100} {
		prompt := strings.Repeat("hay é\"\n", n/8+1)[:n]
		prompt = strings.ToValidUTF8(prompt, "")
		if _, err := c.Generate(context.Background(), chat(prompt)); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if got := srv.Prompts()[prompt]; got != 1 {
			t.Errorf("%d-byte prompt: the server saw it %d times, want 1", n, got)
		}
	}
}

// An HTTP/1.0 answer without a length ends at the close of the
// connection, which is then not reused.
func TestConnPoolAnswerUntilClose(t *testing.T) { eachTransport(t, testConnPoolAnswerUntilClose) }

func testConnPoolAnswerUntilClose(t *testing.T, transport string) {
	base, accepted := rawServer(t, func(conn net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(conn))
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(conn, "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"+connAnswer)
	})
	c := newTransportClient(t, transport, base, map[string]any{"max_retries": 0})
	for i := range 3 {
		resp, err := c.Generate(context.Background(), chat("hello"))
		if err != nil || resp.Text != "ok" {
			t.Fatalf("request %d: %+v, %v", i, resp, err)
		}
	}
	if got := accepted.Load(); got != 3 {
		t.Errorf("%d connections for 3 answers that end at the close, want 3", got)
	}
}

// A server that answers before it has read a large body and closes gets
// its answer seen (a 413 here), not a broken write.
//
// Only through the pool: net/http reads the answer while it writes, and
// which of the two ends first decides what it reports.
func TestConnPoolEarlyAnswer(t *testing.T) {
	base, _ := rawServer(t, func(conn net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
			return
		}
		io.WriteString(conn, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 40\r\n\r\n"+`{"error":{"message":"body too large!!"}}`)
	})
	c := newTransportClient(t, TransportAuto, base, map[string]any{"max_retries": 0})
	_, err := c.Generate(context.Background(), chat(strings.Repeat("hay ", 4<<20)))
	var ae *AttemptsError
	if !errors.As(err, &ae) || len(ae.Attempts) != 1 || ae.Attempts[0].Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("err = %v, want one attempt answered 413", err)
	}
}

// Bytes after an answer that no request asked for put the connection out
// of step: it is not reused, and the next request gets its own answer.
func TestConnPoolUnaskedBytes(t *testing.T) {
	answer := func(text string) string {
		body := `{"choices":[{"message":{"content":"` + text + `"},"finish_reason":"stop"}]}`
		return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	base, accepted := rawServer(t, func(conn net.Conn) {
		br := bufio.NewReader(conn)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			io.WriteString(conn, answer("ok")+answer("unasked"))
		}
	})
	c := newTransportClient(t, TransportAuto, base, map[string]any{"max_retries": 0})
	for i := range 3 {
		resp, err := c.Generate(context.Background(), chat("hello"))
		if err != nil || resp.Text != "ok" {
			t.Fatalf("request %d: %+v, %v", i, resp, err)
		}
	}
	if got := accepted.Load(); got != 3 {
		t.Errorf("%d connections for 3 requests on connections out of step, want 3", got)
	}
}

// A server that redirects is followed, as net/http follows it, and the
// requests after the first go to net/http directly.
func TestConnPoolRedirect(t *testing.T) { eachTransport(t, testConnPoolRedirect) }

func testConnPoolRedirect(t *testing.T, transport string) {
	var redirects atomic.Int32
	s := newConnServer(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/v1/chat/completions" {
			redirects.Add(1)
			http.Redirect(w, r, "/v2/chat/completions", http.StatusTemporaryRedirect)
			return true
		}
		if b, _ := io.ReadAll(r.Body); !strings.Contains(string(b), "hello") {
			http.Error(w, "the body did not follow the redirect", http.StatusBadRequest)
			return true
		}
		return false
	})
	c := newTransportClient(t, transport, s.URL+"/v1", map[string]any{"max_retries": 0})
	for i := range 3 {
		resp, err := c.Generate(context.Background(), chat("hello"))
		if err != nil || resp.Text != "ok" || len(resp.Attempts) != 1 {
			t.Fatalf("request %d: %+v, %v", i, resp, err)
		}
	}
	want := int32(3)
	if transport == TransportAuto {
		want = 4 // the pool's one, then net/http's three
	}
	if got := redirects.Load(); got != want {
		t.Errorf("%d redirects answered, want %d", got, want)
	}
}
