package openaitest

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strings"
)

// Engine simulates the scheduler and KV-cache manager of vLLM v1 with
// automatic prefix caching, in simulated time, so that request orders can be
// compared for the prefill they cost without a GPU. The rules it follows:
//
//   - the prompt is cut into blocks of BlockSize tokens; a full block is
//     named by a hash chained over its parent's hash and its tokens, so a
//     block matches only under the same prefix;
//   - a new request's cache hit is the longest run of cached full blocks
//     from the start, capped at n−1 tokens (the last prompt token is always
//     computed, to produce the first output token's logits);
//   - blocks are registered as cached as soon as they are scheduled, so a
//     request admitted later in the same step can already hit them;
//   - a finished request's blocks are freed tail first onto the back of an
//     LRU free list (its deepest blocks become the first to go); allocation
//     takes blocks from the head, evicting their cache entries; a cache hit
//     takes its blocks back off the free list;
//   - each step has a budget of TokenBudget tokens: running requests first
//     (one token per decoding request, a chunk of the rest of the prompt per
//     prefilling one), then waiting requests first come first served, with
//     chunked prefill; admission stops at the first request whose blocks do
//     not fit. A running request that cannot get a block preempts the
//     newest running request (recomputed later, as vLLM v1 does).
//
// Generated tokens are not cached (vLLM caches their blocks too; evaluation
// prompts do not continue earlier answers, so it makes no difference here).
// Time: each step takes StepSeconds + TokenSeconds × its scheduled tokens.
type Engine struct {
	cfg     EngineConfig
	blocks  []kvBlock
	head    int // free list, least recently used first; -1 when empty
	tail    int
	nFree   int
	cached  map[uint64]int // block hash -> block id
	waiting []*EngineRequest
	running []*EngineRequest

	// Now is the simulated time in seconds, Steps the steps taken.
	Now   float64
	Steps int
	// Queries and Hits count prompt tokens looked up in the prefix cache
	// and found there, at each request's first scheduling (vLLM's
	// prefix_cache_queries and prefix_cache_hits); Computed counts prompt
	// tokens computed, recomputation after preemption included.
	Queries, Hits, Computed int64
	Preemptions             int
	trace                   *strings.Builder
}

// EngineConfig sizes an Engine; zero fields take the defaults in brackets.
type EngineConfig struct {
	BlockSize    int     // tokens per KV block [16]
	NumBlocks    int     // KV blocks on the "GPU" (num_gpu_blocks) [8192]
	TokenBudget  int     // tokens per step, max_num_batched_tokens [8192]
	MaxRunning   int     // requests running at once, max_num_seqs [256]
	StepSeconds  float64 // fixed cost of a step [0.01]
	TokenSeconds float64 // cost of each scheduled token [0.0001]
	// Reports is the server whose metadata an engine-mode Server gives
	// its cache size in: "vllm" (/metrics vllm:cache_config_info, the
	// default), "sglang" (/get_server_info max_total_num_tokens) or
	// "llamacpp" (/props n_ctx, one slot); the others answer 404. Its
	// /metrics has the prefix-cache counters under that server's names:
	// vLLM's vllm:prefix_cache_queries_total and _hits_total, SGLang's
	// sglang:prompt_tokens_total and sglang:cached_tokens_total.
	Reports string
	// HideCached leaves the cached count out of responses, as vLLM
	// without --enable-prompt-tokens-details and SGLang without
	// --enable-cache-report do; /metrics still counts.
	HideCached bool
	// RealTime paces the engine: each step takes its simulated time on
	// the wall clock, so that a client can time prefill and decode (at
	// about 1/TokenSeconds prompt tokens and 1/StepSeconds generated
	// tokens a second), as against a real server.
	RealTime bool
}

func (c EngineConfig) withDefaults() EngineConfig {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.BlockSize, 16)
	def(&c.NumBlocks, 8192)
	def(&c.TokenBudget, 8192)
	def(&c.MaxRunning, 256)
	if c.StepSeconds <= 0 {
		c.StepSeconds = 0.01
	}
	if c.TokenSeconds <= 0 {
		c.TokenSeconds = 0.0001
	}
	return c
}

type kvBlock struct {
	refs       int
	hash       uint64
	hashed     bool
	prev, next int // free list links
	inFree     bool
}

