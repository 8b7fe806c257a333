package openai

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hayloft/hayloft/sdk"
)

// embedParallel bounds the batches of one Embed call in flight at once.
const embedParallel = 4

// Embedder calls an OpenAI-compatible /embeddings endpoint. It takes the
// same options as the model (base_url, model, api_key_env, timeout,
// max_retries, …) plus batch_size, and retries the same way. Safe for
// concurrent use.
type Embedder struct {
	c *Client
}

// NewEmbedder builds an Embedder from options.
func NewEmbedder(ctx context.Context, opts sdk.Options) (*Embedder, error) {
	s, err := parseOptions(opts)
	if err != nil {
		return nil, err
	}
	return &Embedder{c: newClient(s)}, nil
}

// Provision fills in the model id from /v1/models when none was configured.
func (e *Embedder) Provision(ctx context.Context) error { return e.c.Provision(ctx) }

// Close releases idle connections.
func (e *Embedder) Close() error { return e.c.Close() }

// Embed returns one vector per text, in the order given, sending batch_size
// texts per request.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	size := e.c.s.batch
	batches := (len(texts) + size - 1) / size
	err := each(ctx, batches, embedParallel, func(ctx context.Context, b int) error {
		lo, hi := b*size, min((b+1)*size, len(texts))
		vecs, err := e.batch(ctx, texts[lo:hi])
		if err != nil {
			return fmt.Errorf("openai: embed texts %d-%d: %w", lo, hi-1, err)
		}
		copy(out[lo:hi], vecs)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (e *Embedder) batch(ctx context.Context, texts []string) ([][]float32, error) {
	body := map[string]any{"input": texts, "encoding_format": "float"}
	if m := e.c.Model(); m != "" {
		body["model"] = m
	}
	var vecs [][]float32
	_, err := e.c.do(ctx, "POST", e.c.s.base+"/embeddings", body, func(raw []byte) error {
		var out struct {
			Data []struct {
				Index     int       `json:"index"`
				Embedding []float32 `json:"embedding"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("decode embeddings: %w", err)
		}
		// Items are matched by index, never by position: the API does not
		// promise order.
		vecs = make([][]float32, len(texts))
		for _, d := range out.Data {
			if d.Index < 0 || d.Index >= len(texts) || vecs[d.Index] != nil {
				return fmt.Errorf("embedding index %d out of range or repeated (batch of %d)", d.Index, len(texts))
			}
			if len(d.Embedding) == 0 || (len(vecs) > 0 && vecs[0] != nil && len(d.Embedding) != len(vecs[0])) {
				return fmt.Errorf("embedding %d has %d dimensions", d.Index, len(d.Embedding))
			}
			vecs[d.Index] = d.Embedding
		}
		for i, v := range vecs {
			if v == nil {
				return fmt.Errorf("no embedding for input %d of %d", i, len(texts))
			}
		}
		return nil
	})
	return vecs, err
}
