// Package openaitest runs a fake OpenAI-compatible server on loopback for
// tests: chat and legacy completions (with echo and logprobs), embeddings,
// /tokenize in vLLM or llama.cpp style, /metrics and /slots load reports, and
// fault injection (latency, 429 with Retry-After, 5xx, hangs, malformed JSON,
// reset connections, context-length errors). Everything it answers is
// deterministic, so tests can assert exact outputs, and it counts what it saw
// so tests can assert how a client behaved.
package openaitest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault is a way for one request to fail.
type Fault int

const (
	FaultNone      Fault = iota
	Fault429             // 429 Too Many Requests with Retry-After
	Fault500             // 500 Internal Server Error
	Fault503             // 503 Service Unavailable with Retry-After
	FaultHang            // never answers until the client gives up or the server closes
	FaultMalformed       // 200 with a truncated JSON body
	FaultReset           // the connection is closed without a response
)

var faultNames = map[Fault]string{
	FaultNone: "none", Fault429: "429", Fault500: "500", Fault503: "503",
	FaultHang: "hang", FaultMalformed: "malformed", FaultReset: "reset",
}

func (f Fault) String() string {
	if s, ok := faultNames[f]; ok {
		return s
	}
	return "fault(" + strconv.Itoa(int(f)) + ")"
}

// ParseFault is the inverse of Fault.String.
func ParseFault(s string) (Fault, error) {
	for f, name := range faultNames {
		if name == s {
			return f, nil
		}
	}
	return 0, fmt.Errorf("unknown fault %q", s)
}

// TokenizeStyle selects which /tokenize dialect the server speaks.
type TokenizeStyle string

const (
	TokenizeNone     TokenizeStyle = ""         // no /tokenize: 404
	TokenizeVLLM     TokenizeStyle = "vllm"     // {"model","prompt"} -> {"tokens","count","max_model_len"}
	TokenizeLlamaCpp TokenizeStyle = "llamacpp" // {"content"} -> {"tokens"}
)

// Options configure a Server. The zero value is a fast, faultless server.
type Options struct {
	// Addr to listen on; default "127.0.0.1:0" (a free port).
	Addr string
	// Model is the id /v1/models lists; default "fake-model".
	Model string
	// Answer computes the completion text; default DefaultAnswer.
	Answer func(req ChatRequest) string
	// Latency delays every generation and embedding request; LatencyFunc,
	// when set, is used instead and receives the request's 0-based number.
	Latency     time.Duration
	LatencyFunc func(n int) time.Duration
	// Faults are applied in order to the first len(Faults) generation and
	// embedding requests (numbered across all three endpoints).
	Faults []Fault
	// FailRate is the probability that a request past the Faults sequence
	// fails, with a fault drawn uniformly from FaultKinds (default: 429, 500,
	// reset). The draw is seeded by Seed, so a run is reproducible given the
	// order requests arrive in.
	FailRate   float64
	FaultKinds []Fault
	Seed       uint64
	// FaultFunc, when set, decides every request's fault and overrides Faults
	// and FailRate. n is the request's 0-based number, prompt its text.
	FaultFunc func(n int, prompt string) Fault
	// RetryAfter is the Retry-After header sent with 429 and 503; whole
	// seconds are sent as an integer, anything else as "retry-after-ms".
	RetryAfter time.Duration
	// MaxContext is the model window in tokens (prompt + max_tokens); a
	// request beyond it gets the vLLM/OpenAI context-length error. 0 = none.
	MaxContext int
	// Capacity is how many requests run at once; more wait in a queue that
	// /metrics reports. QueueLimit caps the queue: beyond it, 429. Zero
	// Capacity means unlimited; zero QueueLimit means an unbounded queue.
	Capacity   int
	QueueLimit int
	// APIKey, when set, is required as "Authorization: Bearer <key>".
	APIKey string
	// Tokenize selects the /tokenize dialect.
	Tokenize TokenizeStyle
	// EmbeddingDim is the embedding vector length; default 64.
	EmbeddingDim int
	// Logprob gives the log-probability of each token of a legacy
	// completion's logprobs, knowing the whole prompt, so a test can make
	// one prompt likelier than another; default TokenLogprob(token).
	Logprob func(prompt, token string) float64
	// NoLogprobs makes the server ignore echo and logprobs, as servers
	// without prompt log-probabilities do: answers carry no "logprobs".
	NoLogprobs bool
	// Engine, when set, runs generation requests through a simulated vLLM
	// v1 engine with prefix caching (engine.go): responses report
	// usage.prompt_tokens_details.cached_tokens, and /metrics the cache's
	// size and prefix-cache counters.
	Engine *EngineConfig
	// Llama, when set, makes chat requests go through llama-server's
	// slots (llama.go): id_slot, a prefix cache per slot, timings.cache_n,
	// and /props and /slots as llama-server reports them. Not with Engine.
	Llama *LlamaConfig
	// Observe, when set, is called after every request with its path, when
	// it arrived and when its answer was written: a benchmark's timeline
	// (how many the server held at once, how soon a client asked again).
	Observe func(path string, arrived, answered time.Time)
}

