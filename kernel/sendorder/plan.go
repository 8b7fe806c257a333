package sendorder

import (
	"container/list"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"sort"
)

// Planning (`hayloft plan`) asks, before any request is sent, how much
// prefill a set of prompts costs: at least the size of their shared-prefix
// tree, and in practice what a cache of a given size recomputes when the
// prompts arrive in one order or another.

// Prompt is one request as it would be sent: its text and its length in
// the model's tokens.
type Prompt struct {
	Text   string
	Tokens int
}

// tokensPerByte is p's tokens per byte of text, which converts byte counts
// of its prefixes into tokens.
func (p Prompt) tokensPerByte() float64 {
	if len(p.Text) == 0 {
		return 0
	}
	return float64(p.Tokens) / float64(len(p.Text))
}

// TreeTokens is the size of the prompts' shared-prefix tree in tokens: the
// prefill of a cache that never forgets, each prompt computing only what
// it does not share with an earlier one. In sorted order each prompt adds
// the part after its longest common prefix with its predecessor; that part
// is converted to tokens at the prompt's own tokens per byte. As prompts
// differ in tokens per byte, ComputedPrefill's estimate for an order may
// fall a little (well under 1%) below this.
func TreeTokens(ps []Prompt) int {
	idx := make([]int, len(ps))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return ps[idx[a]].Text < ps[idx[b]].Text })
	total := 0.0
	prev := ""
	for _, i := range idx {
		p := ps[i]
		total += float64(len(p.Text)-lcp(prev, p.Text)) * p.tokensPerByte()
		prev = p.Text
	}
	return int(total + 0.5)
}

// Order is the send order policy gives ps at one request in flight: the
// window is filled as far as it takes, one prompt popped, sent and
// answered, and again.
func Order(policy string, ps []Prompt, opts Options) ([]int, error) {
	w := New[int](policy, opts)
	order := make([]int, 0, len(ps))
	next := 0
	for len(order) < len(ps) {
		for next < len(ps) && !w.Full() {
			w.Push(next, ps[next].Text, next)
			next++
		}
		it, st := w.Pop()
		if st != Popped {
			// Nothing is in flight at one request at a time, so a window
			// that neither gives one nor takes one is stuck.
			return nil, fmt.Errorf("send order %q: stuck after %d of %d prompts", policy, len(order), len(ps))
		}
		order = append(order, it.Value)
		w.Done(it)
	}
	return order, nil
}

// PlanBlockBytes is the block of the planning cache model, in bytes of
// prompt text: 16 tokens (vLLM's default block) at BytesPerToken.
const PlanBlockBytes = 16 * BytesPerToken

// ComputedPrefill is the prefill, in tokens, of sending ps in order through
// a prefix cache of cacheTokens, one request at a time (blockCache's model
// of vLLM's automatic prefix caching).
func ComputedPrefill(ps []Prompt, order []int, cacheTokens int) int {
	c := newBlockCache(cacheTokens)
	seed := maphash.MakeSeed()
	total := 0
	for _, i := range order {
		total += c.prefill(ps[i], blockKeys(seed, ps[i].Text))
	}
	return total
}

// blockCache is the planning cache, a model of vLLM's automatic prefix
// caching at block granularity: a prompt's text is cut into PlanBlockBytes
// blocks, each named by the hash of everything up to its end (blockKeys); a
// prompt reuses its leading run of cached blocks (at most all but its last
// token) and computes the rest; its full blocks then enter the cache, tail
// first, so that least recently used blocks, and among a prompt's the tail
// before the head, are evicted first once the blocks held exceed the cache.
// A block weighs the tokens of its bytes at its prompt's tokens per byte;
// generated tokens are not modelled.
type blockCache struct {
	cap, used float64 // tokens
	at        map[uint64]*list.Element
	lru       list.List // of cachedBlock, most recent at the front
}

type cachedBlock struct {
	key    uint64
	tokens float64
}

func newBlockCache(cacheTokens int) *blockCache {
	return &blockCache{cap: float64(cacheTokens), at: map[uint64]*list.Element{}}
}

// prefill is the tokens p computes, its blocks named keys; they are then
// cached.
func (c *blockCache) prefill(p Prompt, keys []uint64) int {
	hit := 0
	for _, k := range keys {
		if _, ok := c.at[k]; !ok {
			break
		}
		hit += PlanBlockBytes
	}
	tpb := p.tokensPerByte()
	computed := p.Tokens - int(float64(hit)*tpb+0.5)
	if computed < 1 && p.Tokens > 0 {
		computed = 1 // the last token is always computed
	}
	for j := len(keys) - 1; j >= 0; j-- {
		c.touch(keys[j], PlanBlockBytes*tpb)
	}
	return computed
}

