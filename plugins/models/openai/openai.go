// Package openai is the "openai" model: a client for any server speaking the
// OpenAI HTTP API (OpenAI itself, vLLM, llama.cpp's llama-server, SGLang, …).
//
// It retries what may succeed later (429, 5xx, resets, timeouts) with
// exponential backoff, full jitter and the server's Retry-After (up to
// retry_after_max), and reports
// every attempt so the kernel can journal flaky servers. What can never
// succeed (an over-long prompt, a rejected request, an unreadable answer) is
// an *sdk.RequestError at once. A *Client is safe for concurrent use and
// keeps enough connections open to saturate a GPU server.
//
// Besides generation it offers prompt log-likelihood (legacy completions
// with echo and logprobs), embeddings (Embedder), token counting through the
// server's /tokenize (sdk.Tokenizer). Load probes for vLLM and llama.cpp are
// the kernel's (kernel/limiter), which schedules requests.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/jsonstr"
)

// Name is the model's registered name.
const Name = "openai"

// Client is the "openai" model.
type Client struct {
	doer

	// model is read by every request and written at most once, by
	// Provision; an atomic load keeps concurrent requests from contending.
	model atomic.Pointer[string]
	// genURL is the generation endpoint, chat or legacy completions.
	genURL string

	tok tokenizer

	// answered: some request got an HTTP answer that worked, so a later
	// 401/403/404 concerns one request, not the configuration.
	answered atomic.Bool
	// connFails counts requests in a row that got no HTTP answer at all.
	connFails atomic.Int32
}

var (
	_ sdk.Model       = (*Client)(nil)
	_ sdk.Tokenizer   = (*Client)(nil)
	_ sdk.Provisioner = (*Client)(nil)
	_ sdk.Validator   = (*Client)(nil)
)

// New is the sdk.ModelFactory of "openai".
func New(ctx context.Context, opts sdk.Options) (sdk.Model, error) {
	return NewClient(ctx, opts)
}

// NewClient is New returning the concrete type, for callers that need
// LogLikelihood or the tokenizer directly.
func NewClient(ctx context.Context, opts sdk.Options) (*Client, error) {
	s, err := parseOptions(opts)
	if err != nil {
		return nil, err
	}
	return newClient(s), nil
}

func newClient(s *settings) *Client {
	c := &Client{doer: newDoer(s), genURL: s.base + "/chat/completions"}
	if s.endpoint == "completions" {
		c.genURL = s.base + "/completions"
	}
	c.model.Store(&s.model)
	c.tok.counts = map[[32]byte]int{}
	return c
}

// Model is the served model id the client sends.
func (c *Client) Model() string {
	return *c.model.Load()
}

// ServedModel is Model (sdk.ServedModeler): once provisioned, the model the
// server answers as, configured or the first it lists.
func (c *Client) ServedModel() string { return c.Model() }

// TransportOptions are the options that change how a request travels and
// never what the server answers (sdk.TransportOptioner): raising timeout
// after a run whose requests timed out keeps the answers journaled. The
// tokenizer is not among them only because it is not one: what it changes
// (the prompt fitted to the window) is in the key already.
func (c *Client) TransportOptions() []string {
	return []string{"timeout", "max_retries", "retry_backoff", "retry_backoff_max", "retry_after_max", "max_connection_failures", "transport", "stream"}
}

// Provision fills in the model id from /v1/models when none was configured:
// vLLM rejects requests naming a model it does not serve, and users rarely
// remember the exact id.
func (c *Client) Provision(ctx context.Context) error {
	if err := c.preflight(ctx); err != nil {
		return err
	}
	if err := c.provisionModel(ctx); err != nil {
		return err
	}
	if c.s.loglikelihood {
		return c.probeLogprobs(ctx)
	}
	return nil
}

func (c *Client) provisionModel(ctx context.Context) error {
	if c.Model() != "" {
		return nil
	}
	ids, err := c.models(ctx)
	if err != nil {
		return fmt.Errorf("openai: find the served model (set model to skip this): %w", err)
	}
	if len(ids) == 0 {
		return fmt.Errorf("openai: %s/models lists no model; set model", c.s.base)
	}
	c.model.Store(&ids[0])
	return nil
}

