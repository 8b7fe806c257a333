package openai

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// connPool carries requests to a plain-HTTP server over HTTP/1.1
// keep-alive connections, writing each request and reading its answer on
// the caller's goroutine. net/http's Transport hands every request to two
// goroutines per connection (a writer and a reader) through channels; on a
// local server answering at once, those hand-offs, the Request it builds
// and the context per attempt were most of this process's CPU per request.
// The answer is parsed by net/http itself (http.ReadResponse), so chunked
// bodies, keep-alive rules and headers follow the library; only the pool
// and the request head are ours. Anything it does not cover (https, a
// proxy) stays with net/http: see newConnPool.
//
// One difference remains: the answer is read once the body is written. A
// server that answers before reading the body and closes is still heard
// (roundTrip reads after a failed write); one that neither reads a body
// larger than the socket buffers nor closes holds the attempt to its
// timeout, where net/http would return its early answer. Servers that
// reject a body unread close the connection (Go's, nginx after draining
// it), and model servers read every body whole.
type connPool struct {
	origin string // "http://host:port" as base_url spells it; URLs it starts are ours
	addr   string // host:port to dial
	// head is the part of every request head after the request line:
	// Host, User-Agent, Accept, Authorization.
	head string
	// staleAfter is how long a connection may sit idle before it is
	// checked before use (the constant, but for tests).
	staleAfter time.Duration
	// redirected: the server answered a redirect, which net/http
	// follows; every request goes through net/http from then on.
	redirected atomic.Bool

	mu   sync.Mutex
	idle []*pconn // most recently used last
}

// maxIdleConns matches the net/http client's MaxIdleConnsPerHost.
const maxIdleConns = 1024

// staleAfter is how long a connection may sit idle before it is checked
// for a close by the server before use. A server closes idle connections
// after seconds (uvicorn 5 s), and net/http learns of it at once from its
// reader goroutine; here the check costs a syscall, so connections reused
// back to back skip it.
const staleAfter = 100 * time.Millisecond // connPool.staleAfter

// dialTimeout and keepAlive are net/http's DefaultTransport's.
const (
	dialTimeout = 30 * time.Second
	keepAlive   = 30 * time.Second
)

// pconn is one keep-alive connection.
type pconn struct {
	net.Conn
	br   *bufio.Reader
	head []byte // the request head being written, reused
	used time.Time
	x    exchange // the request in flight on it
	// cancel aborts the request in flight, from the caller's context:
	// made once, as a context.AfterFunc for every request.
	cancel func()
}

// newConnPool is the pool for base, or nil when net/http must carry the
// requests: https (TLS), or a proxy the environment names for base.
func newConnPool(base, key string) *connPool {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil {
		return nil
	}
	if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || p != nil {
		return nil
	}
	if !headerSafe(u.Host) || !headerSafe(key) {
		// net/http encodes or rejects these (an IDN host, a key with a
		// line break) with its own errors.
		return nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	head := "Host: " + u.Host + "\r\nUser-Agent: hayloft-openai\r\nAccept: application/json\r\n"
	if key != "" {
		head += "Authorization: Bearer " + key + "\r\n"
	}
	return &connPool{origin: u.Scheme + "://" + u.Host, addr: addr, head: head, staleAfter: staleAfter}
}

// headerSafe reports whether s can go into a request line or header as
// it is: printable ASCII without spaces or '#' (the start of a fragment).
func headerSafe(s string) bool {
	for i := range len(s) {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '#' {
			return false
		}
	}
	return true
}

// target is the request-target of rawURL, or false when the URL is not
// on this pool's server or needs escaping (net/http does that).
func (p *connPool) target(rawURL string) (string, bool) {
	rest, ok := strings.CutPrefix(rawURL, p.origin)
	switch {
	case !ok || !headerSafe(rest):
		return "", false
	case rest == "":
		return "/", true
	case rest[0] == '/':
		return rest, true
	}
	return "", false
}

// get is an idle connection, or a new one, with deadline set. A
// connection keeps its last deadline while idle: setting the next one
// replaces it, and clearing it would cost as much again.
func (p *connPool) get(ctx context.Context, deadline time.Time) (*pconn, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		// The deadline first: the last request's may have passed, and
		// the check reads under it.
		if c.SetDeadline(deadline) == nil && (time.Since(c.used) < p.staleAfter || alive(c.Conn)) {
			return c, nil
		}
		c.Close()
	}
	d := net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlive, Deadline: deadline}
	conn, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		return nil, err
	}
	c := &pconn{Conn: conn, br: bufio.NewReaderSize(conn, 4096)}
	c.cancel = func() { c.SetDeadline(aLongTimeAgo) }
	return c, nil
}