// ChatRequest is what the answer policy sees: the chat messages, or for the
// legacy completions endpoint a single user message holding the prompt.
type ChatRequest struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
	TopP        *float64  `json:"top_p,omitempty"`
	Stop        []string  `json:"stop,omitempty"`
	Seed        *int64    `json:"seed,omitempty"`
	// Extra holds every other top-level field of the request body.
	Extra map[string]json.RawMessage `json:"-"`
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Server is a running fake. Close it when done.
type Server struct {
	// URL is the server root, e.g. "http://127.0.0.1:41234"; the OpenAI API
	// lives under URL+"/v1".
	URL string

	opts Options
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
	once sync.Once

	slots  chan struct{} // nil when Capacity is 0
	engine *engineHost   // nil unless Options.Engine
	llama  *llamaHost    // nil unless Options.Llama

	mu          sync.Mutex
	rng         *rand.Rand
	n           int // generation/embedding requests so far
	paths       map[string]int
	prompts     map[string]int
	statuses    map[int]int
	faults      map[Fault]int
	inFlight    int
	maxInFlight int
	waiting     int
	auth        []string
	// spans: by path, when the first request since the last reset
	// arrived and when the last one was answered (Span).
	spans map[string]*[2]time.Time
}

// NewServer starts a server. It panics if it cannot listen, as
// httptest.NewServer does: that is a broken test machine, not a test failure.
func NewServer(opts Options) *Server {
	s, err := Start(opts)
	if err != nil {
		panic(fmt.Sprintf("openaitest: %v", err))
	}
	return s
}

