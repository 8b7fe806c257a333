package openai

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/hayloft/hayloft/sdk"
)

// tokStyle is the /tokenize dialect a server speaks.
type tokStyle int

const (
	styleUnknown tokStyle = iota
	styleVLLM             // {"model","prompt"} -> {"tokens","count",…}
	styleLlama            // {"content"} -> {"tokens"}
	styleNone             // no /tokenize
)

// tokenizeParallel bounds the /tokenize calls of one Tokenize: enough to
// hide latency, few enough not to compete with generation on the server.
const tokenizeParallel = 8

type tokenizer struct {
	mu     sync.Mutex // guards style and counts; held during detection
	style  tokStyle
	counts map[[32]byte]int
}

// Tokenize returns the server's token ids for each text, through its
// /tokenize endpoint (vLLM or llama.cpp dialect, detected on first use).
// Special tokens are not added: these are counts of the text itself.
// Without tokenizer = "model", or when the server has no /tokenize, the
// error wraps sdk.ErrUnsupported so the kernel falls back to its own
// tokenizer.
func (c *Client) Tokenize(ctx context.Context, req *sdk.TokenizeRequest) (*sdk.TokenizeResponse, error) {
	if c.s.tokenizer != "model" {
		return nil, fmt.Errorf("openai: token counting by the server is off (set tokenizer = \"model\" to use its /tokenize): %w", sdk.ErrUnsupported)
	}
	out := make([][]int, len(req.Texts))
	err := each(ctx, len(req.Texts), tokenizeParallel, func(ctx context.Context, i int) error {
		ids, err := c.tokenizeOne(ctx, req.Texts[i])
		out[i] = ids
		return err
	})
	if err != nil {
		return nil, err
	}
	return &sdk.TokenizeResponse{Tokens: out, Tokenizer: "model:" + c.Model()}, nil
}

// CountTokens is Tokenize reduced to counts, cached by the text's SHA-256:
// the kernel measures the same contexts for every model and retry, and a
// 128K-token /tokenize round trip is not free.
func (c *Client) CountTokens(ctx context.Context, texts []string) ([]int, error) {
	if c.s.tokenizer != "model" {
		return nil, fmt.Errorf("openai: token counting by the server is off (set tokenizer = \"model\" to use its /tokenize): %w", sdk.ErrUnsupported)
	}
	out := make([]int, len(texts))
	err := each(ctx, len(texts), tokenizeParallel, func(ctx context.Context, i int) error {
		key := sha256.Sum256([]byte(texts[i]))
		c.tok.mu.Lock()
		n, ok := c.tok.counts[key]
		c.tok.mu.Unlock()
		if ok {
			out[i] = n
			return nil
		}
		ids, err := c.tokenizeOne(ctx, texts[i])
		out[i] = len(ids)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Client) tokenizeOne(ctx context.Context, text string) ([]int, error) {
	style, err := c.tokenStyle(ctx)
	if err != nil {
		return nil, err
	}
	ids, _, err := c.tokenizeAs(ctx, style, text)
	if err != nil {
		return nil, fmt.Errorf("openai: tokenize: %w", err)
	}
	key := sha256.Sum256([]byte(text))
	c.tok.mu.Lock()
	c.tok.counts[key] = len(ids)
	c.tok.mu.Unlock()
	return ids, nil
}

// tokenStyle detects the dialect once. vLLM is tried first because its
// answer carries "count", which tells it apart: llama-server answers a
// vLLM-shaped body with 200 and an empty list instead of an error.
func (c *Client) tokenStyle(ctx context.Context) (tokStyle, error) {
	c.tok.mu.Lock()
	defer c.tok.mu.Unlock()
	switch c.tok.style {
	case styleNone:
		return 0, c.noTokenize()
	case styleVLLM, styleLlama:
		return c.tok.style, nil
	}
	const probe = "hello world"
	_, vStatus, vErr := c.tokenizeAs(ctx, styleVLLM, probe)
	if vErr == nil {
		c.tok.style = styleVLLM
		return styleVLLM, nil
	}
	ids, lStatus, lErr := c.tokenizeAs(ctx, styleLlama, probe)
	if lErr == nil && len(ids) > 0 {
		c.tok.style = styleLlama
		return styleLlama, nil
	}
	if missing(vStatus) && missing(lStatus) {
		c.tok.style = styleNone
		return 0, c.noTokenize()
	}
	// Something else went wrong (the server is down, say): do not remember
	// a verdict, the next call tries again.
	if lErr == nil {
		lErr = errors.New("empty token list")
	}
	return 0, fmt.Errorf("openai: detect the /tokenize dialect of %s: as vLLM: %v; as llama.cpp: %w", c.s.root, vErr, lErr)
}

func missing(status int) bool {
	return status == http.StatusNotFound || status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented
}

func (c *Client) noTokenize() error {
	return fmt.Errorf("openai: %s/tokenize is not served (vLLM and llama.cpp's llama-server provide it; other servers need tokenizer unset): %w", c.s.root, sdk.ErrUnsupported)
}

// tokenizeAs calls /tokenize in one dialect; status is that of the last
// attempt.
func (c *Client) tokenizeAs(ctx context.Context, style tokStyle, text string) ([]int, int, error) {
	var body map[string]any
	var ids []int
	parse := func(raw []byte) error {
		var out struct {
			Tokens []int `json:"tokens"`
			Count  *int  `json:"count"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("decode /tokenize answer: %w", err)
		}
		if out.Tokens == nil {
			return errors.New("/tokenize answer has no tokens")
		}
		if style == styleVLLM && out.Count == nil {
			return errors.New("/tokenize answer has no count: not vLLM")
		}
		ids = out.Tokens
		return nil
	}
	switch style {
	case styleVLLM:
		body = map[string]any{"model": c.Model(), "prompt": text, "add_special_tokens": false}
	case styleLlama:
		body = map[string]any{"content": text}
	}
	attempts, err := c.do(ctx, "POST", c.s.root+"/tokenize", body, parse)
	status := 0
	if len(attempts) > 0 {
		status = attempts[len(attempts)-1].Status
	}
	return ids, status, err
}

// each runs fn for 0..n-1 with at most par at once, stopping at the first
// error.
func each(ctx context.Context, n, par int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, par)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}