// preflightTimeout bounds the one request that checks the server before an
// eval starts: a refused connection answers at once, a black-holed address
// should not hold the run for the full request timeout.
const preflightTimeout = 10 * time.Second

// preflight asks GET /models once, without retries, before any sample is
// sent: a server that is not there, or that refuses the key, is a config
// error at the model block (base_url, api_key_env) instead of every sample
// retrying for seconds and failing. Any other answer, 404 included (not
// every server lists models), means the server is there.
func (c *Client) preflight(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, min(preflightTimeout, c.s.timeout))
	defer cancel()
	var attempts []sdk.Attempt
	url := c.s.base + "/models"
	status, _, err := c.once(pctx, "GET", url, reqBody{}, buffered(func([]byte) error { return nil }), &attempts)
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case status == 0 && err != nil:
		// The network's own words ("connect: connection refused") say it
		// best; the request line around them repeats the URL.
		why := err.Error()
		var oe *net.OpError
		if errors.As(err, &oe) {
			why = oe.Error()
		}
		return sdk.Configf("base_url", "cannot reach the server at %s (%s): is the server running?", c.s.base, why)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return c.authError(status, err)
	}
	return nil
}

// authError is the config error of a 401 or 403.
func (c *Client) authError(status int, err error) error {
	if c.s.key == "" {
		return sdk.Configf("api_key_env", "the server at %s wants an API key (HTTP %d): set api_key_env to the name of the variable holding it (%v)", c.s.base, status, err)
	}
	return sdk.Configf("api_key_env", "the server at %s refused the key (HTTP %d): check the variable api_key_env names (%v)", c.s.base, status, err)
}

// classify turns the failure of a request into what the kernel should
// do with it: a 401/403/404 before any request has worked is a config error
// (a wrong key, base_url or model), which ends the eval at once instead of
// failing every sample alike; the max_connection_failures-th request in a
// row without an answer ends it too. Other failures stay the sample's own.
//
// A request its caller gave up on (ctx done: an interruption, another row
// of this model ending) says nothing of the server, and is not counted.
func (c *Client) classify(ctx context.Context, err error) error {
	var ae *AttemptsError
	if !errors.As(err, &ae) || len(ae.Attempts) == 0 {
		return err
	}
	status := ae.Attempts[len(ae.Attempts)-1].Status
	if status == 0 && ctx.Err() != nil {
		return err
	}
	if status == 0 {
		n := c.connFails.Add(1)
		if max := c.s.maxConnFails; max > 0 && int(n) >= max {
			// Not a RequestError: the kernel ends the eval with it.
			return fmt.Errorf("openai: %d requests in a row got no answer from %s (last: %v); stopping the eval (max_connection_failures = %d): is the server running?", n, c.s.base, ae.Err, max)
		}
		return err
	}
	c.connFails.Store(0)
	if c.answered.Load() {
		return err
	}
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return c.authError(status, ae.Err)
	case http.StatusNotFound:
		return sdk.Configf("base_url", "the first request got HTTP 404 (%v): check base_url (usually ending in /v1), endpoint and model", ae.Err)
	}
	return err
}

// Validate checks that the server answers and serves the configured model.
func (c *Client) Validate(ctx context.Context) error {
	ids, err := c.models(ctx)
	if err != nil {
		return fmt.Errorf("openai: %w", err)
	}
	m := c.Model()
	for _, id := range ids {
		if id == m {
			return nil
		}
	}
	return fmt.Errorf("openai: %s/models does not list %q (it lists %s)", c.s.base, m, strings.Join(ids, ", "))
}

func (c *Client) models(ctx context.Context) ([]string, error) {
	var out struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	_, err := c.do(ctx, "GET", c.s.base+"/models", nil, func(raw []byte) error {
		return json.Unmarshal(raw, &out)
	})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(out.Data))
	for i, d := range out.Data {
		ids[i] = d.ID
	}
	return ids, nil
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.http.CloseIdleConnections()
	if c.pool != nil {
		c.pool.closeIdle()
	}
	return nil
}