// Start is NewServer returning the listen error instead of panicking.
func Start(opts Options) (*Server, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Model == "" {
		opts.Model = "fake-model"
	}
	if opts.Answer == nil {
		opts.Answer = DefaultAnswer
	}
	if len(opts.FaultKinds) == 0 {
		opts.FaultKinds = []Fault{Fault429, Fault500, FaultReset}
	}
	if opts.EmbeddingDim <= 0 {
		opts.EmbeddingDim = 64
	}
	if opts.Logprob == nil {
		opts.Logprob = func(_, token string) float64 { return TokenLogprob(token) }
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", opts.Addr, err)
	}
	s := &Server{
		URL:      "http://" + ln.Addr().String(),
		opts:     opts,
		ln:       ln,
		done:     make(chan struct{}),
		rng:      rand.New(rand.NewPCG(opts.Seed, 0x6861796c6f6674)),
		paths:    map[string]int{},
		prompts:  map[string]int{},
		statuses: map[int]int{},
		faults:   map[Fault]int{},
		spans:    map[string]*[2]time.Time{},
	}
	if opts.Capacity > 0 {
		s.slots = make(chan struct{}, opts.Capacity)
	}
	switch {
	case opts.Engine != nil && opts.Llama != nil:
		ln.Close()
		return nil, fmt.Errorf("Engine and Llama are two servers: set one")
	case opts.Engine != nil:
		s.engine = newEngineHost(*opts.Engine)
	case opts.Llama != nil:
		s.llama = newLlamaHost(*opts.Llama)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("POST /v1/completions", s.handleCompletions)
	mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	mux.HandleFunc("GET /slots", s.handleSlots)
	mux.HandleFunc("POST /tokenize", s.handleTokenize)
	mux.HandleFunc("GET /get_server_info", s.handleServerInfo)
	mux.HandleFunc("GET /props", s.handleProps)
	s.srv = &http.Server{Handler: s.count(mux), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// BaseURL is the OpenAI API root, URL+"/v1".
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Close stops the server at once, failing requests still in flight (hung
// ones included).
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.srv.Close()
		if s.engine != nil {
			s.engine.close()
		}
	})
}

// count records the path and status of every request.
func (s *Server) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		s.mu.Lock()
		s.paths[r.URL.Path]++
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		span := s.spans[r.URL.Path]
		if span == nil {
			span = &[2]time.Time{arrived}
			s.spans[r.URL.Path] = span
		}
		s.mu.Unlock()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		answered := time.Now()
		s.mu.Lock()
		s.statuses[sw.status]++
		span[1] = answered
		s.mu.Unlock()
		if s.opts.Observe != nil {
			s.opts.Observe(r.URL.Path, arrived, answered)
		}
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets streamed answers through the wrapper as they are written.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack lets FaultReset reach the connection through the wrapper.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("hijack unsupported")
	}
	return h.Hijack()
}

// Requests is how many requests reached path (e.g. "/v1/chat/completions").
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paths[path]
}

// Statuses counts responses by HTTP status; resets and hangs count as 0.
func (s *Server) Statuses() map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]int, len(s.statuses))
	for k, v := range s.statuses {
		out[k] = v
	}
	return out
}

// Faults counts the faults injected, by kind.
func (s *Server) Faults() map[Fault]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Fault]int, len(s.faults))
	for k, v := range s.faults {
		out[k] = v
	}
	return out
}

// Prompts counts generation requests by prompt text (chat messages joined
// with "\n", or the completions prompt), so a test can check that no sample
// was asked twice.
func (s *Server) Prompts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.prompts))
	for k, v := range s.prompts {
		out[k] = v
	}
	return out
}

// MaxInFlight is the most generation/embedding requests held at once,
// queued ones included.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

// InFlight is the number of generation/embedding requests held now.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// Authorizations lists the Authorization header of every request, in order.
func (s *Server) Authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// ResetCounters zeroes every counter (the fault sequence restarts too).
func (s *Server) ResetCounters() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n = 0
	s.paths = map[string]int{}
	s.prompts = map[string]int{}
	s.statuses = map[int]int{}
	s.faults = map[Fault]int{}
	s.maxInFlight = s.inFlight
	s.auth = nil
	s.spans = map[string]*[2]time.Time{}
}

// Span is when the first request to path since the last ResetCounters
// arrived and when the last one was answered (zero times before any): a
// client's time at the server, without its own start and end.
func (s *Server) Span(path string) (first, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if span := s.spans[path]; span != nil {
		return span[0], span[1]
	}
	return time.Time{}, time.Time{}
}

// begin numbers a generation/embedding request, picks its fault and counts
// it in flight. The caller must call end.
func (s *Server) begin(prompt string, counted bool) (n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n = s.n
	s.n++
	if counted {
		s.prompts[prompt]++
	}
	switch {
	case s.opts.FaultFunc != nil:
		f = s.opts.FaultFunc(n, prompt)
	case n < len(s.opts.Faults):
		f = s.opts.Faults[n]
	case s.opts.FailRate > 0 && s.rng.Float64() < s.opts.FailRate:
		f = s.opts.FaultKinds[s.rng.IntN(len(s.opts.FaultKinds))]
	}
	if f != FaultNone {
		s.faults[f]++
	}
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	return n, f
}