func (c *blockCache) touch(k uint64, tokens float64) {
	if c.cap <= 0 {
		return
	}
	if e, ok := c.at[k]; ok {
		c.lru.MoveToFront(e)
		return
	}
	c.at[k] = c.lru.PushFront(cachedBlock{k, tokens})
	c.used += tokens
	for c.used > c.cap+1e-9 {
		e := c.lru.Back()
		b := c.lru.Remove(e).(cachedBlock)
		c.used -= b.tokens
		delete(c.at, b.key)
	}
}

// blockKeys names text's full blocks, each by the hash of the previous
// block's name and its own bytes, so that a name stands for the whole
// prefix.
func blockKeys(seed maphash.Seed, text string) []uint64 {
	n := len(text) / PlanBlockBytes
	keys := make([]uint64, n)
	var h maphash.Hash
	h.SetSeed(seed)
	var prev [8]byte
	for i := range n {
		h.Reset()
		h.Write(prev[:])
		h.WriteString(text[i*PlanBlockBytes : (i+1)*PlanBlockBytes])
		keys[i] = h.Sum64()
		binary.LittleEndian.PutUint64(prev[:], keys[i])
	}
	return keys
}

// Planner estimates, over a stream of prompts, what ComputedPrefill,
// Order and the shared-prefix tree would give for all of them at once,
// holding only what the order's look-ahead and the models need: the
// prompts read ahead (the order's window, within LookaheadSamples and
// LookaheadBytes), the blocks each cache model holds, and each distinct
// block of the tree, named in a Bloom filter (blockSet, some 20 bits
// a block). No prompt's text is kept beyond the window, so planning a grid
// of long prompts takes memory of the look-ahead, not of its prompts.
type Planner struct {
	policy string
	win    Window[Prompt]
	seed   maphash.Seed
	// tree holds the name of every block seen: a prompt's leading run of
	// known blocks is what it shares with an earlier one.
	tree       blockSet
	treeTokens float64
	ordered    *blockCache
	dataset    *blockCache
	figures    PlanFigures
	added      int
}

// PlanFigures are a Planner's estimates, in tokens.
type PlanFigures struct {
	// TreeTokens is the prompts' shared-prefix tree at block granularity:
	// each prompt's text after the full blocks it shares with an earlier
	// one, the least any order computes in ComputedPrefill's model (less
	// a block with a chance of bloomFP per prompt: blockSet).
	TreeTokens int
	// OrderPrefill is ComputedPrefill in the policy's order (Order),
	// DatasetPrefill in the order the prompts came.
	OrderPrefill, DatasetPrefill int
}

// NewPlanner plans for policy (Prefix, Task or Groups) and a cache of
// opts.CacheTokens (≤ 0: DefaultCacheTokens).
func NewPlanner(policy string, opts Options) *Planner {
	if opts.CacheTokens <= 0 {
		opts.CacheTokens = DefaultCacheTokens
	}
	return &Planner{policy: policy, win: New[Prompt](policy, opts), seed: maphash.MakeSeed(),
		ordered: newBlockCache(opts.CacheTokens), dataset: newBlockCache(opts.CacheTokens)}
}

// Add takes the next prompt in the dataset's order.
func (p *Planner) Add(pr Prompt) error {
	keys := blockKeys(p.seed, pr.Text)
	p.figures.DatasetPrefill += p.dataset.prefill(pr, keys)
	// The leading run of known blocks. A block is known only with every
	// block before it, but the run is walked rather than searched, so that
	// a false positive of the set costs one block, not a jump.
	shared := 0
	for shared < len(keys) && p.tree.has(keys[shared]) {
		shared++
	}
	p.treeTokens += float64(len(pr.Text)-shared*PlanBlockBytes) * pr.tokensPerByte()
	for _, k := range keys[shared:] {
		p.tree.add(k)
	}
	for p.win.Full() {
		if sent, err := p.send(); err != nil || !sent {
			return err
		}
	}
	p.win.Push(p.added, pr.Text, pr)
	p.added++
	return nil
}

// send pops the policy's next prompt and computes it, one request at a
// time as Order does; false when the window is empty.
func (p *Planner) send() (bool, error) {
	it, st := p.win.Pop()
	switch st {
	case Empty:
		return false, nil
	case Waiting:
		// Nothing is in flight at one request at a time, so a window
		// that neither gives one nor takes one is stuck.
		return false, fmt.Errorf("send order %q: stuck after %d prompts", p.policy, p.added)
	}
	p.figures.OrderPrefill += p.ordered.prefill(it.Value, blockKeys(p.seed, it.Value.Text))
	p.win.Done(it)
	return true, nil
}

// Finish sends what the window holds and returns the figures.
func (p *Planner) Finish() (PlanFigures, error) {
	for {
		sent, err := p.send()
		if err != nil {
			return p.figures, err
		}
		if !sent {
			break
		}
	}
	p.figures.TreeTokens = int(p.treeTokens + 0.5)
	return p.figures, nil
}