// request is the body of a generation request. Unset parameters are left
// out so the server's defaults apply. A struct rather than a map spares
// sorting keys and boxing values on every request; extra_body is spliced in
// by encode.
type request struct {
	Model       string        `json:"model,omitempty"`
	Messages    []sdk.Message `json:"messages,omitempty"`
	Prompt      *string       `json:"prompt,omitempty"` // a pointer: an empty prompt is still sent
	Temperature *float64      `json:"temperature,omitempty"`
	TopP        *float64      `json:"top_p,omitempty"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
	Stop        []string      `json:"stop,omitempty"`
	Seed        *int64        `json:"seed,omitempty"`
	Echo        bool          `json:"echo,omitempty"`
	Logprobs    int           `json:"logprobs,omitempty"`
	// IDSlot is llama-server's slot for the request: the kernel's send
	// order pins a shared prefix to the slot that holds it.
	IDSlot *int `json:"id_slot,omitempty"`
	// Stream asks for server-sent events (stream.go).
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

// usage is the token count an answer reports: OpenAI, vLLM (with
// --enable-prompt-tokens-details) and SGLang (with --enable-cache-report)
// put the prompt tokens found cached in prompt_tokens_details.
type usage struct {
	PromptTokens        int            `json:"prompt_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	PromptTokensDetails *tokensDetails `json:"prompt_tokens_details"`
}

// tokensDetails is usage.prompt_tokens_details.
type tokensDetails struct {
	CachedTokens *int `json:"cached_tokens"`
}

// timings is llama-server's account of an answer; cache_n is the prompt
// tokens it reused from the slot.
type timings struct {
	CacheN *int `json:"cache_n"`
}

// sdkUsage is u with the cached count from wherever the server gave it.
func sdkUsage(u usage, t *timings) sdk.Usage {
	out := sdk.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
	switch {
	case u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens != nil:
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	case t != nil && t.CacheN != nil:
		out.CachedTokens = t.CacheN
	}
	return out
}

// generateResponse is what Generate reads of an answer: chat fills Message,
// legacy completions fill Text. Fields it does not use are left out so the
// decoder skips them without allocating.
type generateResponse struct {
	Choices []choice `json:"choices"`
	Usage   usage    `json:"usage"`
	Timings *timings `json:"timings"`
}

// choice is one of an answer's choices.
type choice struct {
	Message struct {
		Content *string `json:"content"`
	} `json:"message"`
	Text         *string `json:"text"`
	FinishReason string  `json:"finish_reason"`
}

// Generate sends one request. The token budget is req.Params.MaxTokens, or
// when that is zero the sample's MaxNewTokens: an explicit setting in the
// eval wins over the benchmark's default, and the kernel has already put
// both into the cache key.
func (c *Client) Generate(ctx context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	if len(req.Messages) == 0 {
		return nil, &sdk.RequestError{Code: sdk.CodeBadRequest, Msg: "openai: request has no messages"}
	}
	if c.s.loglikelihood {
		return c.scorePrompt(ctx, completionPrompt(req.Messages))
	}
	body := c.body(req.Params)
	chat := c.s.endpoint == "chat"
	if chat {
		body.Messages = req.Messages
	} else {
		prompt := completionPrompt(req.Messages)
		body.Prompt = &prompt
	}
	if req.Params.MaxTokens <= 0 && req.Sample != nil && req.Sample.MaxNewTokens > 0 {
		body.MaxTokens = req.Sample.MaxNewTokens
	}
	body.IDSlot = req.Slot
	if c.streams(ctx) {
		return c.generateStream(ctx, &body)
	}
	var out generateResponse
	attempts, err := c.post(ctx, c.genURL, &body, func(raw []byte) error { return out.decode(raw, chat) })
	if err != nil {
		return nil, c.classify(ctx, err)
	}
	c.answered.Store(true)
	c.connFails.Store(0)
	resp := out.answer(chat)
	resp.Attempts = attempts
	return resp, nil
}

// decode reads a whole answer into out.
func (out *generateResponse) decode(raw []byte, chat bool) error {
	*out = generateResponse{}
	if !out.decodeFast(raw) {
		*out = generateResponse{}
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
	}
	if len(out.Choices) == 0 {
		return errors.New("answer has no choices")
	}
	ch := &out.Choices[0]
	if chat && ch.Message.Content == nil {
		return errors.New("answer has no message content")
	}
	if !chat && ch.Text == nil {
		return errors.New("answer has no text")
	}
	return nil
}