func (s *Server) end() {
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
}

// admit waits for a capacity slot. It reports false (having answered) when
// the queue is full or the request was abandoned.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if s.slots == nil {
		return func() {}, true
	}
	select {
	case s.slots <- struct{}{}:
		return func() { <-s.slots }, true
	default:
	}
	s.mu.Lock()
	if s.opts.QueueLimit > 0 && s.waiting >= s.opts.QueueLimit {
		s.mu.Unlock()
		s.writeRetryAfter(w)
		writeError(w, http.StatusTooManyRequests, "server overloaded: queue is full", "rate_limit_exceeded")
		return nil, false
	}
	s.waiting++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
	}()
	select {
	case s.slots <- struct{}{}:
		return func() { <-s.slots }, true
	case <-r.Context().Done():
		return nil, false
	case <-s.done:
		return nil, false
	}
}

// sleep waits d unless the request or the server ends first.
func (s *Server) sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.done:
		return false
	}
}

// prelude runs everything common to generation and embedding requests:
// authorization, capacity, latency and faults. It reports whether the
// handler should go on to answer normally; if not, the reply is done.
func (s *Server) prelude(w http.ResponseWriter, r *http.Request, prompt string, counted bool) (release func(), ok bool) {
	if s.opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_api_key")
		return nil, false
	}
	n, fault := s.begin(prompt, counted)
	free, ok := s.admit(w, r)
	if !ok {
		s.end()
		return nil, false
	}
	done := func() { free(); s.end() }
	d := s.opts.Latency
	if s.opts.LatencyFunc != nil {
		d = s.opts.LatencyFunc(n)
	}
	if !s.sleep(r, d) {
		done()
		return nil, false
	}
	switch fault {
	case FaultNone:
		return done, true
	case Fault429:
		s.writeRetryAfter(w)
		writeError(w, http.StatusTooManyRequests, "Rate limit reached, please retry.", "rate_limit_exceeded")
	case Fault500:
		writeError(w, http.StatusInternalServerError, "internal server error (injected)", "server_error")
	case Fault503:
		s.writeRetryAfter(w)
		writeError(w, http.StatusServiceUnavailable, "service unavailable (injected)", "server_error")
	case FaultHang:
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
	case FaultMalformed:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"cmpl-broken","choices":[{"index":0,"message":{"role":"assistant","content":"tru`))
	case FaultReset:
		if h, ok := w.(http.Hijacker); ok {
			if c, _, err := h.Hijack(); err == nil {
				if tc, ok := c.(*net.TCPConn); ok {
					tc.SetLinger(0) // an RST, not a polite FIN
				}
				c.Close()
			}
		}
	}
	done()
	return nil, false
}

func (s *Server) writeRetryAfter(w http.ResponseWriter) {
	d := s.opts.RetryAfter
	if d <= 0 {
		return
	}
	if d%time.Second == 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(d/time.Second)))
		return
	}
	w.Header().Set("retry-after-ms", strconv.FormatInt(d.Milliseconds(), 10))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError answers in OpenAI's error shape, which vLLM also uses.
func writeError(w http.ResponseWriter, status int, msg, code string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg,
		"type":    "invalid_request_error",
		"param":   nil,
		"code":    code,
	}})
}

// contextError writes the error vLLM and OpenAI send for an over-long prompt.
func (s *Server) contextError(w http.ResponseWriter, prompt, completion int) {
	msg := fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
		s.opts.MaxContext, prompt+completion, prompt, completion)
	writeError(w, http.StatusBadRequest, msg, "context_length_exceeded")
}

