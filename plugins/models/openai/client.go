package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// maxBody caps a response body: an embeddings batch or an echoed 128K-token
// prompt with logprobs is a few megabytes; anything far beyond is a broken
// server, not an answer.
const maxBody = 256 << 20

// AttemptsError is a request that failed after every attempt. Err is the
// last attempt's error (a *sdk.RetryableError when retries ran out, a
// *sdk.RequestError when the request can never succeed, or the context's
// error), so errors.As sees through to it.
type AttemptsError = sdk.AttemptsError

// transport is shared by every request of one client. A GPU server stays
// saturated only if the kernel can hold hundreds of requests open at once,
// and Go's default keeps just two idle connections per host, so without
// this each burst would redial.
func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0
	t.MaxIdleConnsPerHost = 1024
	t.MaxConnsPerHost = 0
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}

// doer performs HTTP requests with retries. Model, Embedder and the
// tokenizer share it.
type doer struct {
	s    *settings
	http *http.Client
	// pool carries requests to a plain-HTTP server without a proxy (see
	// connPool); nil sends everything through http.
	pool *connPool
	// getHeader and postHeader are the headers of every request without and
	// with a body. net/http only reads a client request's Header, so one
	// map serves all requests instead of three Sets and an Authorization
	// string each time.
	getHeader, postHeader http.Header
}

func newDoer(s *settings) doer {
	get := http.Header{"Accept": {"application/json"}}
	if s.key != "" {
		get.Set("Authorization", "Bearer "+s.key)
	}
	post := get.Clone()
	post.Set("Content-Type", "application/json")
	d := doer{s: s, http: newHTTPClient(), getHeader: get, postHeader: post}
	if s.transport == TransportAuto {
		d.pool = newConnPool(s.base, s.key)
	}
	return d
}

// redact removes the API key from text that may have come from the server.
func (d *doer) redact(s string) string {
	if d.s.key == "" {
		return s
	}
	return strings.ReplaceAll(s, d.s.key, "[redacted]")
}

// do sends body, encoded as JSON unless nil, to url; see send.
func (d *doer) do(ctx context.Context, method, url string, body any, parse func([]byte) error) ([]sdk.Attempt, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("encode request for %s: %w", url, err)
		}
	}
	return d.send(ctx, method, url, payload, parse)
}

// send sends payload (JSON, nil for none) to url, retrying retryable
// failures with exponential backoff and full jitter, and honouring
// Retry-After up to retry_after_max. parse receives a 2xx body, which it must not retain; its error
// becomes a bad_response RequestError. Every attempt is returned, failed or
// not; on failure the error is an *AttemptsError.
func (d *doer) send(ctx context.Context, method, url string, payload []byte, parse func([]byte) error) ([]sdk.Attempt, error) {
	return d.sendBody(ctx, method, url, reqBody{bytes: payload}, buffered(parse))
}

// reqBody is a request's body: bytes, or a stream of size bytes made anew
// for each attempt (a long prompt encoded as it is sent), or neither.
type reqBody struct {
	bytes  []byte
	stream func() io.Reader
	size   int64
}

// sendBody is send with any reqBody, and a 2xx body handed to read as it
// arrives (a streamed answer) instead of whole. read's errors from reading
// the body are transport failures, retried; its own are bad responses.
func (d *doer) sendBody(ctx context.Context, method, url string, payload reqBody, read func(io.Reader) error) ([]sdk.Attempt, error) {
	var attempts []sdk.Attempt
	for n := 0; ; n++ {
		_, after, err := d.once(ctx, method, url, payload, read, &attempts)
		if err == nil {
			return attempts, nil
		}
		if ctx.Err() != nil {
			return attempts, &AttemptsError{Attempts: attempts, Err: fmt.Errorf("%s %s: %w", method, url, ctx.Err())}
		}
		if !sdk.IsRetryable(err) || n >= d.s.maxRetries {
			return attempts, &AttemptsError{Attempts: attempts, Err: err}
		}
		wait := after
		if wait > d.s.retryAfterMax {
			// One misbehaving proxy's hour-long Retry-After would hold
			// this request, and the concurrency slot it occupies, for the
			// hour. The record keeps what the server asked, so a run
			// that fails this way says why.
			wait = d.s.retryAfterMax
			a := &attempts[len(attempts)-1]
			a.Error += fmt.Sprintf(" (the server asked to wait %s before retrying; waited retry_after_max %s)", after, wait)
		}
		if wait <= 0 {
			// Full jitter (AWS architecture blog): spreads retries of many
			// concurrent requests instead of having them return in waves.
			ceil := d.s.backoff << min(n, 30)
			if ceil <= 0 || ceil > d.s.capped {
				ceil = d.s.capped
			}
			wait = rand.N(ceil + 1)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return attempts, &AttemptsError{Attempts: attempts, Err: fmt.Errorf("%s %s: waiting to retry: %w", method, url, ctx.Err())}
		case <-t.C:
		}
	}
}