// EngineRequest is one request's life in the engine.
type EngineRequest struct {
	ID     string
	Tokens []int
	Output int // tokens to generate (at least 1)

	hashes    []uint64 // chain hashes of the prompt's full blocks
	blocks    []int
	computed  int // prompt tokens with KV (cached or computed)
	generated int
	started   bool

	// Cached is the prompt tokens found in the cache at first scheduling.
	Cached int
	// PrefillDone and Finished are the simulated times at which the
	// prompt was complete (the first token out) and the request was done;
	// Done reports the latter happened.
	PrefillDone, Finished float64
	Done                  bool
	// OnPrefill and OnFinish, when set, are called from Step.
	OnPrefill, OnFinish func(*EngineRequest)
}

// NewEngine returns an empty engine: every block free, nothing cached.
func NewEngine(cfg EngineConfig) *Engine {
	cfg = cfg.withDefaults()
	e := &Engine{cfg: cfg, blocks: make([]kvBlock, cfg.NumBlocks), head: -1, tail: -1, cached: map[uint64]int{}}
	for i := range e.blocks {
		e.pushFree(i)
	}
	return e
}

// Config is the engine's configuration, defaults applied.
func (e *Engine) Config() EngineConfig { return e.cfg }

// CacheTokens is the KV cache's size in tokens (block_size × num_gpu_blocks).
func (e *Engine) CacheTokens() int { return e.cfg.BlockSize * e.cfg.NumBlocks }

// Add queues a request (first come, first served).
func (e *Engine) Add(r *EngineRequest) {
	r.Output = max(r.Output, 1)
	bs := e.cfg.BlockSize
	r.hashes = make([]uint64, len(r.Tokens)/bs)
	var parent uint64
	buf := make([]byte, 8)
	for i := range r.hashes {
		h := fnv.New64a()
		binary.LittleEndian.PutUint64(buf, parent)
		h.Write(buf)
		for _, t := range r.Tokens[i*bs : (i+1)*bs] {
			binary.LittleEndian.PutUint64(buf, uint64(t))
			h.Write(buf)
		}
		parent = h.Sum64()
		r.hashes[i] = parent
	}
	e.waiting = append(e.waiting, r)
}

// Busy reports whether any request is waiting or running.
func (e *Engine) Busy() bool { return len(e.waiting)+len(e.running) > 0 }

func (e *Engine) pushFree(b int) {
	blk := &e.blocks[b]
	blk.prev, blk.next, blk.inFree = e.tail, -1, true
	if e.tail >= 0 {
		e.blocks[e.tail].next = b
	} else {
		e.head = b
	}
	e.tail = b
	e.nFree++
}

func (e *Engine) removeFree(b int) {
	blk := &e.blocks[b]
	if blk.prev >= 0 {
		e.blocks[blk.prev].next = blk.next
	} else {
		e.head = blk.next
	}
	if blk.next >= 0 {
		e.blocks[blk.next].prev = blk.prev
	} else {
		e.tail = blk.prev
	}
	blk.inFree = false
	e.nFree--
}

// takeFree pops the least recently used free block, evicting its cache entry.
func (e *Engine) takeFree() int {
	b := e.head
	e.removeFree(b)
	blk := &e.blocks[b]
	if blk.hashed && e.cached[blk.hash] == b {
		delete(e.cached, blk.hash)
	}
	blk.hashed, blk.refs = false, 1
	return b
}

// hit is the cached blocks of r's prompt, capped at n−1 tokens.
func (e *Engine) hit(r *EngineRequest) []int {
	limit := (len(r.Tokens) - 1) / e.cfg.BlockSize
	var out []int
	for _, h := range r.hashes[:min(limit, len(r.hashes))] {
		b, ok := e.cached[h]
		if !ok {
			break
		}
		out = append(out, b)
	}
	return out
}

// grow gives r blocks for its first upto tokens; false if there are not
// enough free blocks (nothing is taken then).
func (e *Engine) grow(r *EngineRequest, upto int) bool {
	need := (upto+e.cfg.BlockSize-1)/e.cfg.BlockSize - len(r.blocks)
	if need > e.nFree {
		return false
	}
	for range need {
		r.blocks = append(r.blocks, e.takeFree())
	}
	return true
}

// register names r's full prompt blocks below upto tokens in the cache.
func (e *Engine) register(r *EngineRequest, upto int) {
	for i := range min(upto/e.cfg.BlockSize, len(r.hashes)) {
		blk := &e.blocks[r.blocks[i]]
		if blk.hashed {
			continue
		}
		blk.hash, blk.hashed = r.hashes[i], true
		if _, dup := e.cached[blk.hash]; !dup {
			e.cached[blk.hash] = r.blocks[i]
		}
	}
}