// decodeBody reads a JSON object, keeping every field raw.
func decodeBody(r *http.Request) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// parseChat turns a raw body into a ChatRequest; prompt is set for the
// legacy completions endpoint.
func parseChat(raw map[string]json.RawMessage, prompt *string) (ChatRequest, error) {
	var req ChatRequest
	req.Extra = map[string]json.RawMessage{}
	for k, v := range raw {
		var err error
		switch k {
		case "model":
			err = json.Unmarshal(v, &req.Model)
		case "messages":
			err = json.Unmarshal(v, &req.Messages)
		case "max_tokens":
			err = json.Unmarshal(v, &req.MaxTokens)
		case "temperature":
			err = json.Unmarshal(v, &req.Temperature)
		case "top_p":
			err = json.Unmarshal(v, &req.TopP)
		case "stop":
			// OpenAI accepts a string or a list.
			var one string
			if json.Unmarshal(v, &one) == nil {
				req.Stop = []string{one}
			} else {
				err = json.Unmarshal(v, &req.Stop)
			}
		case "seed":
			err = json.Unmarshal(v, &req.Seed)
		case "prompt":
			if prompt == nil {
				req.Extra[k] = v
				continue
			}
			err = json.Unmarshal(v, prompt)
		default:
			req.Extra[k] = v
		}
		if err != nil {
			return req, fmt.Errorf("field %q: %w", k, err)
		}
	}
	return req, nil
}

func joinMessages(msgs []Message) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n")
}