// bodyPool recycles response buffers: most answers are a few hundred bytes,
// and reading each into a fresh, growing slice cost at least one allocation
// per attempt and more garbage for the collector.
var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody is the largest buffer put back: an occasional multi-megabyte
// answer (embeddings, echoed logprobs) should not stay pinned in the pool.
const maxPooledBody = 64 << 10

// buffered reads a body whole, into a pooled buffer, and parses it.
func buffered(parse func([]byte) error) func(io.Reader) error {
	return func(r io.Reader) error {
		buf := bodyPool.Get().(*bytes.Buffer)
		defer func() {
			if buf.Cap() <= maxPooledBody {
				buf.Reset()
				bodyPool.Put(buf)
			}
		}()
		if _, err := buf.ReadFrom(r); err != nil {
			return err
		}
		return parse(buf.Bytes())
	}
}

// bodyError is a failure to read a body, as opposed to what it says.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// errTooLarge is a body past maxBody.
var errTooLarge = fmt.Errorf("response larger than %d bytes", maxBody)

// bodyReader reads a response body up to maxBody, marking its failures as
// bodyErrors.
type bodyReader struct {
	r    io.Reader
	left int64
	eof  bool // r said io.EOF
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, &bodyError{errTooLarge}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	b.eof = err == io.EOF
	if err != nil && !b.eof {
		err = &bodyError{err}
	}
	return n, err
}

// once runs a single attempt and appends it to attempts.
func (d *doer) once(ctx context.Context, method, url string, payload reqBody, read func(io.Reader) error, attempts *[]sdk.Attempt) (status int, after time.Duration, err error) {
	start := time.Now()
	defer func() {
		a := sdk.Attempt{Status: status, LatencyMS: float64(time.Since(start).Microseconds()) / 1000}
		if err != nil {
			a.Error = d.redact(err.Error())
		}
		*attempts = append(*attempts, a)
	}()
	var resp *http.Response
	body := &bodyReader{left: maxBody}
	if target, ok := d.fastTarget(url); ok {
		x, err := d.pool.roundTrip(ctx, method, target, payload, start.Add(d.s.timeout))
		if err != nil {
			return 0, 0, d.transportError(ctx, method, url, err)
		}
		if !isRedirect(x.resp.StatusCode) {
			defer func() { x.finish(body.eof) }()
			resp = x.resp
		} else {
			// net/http follows redirects (with the body again for 307
			// and 308); the pool leaves them, and from now on every
			// request, to it. The server has done nothing but point
			// elsewhere.
			x.finish(false)
			d.pool.redirected.Store(true)
		}
	}
	if resp == nil {
		var cancel context.CancelFunc
		if resp, cancel, err = d.netHTTP(ctx, method, url, payload, start); err != nil {
			return 0, 0, err
		}
		defer cancel()
		defer resp.Body.Close()
	}
	body.r = resp.Body
	status = resp.StatusCode
	if status >= 200 && status < 300 {
		if err := read(body); err != nil {
			return status, 0, d.readError(ctx, method, url, err)
		}
		return status, 0, nil
	}
	var code, msg string
	if err := buffered(func(raw []byte) error { code, msg = errorBody(raw); return nil })(body); err != nil {
		if errors.Is(err, errTooLarge) {
			return status, 0, &sdk.RequestError{Code: sdk.CodeBadResponse, Msg: fmt.Sprintf("%s %s: %v", method, url, errTooLarge)}
		}
		return status, 0, d.transportError(ctx, method, url, fmt.Errorf("read body: %w", err))
	}
	msg = d.redact(fmt.Sprintf("%s %s: HTTP %d: %s", method, url, status, msg))
	switch {
	case status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500:
		after = retryAfter(resp.Header, time.Now())
		return status, after, sdk.Retryable(errors.New(msg), after)
	case isContextLength(code, msg):
		return status, 0, &sdk.RequestError{Code: sdk.CodeContextLength, Msg: msg}
	default:
		return status, 0, &sdk.RequestError{Code: sdk.CodeBadRequest, Msg: msg}
	}
}

