// Package bm25 is the lexical retriever of the RAG ablation: the same chunks
// as the cosine retriever, ranked by Okapi BM25 against the sample's
// question, the top-k kept and joined.
//
// Terms are maximal runs of letters and digits, lowercased, with every CJK
// character a term of its own (embed.Terms). A chunk's score is
//
//	Σ over distinct question terms t:  idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))
//	idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))
//
// with N the document's chunks and df those containing t (Lucene's
// variant, never negative).
//
// Options (all optional): chunk_tokens (500), chunk_overlap (0), chunk_by
// ("tokens" | "chars"), tokenizer ("cl100k_base"), top_k (5), order
// ("document" | "score"), separator ("\n\n"), k1 (1.2), b (0.75).
package bm25

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/hayloft/hayloft/plugins/retrievers/chunk"
	"github.com/hayloft/hayloft/plugins/retrievers/embed"
	"github.com/hayloft/hayloft/sdk"
)

// Name is the retriever's registered name.
const Name = "bm25"

// Okapi BM25's usual parameters.
const (
	DefaultK1 = 1.2
	DefaultB  = 0.75
)

// docCacheSize is how many documents' indexes a retriever keeps.
const docCacheSize = 8

type options struct {
	chunk.Settings
	K1 *float64 `json:"k1"`
	B  *float64 `json:"b"`
}

// Retriever is the BM25 retriever. Build it with New; it is safe for
// concurrent use.
type Retriever struct {
	split chunk.Options
	sel   chunk.Selection
	k1, b float64
	docs  *chunk.DocCache[*index]
}

var _ sdk.Retriever = (*Retriever)(nil)

// New builds the retriever from its options; it is the sdk.RetrieverFactory
// of "bm25". Errors are *sdk.ConfigError naming the option.
func New(ctx context.Context, opts sdk.Options) (sdk.Retriever, error) {
	return NewRetriever(ctx, opts)
}

// NewRetriever is New returning the concrete type.
func NewRetriever(_ context.Context, opts sdk.Options) (*Retriever, error) {
	var o options
	if err := opts.Decode(&o); err != nil {
		return nil, err
	}
	split, sel, err := o.Parse()
	if err != nil {
		return nil, err
	}
	r := &Retriever{split: split, sel: sel, k1: DefaultK1, b: DefaultB,
		docs: chunk.NewDocCache[*index](docCacheSize)}
	if o.K1 != nil {
		if *o.K1 < 0 || math.IsInf(*o.K1, 0) {
			return nil, sdk.Configf("k1", "must be a finite number >= 0, got %v", *o.K1)
		}
		r.k1 = *o.K1
	}
	if o.B != nil {
		if *o.B < 0 || *o.B > 1 {
			return nil, sdk.Configf("b", "must be between 0 and 1, got %v", *o.B)
		}
		r.b = *o.B
	}
	return r, nil
}

// posting is one chunk containing a term.
type posting struct {
	chunk, tf int32
}

// index is one document's chunks as an inverted index.
type index struct {
	chunks   []chunk.Chunk
	postings map[string][]posting
	lengths  []float32 // terms per chunk
	avgLen   float64
}

func build(text string, opts chunk.Options) (*index, error) {
	chunks, err := chunk.Split(text, opts)
	if err != nil {
		return nil, err
	}
	idx := &index{chunks: chunks, postings: map[string][]posting{}, lengths: make([]float32, len(chunks))}
	counts := map[string]int32{}
	total := 0
	for i, c := range chunks {
		n := 0
		embed.Terms(c.Text, func(t string) {
			counts[t]++
			n++
		})
		for t, tf := range counts {
			idx.postings[t] = append(idx.postings[t], posting{int32(i), tf})
		}
		clear(counts)
		idx.lengths[i] = float32(n)
		total += n
	}
	if len(chunks) > 0 {
		idx.avgLen = float64(total) / float64(len(chunks))
	}
	return idx, nil
}

// scores returns every chunk's BM25 score for the question.
func (r *Retriever) scores(idx *index, question string) []float32 {
	scores := make([]float32, len(idx.chunks))
	if idx.avgLen == 0 {
		return scores
	}
	n := float64(len(idx.chunks))
	seen := map[string]bool{}
	embed.Terms(question, func(t string) {
		if seen[t] {
			return
		}
		seen[t] = true
		ps := idx.postings[t]
		if len(ps) == 0 {
			return
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := r.k1 * (1 - r.b + r.b*float64(idx.lengths[p.chunk])/idx.avgLen)
			scores[p.chunk] += float32(idf * tf * (r.k1 + 1) / (tf + norm))
		}
	})
	return scores
}

// Retrieve keeps the chunks of the sample's context that best match its
// question.
func (r *Retriever) Retrieve(ctx context.Context, req *sdk.RetrieveRequest) (*sdk.RetrieveResponse, error) {
	s := req.Sample
	if s == nil {
		return nil, &sdk.RequestError{Code: sdk.CodeBadRequest, Msg: "bm25: request has no sample"}
	}
	if s.Context == "" {
		return &sdk.RetrieveResponse{Details: r.details(nil, nil)}, nil
	}
	if strings.TrimSpace(s.Question) == "" {
		return nil, &sdk.RequestError{Code: sdk.CodeBadRequest, Msg: fmt.Sprintf("bm25: sample %q has no question to retrieve with", s.ID)}
	}
	idx, err := r.docs.Get(ctx, s.Context, func() (*index, error) { return build(s.Context, r.split) })
	if err != nil {
		return nil, fmt.Errorf("bm25: sample %q: %w", s.ID, err)
	}
	hits := chunk.TopK(r.scores(idx, s.Question), r.sel.TopK)
	text, kept := r.sel.Assemble(idx.chunks, hits)
	return &sdk.RetrieveResponse{Context: text, Chunks: kept, Details: r.details(idx, kept)}, nil
}

func (r *Retriever) details(idx *index, kept []sdk.Chunk) map[string]any {
	n := 0
	if idx != nil {
		n = len(idx.chunks)
	}
	d := chunk.Details(Name, r.split, r.sel, n, kept)
	d["k1"], d["b"] = r.k1, r.b
	return d
}