// truncate applies stop sequences and max_tokens to an answer.
func truncate(text string, req ChatRequest) (string, string) {
	for _, st := range req.Stop {
		if i := strings.Index(text, st); st != "" && i >= 0 {
			text = text[:i]
		}
	}
	if req.MaxTokens > 0 {
		spans := tokenSpans(text)
		if len(spans) > req.MaxTokens {
			return text[:spans[req.MaxTokens-1][1]], "length"
		}
	}
	return text, "stop"
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	raw, err := decodeBody(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error(), "bad_request")
		return
	}
	req, err := parseChat(raw, nil)
	if err == nil && len(req.Messages) == 0 {
		err = errors.New(`"messages" is required`)
	}
	var so streamOptions
	if err == nil {
		so, err = parseStream(req)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "bad_request")
		return
	}
	prompt := joinMessages(req.Messages)
	release, ok := s.prelude(w, r, prompt, true)
	if !ok {
		return
	}
	defer release()
	promptTokens := len(tokenSpans(prompt))
	if s.opts.MaxContext > 0 && promptTokens+req.MaxTokens > s.opts.MaxContext {
		s.contextError(w, promptTokens, req.MaxTokens)
		return
	}
	text, reason := truncate(s.opts.Answer(req), req)
	if so.ignoreEOS && req.MaxTokens > 0 {
		text, reason = padAnswer(text, req.MaxTokens)
	}
	usage := map[string]any{
		"prompt_tokens":     promptTokens,
		"completion_tokens": len(tokenSpans(text)),
		"total_tokens":      promptTokens + len(tokenSpans(text)),
	}
	id := fmt.Sprintf("chatcmpl-%x", hash64(prompt))
	var stream *sse
	if so.stream && s.llama == nil { // llama mode may still refuse the request
		stream = startSSE(w, id, s.opts.Model)
	}
	cached := 0
	switch {
	case s.engine != nil:
		var prefilled chan struct{}
		var first sync.WaitGroup
		quit := make(chan struct{})
		if stream != nil {
			// The first token goes out when the engine has computed the
			// prompt, while the rest is generated.
			prefilled = make(chan struct{})
			first.Add(1)
			go func() {
				defer first.Done()
				select {
				case <-prefilled:
					stream.tokens(text, 1)
				case <-quit:
				}
			}()
		}
		var ok bool
		cached, ok = s.engine.run(r, s.done, prompt, len(tokenSpans(text)), prefilled)
		close(quit)
		first.Wait()
		if !ok {
			return
		}
	case s.llama != nil:
		var ok bool
		if cached, ok = s.llama.run(w, r, s.done, req, prompt); !ok {
			return
		}
	}
	var timings map[string]any
	if s.llama != nil {
		timings = map[string]any{"cache_n": cached, "prompt_n": promptTokens - cached, "predicted_n": len(tokenSpans(text))}
	}
	if s.engine != nil && !s.opts.Engine.HideCached {
		// llama-server reports reuse in its timings, the others in usage.
		if s.opts.Engine.Reports == "llamacpp" {
			timings = map[string]any{"cache_n": cached, "prompt_n": promptTokens - cached}
		} else {
			usage["prompt_tokens_details"] = map[string]any{"cached_tokens": cached}
		}
	}
	if so.stream && stream == nil {
		stream = startSSE(w, id, s.opts.Model)
	}
	if stream != nil {
		stream.finish(text, reason, usage, timings, so)
		return
	}
	body := map[string]any{
		"id":      id,
		"object":  "chat.completion",
		"created": 0,
		"model":   s.opts.Model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": text},
			"finish_reason": reason,
		}},
		"usage": usage,
	}
	if timings != nil {
		body["timings"] = timings
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	raw, err := decodeBody(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error(), "bad_request")
		return
	}
	var prompt string
	req, err := parseChat(raw, &prompt)
	var echo bool
	var logprobs *int
	if err == nil {
		if v, ok := req.Extra["echo"]; ok {
			err = json.Unmarshal(v, &echo)
		}
	}
	if err == nil {
		if v, ok := req.Extra["logprobs"]; ok {
			err = json.Unmarshal(v, &logprobs)
		}
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "bad_request")
		return
	}
	if s.opts.NoLogprobs {
		echo, logprobs = false, nil
	}
	release, ok := s.prelude(w, r, prompt, true)
	if !ok {
		return
	}
	defer release()
	promptSpans := tokenSpans(prompt)
	if s.opts.MaxContext > 0 && len(promptSpans)+req.MaxTokens > s.opts.MaxContext {
		s.contextError(w, len(promptSpans), req.MaxTokens)
		return
	}
	req.Messages = []Message{{Role: "user", Content: prompt}}
	text, reason := truncate(s.opts.Answer(req), req)
	// A completion continues the prompt; a space keeps the tokens apart.
	if text != "" {
		text = " " + text
	}
	full := text
	if echo {
		full = prompt + text
	}
	choice := map[string]any{"index": 0, "text": full, "finish_reason": reason}
	if logprobs != nil {
		var tokens []string
		var lps []any
		var offsets []int
		add := func(base string, baseOff int, spans [][2]int, first bool) {
			for i, sp := range spans {
				tokens = append(tokens, base[sp[0]:sp[1]])
				offsets = append(offsets, baseOff+sp[0])
				if first && i == 0 {
					lps = append(lps, nil) // nothing precedes the first token
				} else {
					lps = append(lps, s.opts.Logprob(prompt, base[sp[0]:sp[1]]))
				}
			}
		}
		if echo {
			add(prompt, 0, promptSpans, true)
			add(text, len(prompt), tokenSpans(text), len(promptSpans) == 0)
		} else {
			add(text, 0, tokenSpans(text), false)
		}
		choice["logprobs"] = map[string]any{
			"tokens":         tokens,
			"token_logprobs": lps,
			"text_offset":    offsets,
			"top_logprobs":   nil,
		}
	}
	completionTokens := len(tokenSpans(text))
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      fmt.Sprintf("cmpl-%x", hash64(prompt)),
		"object":  "text_completion",
		"created": 0,
		"model":   s.opts.Model,
		"choices": []any{choice},
		"usage": map[string]any{
			"prompt_tokens":     len(promptSpans),
			"completion_tokens": completionTokens,
			"total_tokens":      len(promptSpans) + completionTokens,
		},
	})
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error(), "bad_request")
		return
	}
	var inputs []string
	var one string
	if err := json.Unmarshal(body.Input, &one); err == nil {
		inputs = []string{one}
	} else if err := json.Unmarshal(body.Input, &inputs); err != nil || len(inputs) == 0 {
		writeError(w, http.StatusBadRequest, `"input" must be a string or a non-empty list of strings`, "bad_request")
		return
	}
	release, ok := s.prelude(w, r, strings.Join(inputs, "\n"), false)
	if !ok {
		return
	}
	defer release()
	data := make([]any, len(inputs))
	total := 0
	for i, in := range inputs {
		n := len(tokenSpans(in))
		total += n
		if s.opts.MaxContext > 0 && n > s.opts.MaxContext {
			s.contextError(w, n, 0)
			return
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": Vector(in, s.opts.EmbeddingDim)}
	}
	// Reverse the order: the API numbers items by "index" and clients must
	// not rely on the order of the list.
	for i, j := 0, len(data)-1; i < j; i, j = i+1, j-1 {
		data[i], data[j] = data[j], data[i]
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"model":  s.opts.Model,
		"data":   data,
		"usage":  map[string]any{"prompt_tokens": total, "total_tokens": total},
	})
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	entry := map[string]any{"id": s.opts.Model, "object": "model", "owned_by": "openaitest"}
	if s.opts.MaxContext > 0 {
		entry["max_model_len"] = s.opts.MaxContext
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{entry}})
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
}

