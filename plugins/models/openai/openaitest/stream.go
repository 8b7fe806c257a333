package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Streaming (stream: true) answers as OpenAI's server-sent events: one
// chat.completion.chunk per token, the finish reason, a last chunk with
// the usage when stream_options.include_usage asks for it, then [DONE].
// In engine mode the first token goes out when the engine has computed
// the prompt, the rest when it has generated them, so that a client can
// time prefill and decode.

// streamOptions are a request's streaming fields.
type streamOptions struct {
	stream, includeUsage, ignoreEOS bool
}

func parseStream(req ChatRequest) (streamOptions, error) {
	var o streamOptions
	if v, ok := req.Extra["stream"]; ok {
		if err := json.Unmarshal(v, &o.stream); err != nil {
			return o, fmt.Errorf("field \"stream\": %w", err)
		}
	}
	if v, ok := req.Extra["stream_options"]; ok {
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if err := json.Unmarshal(v, &so); err != nil {
			return o, fmt.Errorf("field \"stream_options\": %w", err)
		}
		o.includeUsage = so.IncludeUsage
	}
	if v, ok := req.Extra["ignore_eos"]; ok {
		if err := json.Unmarshal(v, &o.ignoreEOS); err != nil {
			return o, fmt.Errorf("field \"ignore_eos\": %w", err)
		}
	}
	return o, nil
}

// padAnswer makes text max tokens long, as a server ignoring the end of
// sequence generates until max_tokens.
func padAnswer(text string, max int) (string, string) {
	n := len(tokenSpans(text))
	if n >= max {
		return text, "length"
	}
	var b strings.Builder
	b.WriteString(text)
	for ; n < max; n++ {
		b.WriteString(" hay")
	}
	return b.String(), "length"
}

// sse writes one streamed answer.
type sse struct {
	mu    sync.Mutex
	w     http.ResponseWriter
	id    string
	model string
	sent  int // tokens sent
}

func startSSE(w http.ResponseWriter, id, model string) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, id: id, model: model}
}

func (s *sse) event(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *sse) chunk(choices []any, usage, timings map[string]any) {
	ev := map[string]any{"id": s.id, "object": "chat.completion.chunk", "created": 0, "model": s.model, "choices": choices}
	if usage != nil {
		ev["usage"] = usage
	}
	if timings != nil {
		ev["timings"] = timings
	}
	s.event(ev)
}

// tokens sends text's tokens from the next unsent one up to upto.
func (s *sse) tokens(text string, upto int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	spans := tokenSpans(text)
	for ; s.sent < min(upto, len(spans)); s.sent++ {
		start := 0
		if s.sent > 0 {
			start = spans[s.sent-1][1] // the space before a token goes with it
		}
		delta := map[string]any{"content": text[start:spans[s.sent][1]]}
		if s.sent == 0 {
			delta["role"] = "assistant"
		}
		s.chunk([]any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}, nil, nil)
	}
}

// finish sends the rest of text, the finish reason, the usage if asked
// and the end of the stream. timings, when not nil, ride on the last chunk
// as llama-server sends them.
func (s *sse) finish(text, reason string, usage, timings map[string]any, o streamOptions) {
	s.tokens(text, len(tokenSpans(text)))
	s.chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": reason}}, nil, nil)
	switch {
	case o.includeUsage:
		s.chunk([]any{}, usage, timings)
	case timings != nil:
		s.chunk([]any{}, nil, timings)
	}
	fmt.Fprint(s.w, "data: [DONE]\n\n")
}