// isRedirect reports whether status is one net/http's client follows.
func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// readError classifies the error of reading a 2xx answer's body.
func (d *doer) readError(ctx context.Context, method, url string, err error) error {
	var be *bodyError
	switch {
	case errors.Is(err, errTooLarge):
		return &sdk.RequestError{Code: sdk.CodeBadResponse, Msg: fmt.Sprintf("%s %s: %v", method, url, errTooLarge)}
	case errors.As(err, &be):
		return d.transportError(ctx, method, url, fmt.Errorf("read body: %w", be.err))
	}
	return &sdk.RequestError{Code: sdk.CodeBadResponse, Msg: d.redact(fmt.Sprintf("%s %s: %v", method, url, err))}
}

// fastTarget is url's request-target when the connection pool carries
// the request.
func (d *doer) fastTarget(url string) (string, bool) {
	if d.pool == nil || d.pool.redirected.Load() {
		return "", false
	}
	return d.pool.target(url)
}

// netHTTP sends a request through net/http and returns the answer's head
// and what ends the attempt once its body is read; its error is a
// classified transport error.
func (d *doer) netHTTP(ctx context.Context, method, url string, payload reqBody, start time.Time) (*http.Response, context.CancelFunc, error) {
	// The attempt's own timeout needs a context of its own unless the
	// caller's ends first anyway (a call's deadline from the kernel).
	actx, cancel := ctx, context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); !ok || dl.After(start.Add(d.s.timeout)) {
		actx, cancel = context.WithDeadline(ctx, start.Add(d.s.timeout))
	}
	var rd io.Reader
	switch {
	case payload.stream != nil:
		rd = payload.stream()
	case payload.bytes != nil:
		rd = bytes.NewReader(payload.bytes)
	}
	req, err := http.NewRequestWithContext(actx, method, url, rd)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("build request %s %s: %w", method, url, err)
	}
	if payload.stream != nil {
		req.ContentLength = payload.size
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(payload.stream()), nil }
	}
	req.Header = d.getHeader
	if rd != nil {
		req.Header = d.postHeader
	}
	resp, err := d.http.Do(req)
	if err != nil {
		cancel()
		return nil, nil, d.transportError(ctx, method, url, err)
	}
	return resp, cancel, nil
}

// transportError classifies a failure with no HTTP answer. The caller's own
// cancellation is final; anything else (a reset, a refused connection, an
// attempt past its timeout) may work next time.
func (d *doer) transportError(ctx context.Context, method, url string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s %s: %w", method, url, ctx.Err())
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return sdk.Retryable(fmt.Errorf("%s %s: no answer within timeout %s", method, url, d.s.timeout), 0)
	}
	// Everything else is connection-level (refused, reset, EOF, a broken
	// status line): a fresh connection may well succeed.
	return sdk.Retryable(fmt.Errorf("%s %s: %w", method, url, err), 0)
}

// errorBody pulls the code and message out of an error response. OpenAI
// and llama.cpp nest them under "error"; vLLM has used both that and a flat
// {"object":"error","message":…} shape. Codes may be strings or numbers.
func errorBody(raw []byte) (code, msg string) {
	var flat struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Error   json.RawMessage `json:"error"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(raw, &flat) != nil {
		return "", snippet(raw)
	}
	if len(flat.Error) > 0 {
		var nested struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(flat.Error, &nested) == nil && nested.Message != "" {
			return codeString(nested.Code, nested.Type), nested.Message
		}
		var s string
		if json.Unmarshal(flat.Error, &s) == nil {
			return "", s
		}
	}
	if flat.Message != "" {
		return codeString(flat.Code, flat.Type), flat.Message
	}
	return "", snippet(raw)
}

func codeString(raw json.RawMessage, typ string) string {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s
	}
	return typ
}

func snippet(raw []byte) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}

// isContextLength recognises an over-long prompt in the wording of OpenAI,
// vLLM ("maximum context length is N tokens") and llama.cpp
// ("exceed_context_size_error", "exceeds the available context size").
func isContextLength(code, msg string) bool {
	if code == sdk.CodeContextLength || code == "exceed_context_size_error" {
		return true
	}
	m := strings.ToLower(msg)
	return strings.Contains(m, "maximum context length") || strings.Contains(m, "context size") ||
		strings.Contains(m, "context_length_exceeded") || strings.Contains(m, "longer than the maximum model length")
}

// retryAfter reads the delay a server asked for: OpenAI's retry-after-ms,
// or the standard Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return saturated(ms, time.Millisecond)
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 {
		return saturated(secs, time.Second)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// saturated is n units as a Duration, the longest one past its range: Go
// leaves converting an out-of-range float to an integer unspecified (on
// amd64 a huge Retry-After came out negative, read as none at all).
func saturated(n float64, unit time.Duration) time.Duration {
	if d := n * float64(unit); d < float64(math.MaxInt64) {
		return time.Duration(d)
	}
	return math.MaxInt64
}