// release frees r's blocks, tail first, onto the back of the free list.
func (e *Engine) release(r *EngineRequest) {
	for i := len(r.blocks) - 1; i >= 0; i-- {
		b := r.blocks[i]
		if e.blocks[b].refs--; e.blocks[b].refs == 0 {
			e.pushFree(b)
		}
	}
	r.blocks = nil
}

type scheduled struct {
	r *EngineRequest
	n int
}

// Step runs one scheduler iteration and advances the clock; it reports
// false when there was nothing to do.
func (e *Engine) Step() bool {
	if !e.Busy() {
		return false
	}
	budget := e.cfg.TokenBudget
	var batch []scheduled
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		r := e.running[i]
		n, upto := 1, len(r.Tokens)+r.generated
		if r.computed < len(r.Tokens) {
			n = min(len(r.Tokens)-r.computed, budget)
			upto = r.computed + n
		}
		for !e.grow(r, upto) {
			// Preempt the newest running request to make room.
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.release(victim)
			victim.computed, victim.generated = 0, 0
			e.waiting = append([]*EngineRequest{victim}, e.waiting...)
			e.Preemptions++
			preempted = true
			e.tracef("  preempt %s\n", victim.ID)
			if victim == r {
				break
			}
		}
		if i >= len(e.running) || e.running[i] != r {
			break
		}
		e.register(r, upto)
		batch = append(batch, scheduled{r, n})
		budget -= n
	}
	for !preempted && budget > 0 && len(e.waiting) > 0 && len(e.running) < e.cfg.MaxRunning {
		r := e.waiting[0]
		hit := e.hit(r)
		// Touched blocks still on the free list are not free for the rest.
		touched := 0
		for _, b := range hit {
			if e.blocks[b].refs == 0 {
				touched++
			}
		}
		cachedTokens := len(hit) * e.cfg.BlockSize
		n := min(len(r.Tokens)-cachedTokens, budget)
		need := (cachedTokens+n+e.cfg.BlockSize-1)/e.cfg.BlockSize - len(hit)
		if need > e.nFree-touched {
			break // FCFS: no one passes the first request that does not fit
		}
		for _, b := range hit {
			if e.blocks[b].refs == 0 {
				e.removeFree(b)
			}
			e.blocks[b].refs++
		}
		r.blocks = append(r.blocks[:0], hit...)
		r.computed = cachedTokens
		if !r.started {
			r.started = true
			r.Cached = cachedTokens
			e.Queries += int64(len(r.Tokens))
			e.Hits += int64(cachedTokens)
		}
		e.grow(r, cachedTokens+n)
		e.register(r, cachedTokens+n)
		e.waiting = e.waiting[1:]
		e.running = append(e.running, r)
		batch = append(batch, scheduled{r, n})
		budget -= n
	}
	tokens := e.cfg.TokenBudget - budget
	e.Now += e.cfg.StepSeconds + e.cfg.TokenSeconds*float64(tokens)
	e.Steps++
	e.tracef("step %d:", e.Steps)
	var done []*EngineRequest
	for _, s := range batch {
		r := s.r
		e.tracef(" %s+%d", r.ID, s.n)
		if r.computed < len(r.Tokens) {
			r.computed += s.n
			e.Computed += int64(s.n)
			if r.computed < len(r.Tokens) {
				continue
			}
			// The step that completes the prompt samples the first token.
			r.PrefillDone = e.Now
			if r.OnPrefill != nil {
				r.OnPrefill(r)
			}
		}
		if r.generated++; r.generated >= r.Output {
			done = append(done, r)
		}
	}
	for _, r := range done {
		e.running = deleteReq(e.running, r)
		e.release(r)
		r.Done, r.Finished = true, e.Now
		if r.OnFinish != nil {
			r.OnFinish(r)
		}
	}
	e.tracef(" | free %s\n", e.freeList())
	return true
}

func deleteReq(rs []*EngineRequest, r *EngineRequest) []*EngineRequest {
	for i, x := range rs {
		if x == r {
			return append(rs[:i], rs[i+1:]...)
		}
	}
	return rs
}

// Run steps until every request is done.
func (e *Engine) Run() {
	for e.Step() {
	}
}

func (e *Engine) tracef(format string, args ...any) {
	if e.trace != nil {
		fmt.Fprintf(e.trace, format, args...)
	}
}

// freeList describes the free list head first: block ids, with a * on
// those still cached.
func (e *Engine) freeList() string {
	var parts []string
	for b := e.head; b >= 0; b = e.blocks[b].next {
		s := fmt.Sprint(b)
		if e.blocks[b].hashed && e.cached[e.blocks[b].hash] == b {
			s += "*"
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