// answer is the decoded answer as the kernel takes it.
func (out *generateResponse) answer(chat bool) *sdk.GenerateResponse {
	ch := &out.Choices[0]
	text := ch.Text
	if chat {
		text = ch.Message.Content
	}
	return &sdk.GenerateResponse{Text: *text, FinishReason: ch.FinishReason, Usage: sdkUsage(out.Usage, out.Timings)}
}

// body starts a request body: the model and the decoding parameters.
func (c *Client) body(p sdk.GenerationParams) request {
	r := request{Model: c.Model(), Temperature: p.Temperature, TopP: p.TopP, Stop: p.Stop, Seed: p.Seed}
	if p.MaxTokens > 0 {
		r.MaxTokens = p.MaxTokens
	}
	return r
}

// post sends a generation request body with extra_body merged in.
func (c *Client) post(ctx context.Context, url string, r *request, parse func([]byte) error) ([]sdk.Attempt, error) {
	body, err := c.requestBody(r)
	if err != nil {
		return nil, fmt.Errorf("encode request for %s: %w", url, err)
	}
	return c.sendBody(ctx, "POST", url, body, buffered(parse))
}

// encode encodes r with extra_body's members first. They never collide with
// r's fields: parseOptions rejects extra_body keys in reservedBody, which
// names them all.
//
// The messages (a long context's prompt) are written by sdk.AppendMessagesJSON
// into the one buffer of the body's exact size, not through json.Marshal's
// growing buffer and final copy. The bytes are json.Marshal's, fields in
// the struct's order.
func (c *Client) encode(r *request) ([]byte, error) {
	scratch := bodyPool.Get().(*bytes.Buffer)
	defer bodyPool.Put(scratch)
	parts, h, err := c.appendSplit(scratch.AvailableBuffer(), r)
	if err != nil {
		return nil, err
	}
	n := len(parts)
	if len(r.Messages) > 0 {
		n += sdk.MessagesJSONLen(r.Messages)
	}
	out := append(make([]byte, 0, n), parts[:h]...)
	if len(r.Messages) > 0 {
		out = sdk.AppendMessagesJSON(out, r.Messages)
	}
	out = append(out, parts[h:]...)
	if cap(parts) > cap(scratch.AvailableBuffer()) && cap(parts) <= maxPooledBody {
		// Grown: keep the larger buffer for next time.
		*scratch = *bytes.NewBuffer(parts[:0])
	}
	return out, nil
}

// split is r's encoding around its messages: head ends with "messages":
// when there are messages (omitempty), tail is the fields after them and
// the closing brace.
func (c *Client) split(r *request) (head, tail []byte, err error) {
	parts, h, err := c.appendSplit(nil, r)
	return parts[:h:h], parts[h:], err
}

// appendSplit appends split's head and tail to dst, in one buffer: the
// head is parts[:h].
func (c *Client) appendSplit(dst []byte, r *request) (parts []byte, h int, err error) {
	start := len(dst)
	sep := func(out []byte) []byte {
		if len(out) > start+1 {
			out = append(out, ',')
		}
		return out
	}
	// The fields after the messages are encoded to size (a legacy prompt
	// may be long).
	size := 1 + len(c.s.extra) + 16 + jsonstr.QuotedLen(r.Model) + 128
	if r.Prompt != nil {
		size += jsonstr.QuotedLen(*r.Prompt)
	}
	dst = slices.Grow(dst, size)
	dst = append(append(dst, '{'), c.s.extra...)
	if r.Model != "" {
		dst = jsonstr.AppendQuoted(append(sep(dst), `"model":`...), r.Model)
	}
	if len(r.Messages) > 0 {
		dst = append(sep(dst), `"messages":`...)
	}
	h = len(dst)
	// After a comma if anything precedes them.
	if h > start+1 {
		dst = append(dst, ',')
	}
	tail := len(dst)
	params, ok := appendParams(dst, r)
	if !ok {
		// json.Marshal gives the error (a NaN, an infinity).
		rest := *r
		rest.Messages, rest.Model = nil, ""
		b, err := json.Marshal(&rest)
		if err != nil {
			return nil, 0, err
		}
		params = append(dst, b[1:len(b)-1]...)
	}
	if len(params) == tail {
		params = params[:h] // no fields: no comma
	}
	return append(params, '}')[start:], h - start, nil
}