// put returns c to the pool.
func (p *connPool) put(c *pconn) {
	c.used = time.Now()
	p.mu.Lock()
	if len(p.idle) < maxIdleConns {
		p.idle = append(p.idle, c)
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// closeIdle closes every idle connection.
func (p *connPool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		c.Close()
	}
}

// aLongTimeAgo is a deadline that has passed: setting it makes a blocked
// read or write on the connection return at once.
var aLongTimeAgo = time.Unix(1, 0)

// copyBody is the largest body copied behind the head into the
// connection's buffer to go out in one write; a larger one is written from
// where it is, head and body in one writev.
const copyBody = 16 << 10

// exchange is one request in flight on a pooled connection.
type exchange struct {
	p    *connPool
	c    *pconn
	resp *http.Response
	stop func() bool // ends the watch on the caller's context
}

// roundTrip writes the request and reads the answer's head. The attempt
// must end by deadline; ctx's cancellation aborts it at once. The caller
// reads resp.Body and then calls finish.
func (p *connPool) roundTrip(ctx context.Context, method, target string, payload reqBody, deadline time.Time) (*exchange, error) {
	c, err := p.get(ctx, deadline)
	if err != nil {
		return nil, err
	}
	x := &c.x
	*x = exchange{p: p, c: c, stop: context.AfterFunc(ctx, c.cancel)}
	werr := x.write(method, target, payload)
	for {
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			x.abort()
			if werr != nil {
				return nil, werr
			}
			return nil, err
		}
		if werr != nil {
			// The server answered before taking the whole body (a 413,
			// say) and closed: its answer says more than the broken
			// write, as with net/http. The connection is done.
			resp.Close = true
		}
		// An informational answer (100 Continue, 103 Early Hints) comes
		// before the real one.
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		x.resp = resp
		return x, nil
	}
}

// write sends the request: a head and a body of bytes in one writev, or a
// streamed body through a buffer.
func (x *exchange) write(method, target string, payload reqBody) error {
	c := x.c
	h := append(c.head[:0], method...)
	h = append(append(append(h, ' '), target...), " HTTP/1.1\r\n"...)
	h = append(h, x.p.head...)
	size := int64(len(payload.bytes))
	if payload.stream != nil {
		size = payload.size
	}
	if payload.stream != nil || payload.bytes != nil {
		h = append(h, "Content-Type: application/json\r\nContent-Length: "...)
		h = append(strconv.AppendInt(h, size, 10), "\r\n"...)
	}
	h = append(h, "\r\n"...)
	c.head = h
	if payload.stream == nil && len(payload.bytes) <= copyBody {
		h = append(h, payload.bytes...)
		c.head = h[:0]
		_, err := c.Write(h)
		return err
	}
	if payload.stream == nil {
		bufs := net.Buffers{h, payload.bytes}
		_, err := bufs.WriteTo(c.Conn)
		return err
	}
	// The head alone, then the body as it is encoded: its pieces are
	// tens of kilobytes, so one more write costs nothing that matters.
	if _, err := c.Write(h); err != nil {
		return err
	}
	n, err := io.Copy(c.Conn, payload.stream())
	if err != nil {
		return err
	}
	if n != size {
		// Not the network's failure: no answer will come, so the read
		// that follows must not wait for one.
		c.Close()
		return fmt.Errorf("request body is %d bytes, announced %d", n, size)
	}
	return nil
}

// abort ends an exchange whose connection cannot be reused.
func (x *exchange) abort() {
	x.stop()
	x.c.Close()
}

// finish ends the exchange after its body was read (to its end if eof):
// the connection goes back to the pool if the body was read to its end,
// the server keeps it open and the caller's context did not touch it.
func (x *exchange) finish(eof bool) {
	body := x.resp.Body
	// Bytes buffered past the answer are none the server should have
	// sent: the connection is out of step.
	reusable := !x.resp.Close && (eof || atEOF(body)) && x.c.br.Buffered() == 0
	body.Close()
	if !x.stop() || !reusable {
		// stop false: the context's watch ran (or runs) and set a past
		// deadline, maybe after the one just cleared.
		x.c.Close()
		return
	}
	x.p.put(x.c)
}

// atEOF reports whether body has nothing left, reading at most a little:
// a reader that stopped early (a streamed answer after its last event)
// usually left only the end of the chunked encoding.
func atEOF(body io.Reader) bool {
	var b [512]byte
	for range 4 {
		n, err := body.Read(b[:])
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil || n == 0 {
			return false
		}
	}
	return false
}
