package chunk

import (
	"cmp"
	"container/heap"
	"slices"
	"strings"

	"github.com/hayloft/hayloft/sdk"
)

// DefaultTopK is the number of chunks kept (XLBench's N = 5).
const DefaultTopK = 5

// Orders in which kept chunks are concatenated.
const (
	OrderDocument = "document" // as they appear in the document (the default)
	OrderScore    = "score"    // best first
)

// DefaultSeparator goes between kept chunks.
const DefaultSeparator = "\n\n"

// Selection are the options every retriever shares for picking and joining
// chunks, with the retrievers' option names.
type Selection struct {
	TopK  int    `json:"top_k"`
	Order string `json:"order"`
	// Separator is a pointer so that "" (join with nothing) differs from
	// unset.
	Separator *string `json:"separator"`
}

// WithDefaults returns s with its zero fields filled in.
func (s Selection) WithDefaults() Selection {
	if s.TopK == 0 {
		s.TopK = DefaultTopK
	}
	if s.Order == "" {
		s.Order = OrderDocument
	}
	if s.Separator == nil {
		sep := DefaultSeparator
		s.Separator = &sep
	}
	return s
}

// Check validates s; errors are *sdk.ConfigError naming the option.
func (s Selection) Check() error {
	s = s.WithDefaults()
	if s.TopK < 0 {
		return sdk.Configf("top_k", "must be positive, got %d", s.TopK)
	}
	if s.Order != OrderDocument && s.Order != OrderScore {
		return sdk.Configf("order", "want %q or %q, got %q", OrderDocument, OrderScore, s.Order)
	}
	return nil
}

// Hit is a scored chunk.
type Hit struct {
	ID    int
	Score float32
}

// better orders hits best first: higher score, then the earlier chunk, so
// ties resolve the same way on every run.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.ID < b.ID
}

// hitHeap is a min-heap on better: the root is the worst hit kept so far.
type hitHeap []Hit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return better(h[j], h[i]) }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(Hit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// TopK returns the k best of scores (scores[i] is chunk i's), best first,
// ties going to the earlier chunk. It keeps a k-element heap: O(n log k),
// with almost every score rejected by one comparison against the root.
func TopK(scores []float32, k int) []Hit {
	k = min(k, len(scores))
	if k <= 0 {
		return nil
	}
	h := make(hitHeap, 0, k)
	for i, s := range scores {
		hit := Hit{ID: i, Score: s}
		if len(h) < k {
			heap.Push(&h, hit)
			continue
		}
		if better(hit, h[0]) {
			h[0] = hit
			heap.Fix(&h, 0)
		}
	}
	out := []Hit(h)
	slices.SortFunc(out, func(a, b Hit) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	return out
}

// Assemble joins the kept chunks in the selection's order and reports them
// as the sdk describes them. hits must come best first, as TopK returns them.
func (s Selection) Assemble(chunks []Chunk, hits []Hit) (string, []sdk.Chunk) {
	s = s.WithDefaults()
	kept := slices.Clone(hits)
	if s.Order == OrderDocument {
		slices.SortFunc(kept, func(a, b Hit) int { return cmp.Compare(a.ID, b.ID) })
	}
	var b strings.Builder
	out := make([]sdk.Chunk, len(kept))
	for i, h := range kept {
		c := chunks[h.ID]
		if i > 0 {
			b.WriteString(*s.Separator)
		}
		b.WriteString(c.Text)
		out[i] = sdk.Chunk{ID: c.ID, Offset: c.Offset, Score: float64(h.Score)}
	}
	return b.String(), out
}

// Details describes one retrieval for the journal: the retriever, its
// chunking and selection settings, how many chunks the document had, and
// the kept chunk ids and scores, so that a report can put
// full-context and RAG rows side by side. Retrievers add their own keys.
func Details(retriever string, split Options, sel Selection, chunks int, kept []sdk.Chunk) map[string]any {
	split, sel = split.WithDefaults(), sel.WithDefaults()
	d := map[string]any{
		"retriever":     retriever,
		"chunk_by":      split.By,
		"chunk_tokens":  split.Size,
		"chunk_overlap": split.Overlap,
		"top_k":         sel.TopK,
		"order":         sel.Order,
		"chunks":        chunks,
	}
	if split.By == ByTokens {
		d["tokenizer"] = split.Tokenizer
	}
	ids := make([]int, len(kept))
	scores := make([]float64, len(kept))
	for i, c := range kept {
		ids[i], scores[i] = c.ID, c.Score
	}
	d["kept"], d["scores"] = ids, scores
	return d
}

// Settings are the options every chunking retriever takes, as the config
// names them. Embed it in a retriever's options struct.
type Settings struct {
	ChunkTokens  int     `json:"chunk_tokens"`
	ChunkOverlap int     `json:"chunk_overlap"`
	ChunkBy      string  `json:"chunk_by"`
	Tokenizer    string  `json:"tokenizer"`
	TopK         int     `json:"top_k"`
	Order        string  `json:"order"`
	Separator    *string `json:"separator"`
}

// Parse checks the settings and returns how to split and what to keep, with
// defaults filled in. Errors are *sdk.ConfigError naming the option.
func (s Settings) Parse() (Options, Selection, error) {
	split := Options{Size: s.ChunkTokens, Overlap: s.ChunkOverlap, By: s.ChunkBy, Tokenizer: s.Tokenizer}
	if err := split.Check(); err != nil {
		return Options{}, Selection{}, err
	}
	sel := Selection{TopK: s.TopK, Order: s.Order, Separator: s.Separator}
	if err := sel.Check(); err != nil {
		return Options{}, Selection{}, err
	}
	return split.WithDefaults(), sel.WithDefaults(), nil
}