// streamBodyBytes is the messages' length from which a body is encoded as
// it is sent instead of held encoded: the messages are held anyway for a
// retry, and a second copy of every long prompt in flight was most of
// this process's peak memory.
const streamBodyBytes = 64 << 10

// requestBody is r's request body: encoded once, or for long messages a reader
// made anew for each attempt that encodes them a piece at a time.
func (c *Client) requestBody(r *request) (reqBody, error) {
	n := 0
	for _, m := range r.Messages {
		n += len(m.Content)
	}
	if n < streamBodyBytes {
		b, err := c.encode(r)
		return reqBody{bytes: b}, err
	}
	head, tail, err := c.split(r)
	if err != nil {
		return reqBody{}, err
	}
	msgs := r.Messages
	return reqBody{
		size:   int64(len(head) + sdk.MessagesJSONLen(msgs) + len(tail)),
		stream: func() io.Reader { return &messagesReader{pending: head, msgs: msgs, tail: tail} },
	}, nil
}

// messagesReader reads head, msgs encoded as sdk.AppendMessagesJSON does,
// and tail, through a buffer of some 32 KB.
type messagesReader struct {
	pending []byte // encoded, not yet read
	buf     []byte
	msgs    []sdk.Message
	i       int    // msgs[i] is being encoded
	content string // the rest of msgs[i].Content, when open
	open    bool   // msgs[i]'s content has begun
	tail    []byte // nil once read
}

const messagesPiece = 16 << 10

func (m *messagesReader) Read(p []byte) (int, error) {
	for len(m.pending) == 0 {
		if !m.fill() {
			return 0, io.EOF
		}
	}
	n := copy(p, m.pending)
	m.pending = m.pending[n:]
	return n, nil
}

// WriteTo writes what is left to w a piece at a time, from the buffer the
// pieces are encoded in: io.Copy needs no buffer of its own.
func (m *messagesReader) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for {
		if len(m.pending) > 0 {
			k, err := w.Write(m.pending)
			n += int64(k)
			m.pending = m.pending[k:]
			if err != nil {
				return n, err
			}
		}
		if !m.fill() {
			return n, nil
		}
	}
}

// fill encodes what comes next into pending; false at the end.
func (m *messagesReader) fill() bool {
	if m.buf == nil {
		m.buf = make([]byte, 0, 2*messagesPiece+64)
	}
	b := m.buf[:0]
	switch {
	case m.i < len(m.msgs) && !m.open:
		if m.i == 0 {
			b = append(b, '[')
		} else {
			b = append(b, ',')
		}
		b = jsonstr.AppendQuoted(append(b, `{"role":`...), m.msgs[m.i].Role)
		b = append(b, `,"content":"`...)
		m.content, m.open = m.msgs[m.i].Content, true
	case m.i < len(m.msgs) && m.content != "":
		b, m.content = jsonstr.AppendQuotedPiece(b, m.content, messagesPiece)
	case m.i < len(m.msgs):
		b = append(b, `"}`...)
		if m.i++; m.i == len(m.msgs) {
			b = append(b, ']')
		}
		m.open = false
	case m.tail != nil:
		b, m.tail = append(b, m.tail...), nil
	default:
		return false
	}
	m.buf, m.pending = b, b
	return true
}

// completionPrompt flattens chat messages for the legacy endpoint, which
// takes raw text: contents joined by blank lines, no chat template. It is
// meant for base models, whose prompts are a single user message anyway.
func completionPrompt(msgs []sdk.Message) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n\n")
}

