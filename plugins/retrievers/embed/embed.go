// Package embed turns chunks and questions into vectors for the cosine
// retriever: an offline feature-hashing TF-IDF embedder (Hashing), any
// OpenAI-compatible /v1/embeddings server (OpenAI), and a cache (Cache) that
// keeps vectors in memory and in the hayloft journal, keyed by the
// embedder's identity and the SHA-256 of the text, so a second ablation over
// the same documents embeds nothing again.
package embed

import (
	"context"
	"math"
	"strings"

	"github.com/hayloft/hayloft/sdk"
)

// Embedder maps texts to vectors. Implementations are safe for concurrent
// use, and a text's vector depends on that text alone (not on the others in
// the call), which is what makes vectors cacheable per text.
type Embedder interface {
	// Identity names the embedder and everything that changes its vectors
	// (server, model, hashing parameters) but no secret; it is the cache
	// key's first half.
	Identity() string
	// Dim is the vector length, or 0 while unknown (a server's, before its
	// first answer).
	Dim() int
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Weigher is an optional Embedder interface for embedders whose vectors are
// term statistics that must be weighted by the collection they are searched
// in, as TF-IDF weighs terms by their rarity among a document's chunks.
// A retriever fits the weights on a document's chunk vectors and applies
// them (Apply) to those vectors and to every query against that document.
type Weigher interface {
	Weights(docs [][]float32) []float32
}

// Apply multiplies v by the weights w in place, then scales it to unit
// length. A nil w only normalises.
func Apply(w, v []float32) {
	if w != nil {
		for i := range v {
			v[i] *= w[i]
		}
	}
	Normalize(v)
}

// Normalize scales v to unit L2 length in place; a zero vector stays zero.
func Normalize(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
}

// Config is how a retriever's options name an embedder. The JSON names are
// the retrievers' option names.
type Config struct {
	// Embedder is "hashing", "hashing:dim=2048,words=2,chars=3", or
	// "openai:<base URL>" for an OpenAI-compatible server, e.g.
	// "openai:http://127.0.0.1:8080/v1". Default "hashing".
	Embedder string `json:"embedder"`
	// Model is the served embedding model (openai only; required, since it
	// is part of the cache key).
	Model string `json:"embedding_model"`
	// APIKeyEnv names the environment variable holding the server's key.
	APIKeyEnv string `json:"api_key_env"`
	// BatchSize is the number of texts per request (openai only).
	BatchSize int `json:"batch_size"`
}

// New builds the embedder c names. Errors are *sdk.ConfigError naming the
// option at fault.
func New(ctx context.Context, c Config) (Embedder, error) {
	kind, arg, _ := strings.Cut(c.Embedder, ":")
	if kind != "openai" {
		for _, f := range []struct {
			name string
			set  bool
		}{{"embedding_model", c.Model != ""}, {"api_key_env", c.APIKeyEnv != ""}, {"batch_size", c.BatchSize != 0}} {
			if f.set {
				return nil, sdk.Configf(f.name, "only applies to embedder = \"openai:<url>\"")
			}
		}
	}
	switch kind {
	case "", HashingName:
		h, err := ParseHashing(arg)
		if err != nil {
			return nil, sdk.Configf("embedder", "%v", err)
		}
		return h, nil
	case "openai":
		return NewOpenAI(ctx, arg, c.Model, c.APIKeyEnv, c.BatchSize)
	}
	return nil, sdk.Configf("embedder", "want \"hashing\" or \"openai:<base URL>\", got %q", c.Embedder)
}
