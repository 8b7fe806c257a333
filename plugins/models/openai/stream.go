package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hayloft/hayloft/sdk"
)

// Streaming exists for one reason: its first token tells when the server
// has computed the prompt, and with it the shared prefix that other
// requests of the kernel's send order wait for (sdk.Prefilled). The answer
// assembled from the stream is the one the server would have sent whole:
// the same text, finish reason and usage, the cached tokens included
// (stream_options.include_usage; llama-server's timings ride on its last
// chunk).

// Stream settings (Options.Stream).
const (
	StreamAuto = "auto" // stream when the kernel listens for the prefill
	StreamOn   = "on"
	StreamOff  = "off"
)

// streams reports whether a request made with ctx should stream.
func (c *Client) streams(ctx context.Context) bool {
	switch c.s.stream {
	case StreamOn:
		return true
	case StreamOff:
		return false
	}
	return sdk.WantsPrefill(ctx)
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chunk is what is read of one streamed event.
type chunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content *string `json:"content"`
		} `json:"delta"`
		Text         *string `json:"text"` // legacy completions
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage   *usage          `json:"usage"`
	Timings *timings        `json:"timings"`
	Error   json.RawMessage `json:"error"`
}

// streamed is an answer assembled from its chunks.
type streamed struct {
	text    strings.Builder
	reason  string
	usage   usage
	timings *timings
	done    bool // [DONE] came
}

// readStream reads server-sent events from r into out, calling
// sdk.Prefilled(ctx) at the first token (or the finish, for an empty
// answer). Errors from r are returned as they are (transport failures);
// the others are bad answers.
func readStream(ctx context.Context, r io.Reader, out *streamed) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxBody)
	var ch chunk
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // blank separators, comments, event names
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			out.done = true
			break
		}
		ch = chunk{}
		if err := json.Unmarshal(data, &ch); err != nil {
			return fmt.Errorf("decode streamed chunk: %w", err)
		}
		if len(ch.Error) > 0 {
			_, msg := errorBody(data)
			return fmt.Errorf("server error in the stream: %s", msg)
		}
		for _, c := range ch.Choices {
			if c.Index != 0 {
				continue
			}
			part := c.Delta.Content
			if c.Text != nil {
				part = c.Text
			}
			if part != nil && *part != "" {
				out.text.WriteString(*part)
				sdk.Prefilled(ctx)
			}
			if c.FinishReason != nil && *c.FinishReason != "" {
				out.reason = *c.FinishReason
				sdk.Prefilled(ctx)
			}
		}
		if ch.Usage != nil {
			out.usage = *ch.Usage
		}
		if ch.Timings != nil {
			out.timings = ch.Timings
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if !out.done {
		// A cut connection, not an answer: retried like one.
		return &bodyError{errors.New("stream ended before [DONE]")}
	}
	if out.reason == "" {
		return errors.New("stream ended without a finish reason")
	}
	return nil
}

// generateStream sends body with streaming on and assembles the answer.
func (c *Client) generateStream(ctx context.Context, body *request) (*sdk.GenerateResponse, error) {
	body.Stream = true
	body.StreamOptions = &streamOptions{IncludeUsage: true}
	payload, err := c.requestBody(body)
	if err != nil {
		return nil, fmt.Errorf("encode request for %s: %w", c.genURL, err)
	}
	chat := c.s.endpoint == "chat"
	var resp *sdk.GenerateResponse
	attempts, err := c.sendBody(ctx, "POST", c.genURL, payload, func(r io.Reader) error {
		br := bufio.NewReader(r)
		if first, _ := br.Peek(1); len(first) == 1 && first[0] == '{' {
			// A server or proxy that ignores "stream" answers whole.
			var out generateResponse
			return buffered(func(raw []byte) error {
				if err := out.decode(raw, chat); err != nil {
					return err
				}
				sdk.Prefilled(ctx)
				resp = out.answer(chat)
				return nil
			})(br)
		}
		var out streamed
		if err := readStream(ctx, br, &out); err != nil {
			return err
		}
		resp = &sdk.GenerateResponse{Text: out.text.String(), FinishReason: out.reason, Usage: sdkUsage(out.usage, out.timings)}
		return nil
	})
	if err != nil {
		return nil, c.classify(ctx, err)
	}
	c.answered.Store(true)
	c.connFails.Store(0)
	resp.Attempts = attempts
	return resp, nil
}
