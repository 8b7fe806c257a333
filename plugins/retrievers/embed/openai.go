package embed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/hayloft/hayloft/plugins/models/openai"
	"github.com/hayloft/hayloft/sdk"
)

// OpenAI embeds through an OpenAI-compatible /v1/embeddings server (vLLM,
// llama.cpp, Ollama, TEI), with the openai model plugin's client: its
// batching, retries with backoff, and error kinds.
type OpenAI struct {
	e        *openai.Embedder
	identity string
	dim      atomic.Int64
}

// NewOpenAI builds an embedder for the server at base (e.g.
// "http://127.0.0.1:8080/v1") serving model. keyEnv names the variable
// holding the API key ("" for none); batch is texts per request (0: the
// client's default). Errors are *sdk.ConfigError with this package's
// option names.
func NewOpenAI(ctx context.Context, base, model, keyEnv string, batch int) (*OpenAI, error) {
	if base == "" {
		return nil, sdk.Configf("embedder", "want \"openai:<base URL>\", e.g. \"openai:http://127.0.0.1:8080/v1\"")
	}
	// The model is part of the cache key, so it cannot be left for the
	// server to choose: two models behind one URL would share vectors.
	if model == "" {
		return nil, sdk.Configf("embedding_model", "required with an openai embedder (it names the cached vectors)")
	}
	opts := map[string]any{"base_url": base, "model": model}
	if keyEnv != "" {
		opts["api_key_env"] = keyEnv
	}
	if batch != 0 {
		opts["batch_size"] = batch
	}
	e, err := openai.NewEmbedder(ctx, sdk.MustOptions(opts))
	if err != nil {
		var ce *sdk.ConfigError
		if errors.As(err, &ce) {
			// The URL is written inside our "embedder" option.
			if ce.Field == "base_url" {
				return nil, &sdk.ConfigError{Field: "embedder", Msg: ce.Msg}
			}
		}
		return nil, err
	}
	id := "openai:" + strings.TrimRight(base, "/") + ":" + model
	return &OpenAI{e: e, identity: id}, nil
}

// Identity is "openai:<base URL>:<model>"; the key is never part of it.
func (o *OpenAI) Identity() string { return o.identity }

// Dim is the length of the vectors the server last returned, 0 before.
func (o *OpenAI) Dim() int { return int(o.dim.Load()) }

// Embed asks the server for the vectors of texts.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	vecs, err := o.e.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embed with %s: %w", o.identity, err)
	}
	dim := len(vecs[0])
	for i, v := range vecs {
		if len(v) != dim {
			return nil, fmt.Errorf("embed with %s: text %d has %d dimensions, text 0 has %d", o.identity, i, len(v), dim)
		}
	}
	o.dim.Store(int64(dim))
	return vecs, nil
}

// Close releases the client's idle connections.
func (o *OpenAI) Close() error { return o.e.Close() }