// logprobsResponse is what LogLikelihood reads of a completions answer.
type logprobsResponse struct {
	Choices []struct {
		Logprobs *struct {
			TokenLogprobs []*float64 `json:"token_logprobs"`
			TextOffset    []int      `json:"text_offset"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage *usage `json:"usage"` // nil when absent: LogLikelihood must know
}

// LogLikelihood scores prompt under the model: the sum of its tokens'
// log-probabilities and the per-token values, the first token excluded (it
// has no context). It uses the legacy completions endpoint with echo and
// logprobs, generating one token that is then ignored, as lm-eval-harness
// does, because some servers reject max_tokens 0.
func (c *Client) LogLikelihood(ctx context.Context, prompt string) (float64, []float64, error) {
	sum, per, _, err := c.logLikelihood(ctx, prompt)
	return sum, per, err
}

// errNoLogprobs is a completions answer without logprobs: the server does
// not return prompt log-probabilities.
var errNoLogprobs = errors.New("answer has no logprobs; does the server support echo with logprobs?")

func (c *Client) logLikelihood(ctx context.Context, prompt string) (float64, []float64, []sdk.Attempt, error) {
	zero := 0.0
	body := c.body(sdk.GenerationParams{Temperature: &zero, MaxTokens: 1})
	body.Prompt, body.Echo, body.Logprobs = &prompt, true, 1
	var out logprobsResponse
	missing := false
	attempts, err := c.post(ctx, c.s.base+"/completions", &body, func(raw []byte) error {
		out = logprobsResponse{}
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
		if missing = len(out.Choices) == 0 || out.Choices[0].Logprobs == nil; missing {
			return errNoLogprobs
		}
		return nil
	})
	if err != nil {
		if missing {
			err = fmt.Errorf("%w (%v)", errNoLogprobs, err)
		}
		return 0, nil, attempts, err
	}
	lp := out.Choices[0].Logprobs
	// The prompt's tokens are those starting inside it; without offsets,
	// trust the usage count.
	n := len(lp.TokenLogprobs)
	switch {
	case len(lp.TextOffset) == len(lp.TokenLogprobs):
		n = 0
		for _, off := range lp.TextOffset {
			if off < len(prompt) {
				n++
			}
		}
	case out.Usage != nil && out.Usage.PromptTokens <= n:
		n = out.Usage.PromptTokens
	default:
		return 0, nil, attempts, &sdk.RequestError{Code: sdk.CodeBadResponse, Msg: "openai: logprobs carry neither text offsets nor a usage count; cannot tell prompt from completion"}
	}
	var sum float64
	per := make([]float64, 0, n)
	for i, v := range lp.TokenLogprobs[:n] {
		if v == nil {
			if i == 0 {
				continue
			}
			return 0, nil, attempts, &sdk.RequestError{Code: sdk.CodeBadResponse, Msg: fmt.Sprintf("openai: prompt token %d has no logprob", i)}
		}
		sum += *v
		per = append(per, *v)
	}
	return sum, per, attempts, nil
}

// LogLikelihoodAnswer is the text of an answer in loglikelihood mode: the
// prompt's log-likelihood and the number of tokens it is summed over (the
// first token, which has no context, excluded). A scorer reads it from the
// prediction; the mean per token is LogprobSum / Tokens.
type LogLikelihoodAnswer struct {
	LogprobSum float64 `json:"logprob_sum"`
	Tokens     int     `json:"tokens"`
}

// scorePrompt answers a request in loglikelihood mode.
func (c *Client) scorePrompt(ctx context.Context, prompt string) (*sdk.GenerateResponse, error) {
	sum, per, attempts, err := c.logLikelihood(ctx, prompt)
	if errors.Is(err, errNoLogprobs) {
		return nil, sdk.Configf("loglikelihood", "%s/completions: %v", c.s.base, err)
	}
	if err != nil {
		return nil, err
	}
	text, err := json.Marshal(LogLikelihoodAnswer{LogprobSum: sum, Tokens: len(per)})
	if err != nil {
		return nil, err
	}
	return &sdk.GenerateResponse{Text: string(text), FinishReason: "loglikelihood",
		Usage: sdk.Usage{PromptTokens: len(per) + 1}, Attempts: attempts}, nil
}

// probeLogprobs scores a short text once, so that a server without prompt
// logprobs is a config error at the option's line before any sample.
func (c *Client) probeLogprobs(ctx context.Context) error {
	_, _, _, err := c.logLikelihood(ctx, "The hay is dry.")
	switch {
	case errors.Is(err, errNoLogprobs):
		return sdk.Configf("loglikelihood", "%s/completions answered without logprobs: the server does not return prompt log-probabilities (vLLM and llama-server do, with echo and logprobs)", c.s.base)
	case err != nil:
		return fmt.Errorf("openai: loglikelihood probe: %w", err)
	}
	return nil
}
