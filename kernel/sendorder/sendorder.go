// Package sendorder decides the order in which an eval's samples are sent
// to a model, so that a server's prefix cache (vLLM's automatic prefix
// caching, SGLang's radix cache, llama.cpp's slots, hosted prompt caching)
// computes each shared prefix once: several questions about one document,
// one haystack cut to many lengths and depths, the same few-shot examples.
//
// A Window reads a bounded stretch of the task's samples ahead of dispatch
// (Push), gives the next one to send (Pop), and learns when a sent one has
// its prompt computed (Prefilled: its first streamed token, or its answer)
// and when it is done (Done). Three policies:
//
//   - Task: the task's order, no look-ahead;
//   - Prefix (tree.go): the shared-prefix tree of the prompts, walked
//     depth first, each subtree's leader ahead of its siblings, the working
//     set kept inside the server's cache;
//   - Groups (groups.go): hayloft's earlier order (groups by the first 2 KB,
//     a group's first sample alone), kept to measure against (bench/prefix).
package sendorder

// Look-ahead bounds, in samples and in prompt bytes, so that a long-context
// task does not pile documents up in memory.
const (
	LookaheadSamples = 256
	LookaheadBytes   = 16 << 20
)

// Item is a sample read ahead: its place in the task's stream, the prompt
// the order is decided on, and the caller's value.
type Item[T any] struct {
	Seq   int
	Value T
	// Slot is the server slot the request should go to (llama-server's
	// id_slot), where the window was given Options.Slots; -1 otherwise.
	Slot int
	// Leads says that prompts read ahead and not yet sent share at least
	// a worthwhile prefix with it (the tree policies), so they gain from
	// hearing of its prefill before its answer: only then need the model
	// stream, which costs client CPU per request.
	Leads bool
	id    int
}

// Status is the outcome of Pop.
type Status int

const (
	Popped  Status = iota
	Empty          // nothing read ahead
	Waiting        // everything read ahead waits for a prompt in flight
)

// Window is one policy's look-ahead.
type Window[T any] interface {
	// Full reports whether the window holds as much as it may; an empty
	// window always takes one more sample, however large.
	Full() bool
	Push(seq int, prompt string, v T)
	Pop() (Item[T], Status)
	// Prefilled reports that it's prompt has been computed: its first
	// token has come (or its answer, where the server does not stream).
	Prefilled(it Item[T])
	// Done reports that it is answered (Prefilled is implied).
	Done(it Item[T])
}

// Options tune the Prefix policy.
type Options struct {
	// CacheTokens is the server's prefix cache, in tokens; ≤ 0 means
	// DefaultCacheTokens.
	CacheTokens int
	// TokensOf estimates the tokens of a prompt prefix; nil means one
	// token per BytesPerToken bytes, which overestimates for English text
	// (about 4 bytes a token), erring toward a smaller working set.
	TokensOf func(prefix string) int
	// Slots, when > 0, is the server's slots (llama-server's -np), each
	// with a prefix cache of its own: the Prefix policy then pins every
	// request to a slot (Item.Slot), each shared prefix to the slot that
	// holds it, and opens no more groups at once than there are slots
	// (slots.go). CacheTokens is then one slot's context.
	Slots int
	// Assumed says CacheTokens is a guess (no config, no server report):
	// the walk and the leaders still follow the tree, but no request is
	// held back to keep the working set inside a cache of that size. A
	// guess too small would otherwise send one 128K-token prompt at a
	// time to a server with room for dozens.
	Assumed bool
}

// DefaultCacheTokens is assumed when the cache size is not known: a
// conservative figure, a single 32K-token context. A server with less
// would not run the long-context tasks hayloft is for.
const DefaultCacheTokens = 32768

// BytesPerToken is the default token estimate's bytes per token.
const BytesPerToken = 3

// Policy names, as in the eval's order setting; Groups is for measurement.
const (
	Prefix = "prefix"
	Task   = "task"
	Groups = "groups"
)

// New returns a window following policy (Prefix, Task or Groups).
func New[T any](policy string, opts Options) Window[T] {
	switch policy {
	case Task:
		return &taskWindow[T]{}
	case Groups:
		return newGroups[T]()
	}
	return newTree[T](opts)
}

// taskWindow sends samples strictly in the task's order.
type taskWindow[T any] struct {
	items []Item[T]
}

func (w *taskWindow[T]) Full() bool { return len(w.items) > 0 }

func (w *taskWindow[T]) Push(seq int, _ string, v T) {
	w.items = append(w.items, Item[T]{Seq: seq, Value: v, Slot: -1})
}

func (w *taskWindow[T]) Pop() (Item[T], Status) {
	if len(w.items) == 0 {
		return Item[T]{}, Empty
	}
	it := w.items[0]
	w.items = w.items[:0]
	return it, Popped
}

func (w *taskWindow[T]) Prefilled(Item[T]) {}
func (w *taskWindow[T]) Done(Item[T])      {}