// handleMetrics reports the queue in vLLM's Prometheus names.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	waiting, running := s.waiting, s.inFlight-s.waiting
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# HELP vllm:num_requests_running Number of requests currently running on GPU.\n")
	fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\n")
	fmt.Fprintf(w, "vllm:num_requests_running{model_name=%q} %d.0\n", s.opts.Model, running)
	fmt.Fprintf(w, "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n")
	fmt.Fprintf(w, "# TYPE vllm:num_requests_waiting gauge\n")
	fmt.Fprintf(w, "vllm:num_requests_waiting{model_name=%q} %d.0\n", s.opts.Model, waiting)
	if s.engine != nil {
		s.writeEngineMetrics(w)
	}
}

// handleSlots reports capacity as llama.cpp's /slots does: one entry per
// slot with is_processing.
func (s *Server) handleSlots(w http.ResponseWriter, r *http.Request) {
	if s.llama != nil {
		writeJSON(w, http.StatusOK, s.llama.slotsReport())
		return
	}
	if s.slots == nil {
		writeError(w, http.StatusNotImplemented, "This server does not support slots endpoint.", "not_supported")
		return
	}
	busy := len(s.slots)
	out := make([]any, cap(s.slots))
	for i := range out {
		out[i] = map[string]any{"id": i, "is_processing": i < busy}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	raw, err := decodeBody(r)
	if s.opts.Tokenize == TokenizeNone {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error(), "bad_request")
		return
	}
	switch s.opts.Tokenize {
	case TokenizeVLLM:
		var prompt string
		if err := json.Unmarshal(raw["prompt"], &prompt); err != nil {
			// vLLM validates with pydantic and answers 400 on a bad body.
			writeError(w, http.StatusBadRequest, `field "prompt" is required`, "bad_request")
			return
		}
		toks := Tokens(prompt)
		writeJSON(w, http.StatusOK, map[string]any{"tokens": toks, "count": len(toks), "max_model_len": s.opts.MaxContext})
	case TokenizeLlamaCpp:
		// llama-server ignores unknown fields and answers an empty list
		// when "content" is missing.
		toks := []int{}
		var content string
		if json.Unmarshal(raw["content"], &content) == nil {
			toks = Tokens(content)
		}
		writeJSON(w, http.StatusOK, map[string]any{"tokens": toks})
	}
}

// Shutdown stops accepting requests and waits for those in flight, within ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.srv.Shutdown(ctx)
}
