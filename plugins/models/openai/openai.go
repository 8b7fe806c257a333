// Package openai is the "openai" model: a client for any server speaking the
// OpenAI HTTP API (OpenAI itself, vLLM, llama.cpp's llama-server, SGLang, …).
//
// It retries what may succeed later (429, 5xx, resets, timeouts) with
// exponential backoff, full jitter and the server's Retry-After, and reports
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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/hayloft/hayloft/sdk"
)

// Name is the model's registered name.
const Name = "openai"

// Client is the "openai" model.
type Client struct {
	doer

	mu    sync.Mutex // guards model, which Provision may fill in
	model string

	tok tokenizer
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
	c := &Client{doer: doer{s: s, http: newHTTPClient()}, model: s.model}
	c.tok.counts = map[[32]byte]int{}
	return c
}

// Model is the served model id the client sends.
func (c *Client) Model() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.model
}

// Provision fills in the model id from /v1/models when none was configured:
// vLLM rejects requests naming a model it does not serve, and users rarely
// remember the exact id.
func (c *Client) Provision(ctx context.Context) error {
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
	c.mu.Lock()
	c.model = ids[0]
	c.mu.Unlock()
	return nil
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
	return nil
}

// completionResponse covers both endpoints: chat fills Message, legacy
// completions fill Text (and Logprobs when asked).
type completionResponse struct {
	Choices []struct {
		Message *struct {
			Content *string `json:"content"`
		} `json:"message"`
		Text         *string `json:"text"`
		FinishReason string  `json:"finish_reason"`
		Logprobs     *struct {
			Tokens        []string   `json:"tokens"`
			TokenLogprobs []*float64 `json:"token_logprobs"`
			TextOffset    []int      `json:"text_offset"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// Generate sends one request. The token budget is req.Params.MaxTokens, or
// when that is zero the sample's MaxNewTokens: an explicit setting in the
// eval wins over the benchmark's default, and the kernel has already put
// both into the cache key.
func (c *Client) Generate(ctx context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	if len(req.Messages) == 0 {
		return nil, &sdk.RequestError{Code: sdk.CodeBadRequest, Msg: "openai: request has no messages"}
	}
	body := c.body(req.Params)
	path := "/chat/completions"
	if c.s.endpoint == "completions" {
		path = "/completions"
		body["prompt"] = completionPrompt(req.Messages)
	} else {
		body["messages"] = req.Messages
	}
	if req.Params.MaxTokens <= 0 && req.Sample != nil && req.Sample.MaxNewTokens > 0 {
		body["max_tokens"] = req.Sample.MaxNewTokens
	}
	var out completionResponse
	attempts, err := c.do(ctx, "POST", c.s.base+path, body, func(raw []byte) error {
		out = completionResponse{}
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
		if len(out.Choices) == 0 {
			return errors.New("answer has no choices")
		}
		ch := out.Choices[0]
		if c.s.endpoint == "chat" && (ch.Message == nil || ch.Message.Content == nil) {
			return errors.New("answer has no message content")
		}
		if c.s.endpoint == "completions" && ch.Text == nil {
			return errors.New("answer has no text")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ch := out.Choices[0]
	resp := &sdk.GenerateResponse{FinishReason: ch.FinishReason, Attempts: attempts}
	if ch.Message != nil {
		resp.Text = *ch.Message.Content
	} else {
		resp.Text = *ch.Text
	}
	if out.Usage != nil {
		resp.Usage = sdk.Usage{PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens}
	}
	return resp, nil
}

// body starts a request body: extra_body, the model and the decoding
// parameters. Unset parameters are left out so the server's defaults apply.
func (c *Client) body(p sdk.GenerationParams) map[string]any {
	b := make(map[string]any, len(c.s.extra)+8)
	for k, v := range c.s.extra {
		b[k] = v
	}
	if m := c.Model(); m != "" {
		b["model"] = m
	}
	if p.Temperature != nil {
		b["temperature"] = *p.Temperature
	}
	if p.TopP != nil {
		b["top_p"] = *p.TopP
	}
	if p.MaxTokens > 0 {
		b["max_tokens"] = p.MaxTokens
	}
	if len(p.Stop) > 0 {
		b["stop"] = p.Stop
	}
	if p.Seed != nil {
		b["seed"] = *p.Seed
	}
	return b
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

// LogLikelihood scores prompt under the model: the sum of its tokens'
// log-probabilities and the per-token values, the first token excluded (it
// has no context). It uses the legacy completions endpoint with echo and
// logprobs, generating one token that is then ignored, as lm-eval-harness
// does, because some servers reject max_tokens 0.
func (c *Client) LogLikelihood(ctx context.Context, prompt string) (float64, []float64, error) {
	body := c.body(sdk.GenerationParams{})
	body["prompt"] = prompt
	body["max_tokens"] = 1
	body["echo"] = true
	body["logprobs"] = 1
	body["temperature"] = 0
	var out completionResponse
	_, err := c.do(ctx, "POST", c.s.base+"/completions", body, func(raw []byte) error {
		out = completionResponse{}
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
		if len(out.Choices) == 0 || out.Choices[0].Logprobs == nil {
			return errors.New("answer has no logprobs; does the server support echo with logprobs?")
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
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
		return 0, nil, &sdk.RequestError{Code: sdk.CodeBadResponse, Msg: "openai: logprobs carry neither text offsets nor a usage count; cannot tell prompt from completion"}
	}
	var sum float64
	per := make([]float64, 0, n)
	for i, v := range lp.TokenLogprobs[:n] {
		if v == nil {
			if i == 0 {
				continue
			}
			return 0, nil, &sdk.RequestError{Code: sdk.CodeBadResponse, Msg: fmt.Sprintf("openai: prompt token %d has no logprob", i)}
		}
		sum += *v
		per = append(per, *v)
	}
	return sum, per, nil
}
