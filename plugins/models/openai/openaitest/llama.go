package openaitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// LlamaConfig makes a Server behave as llama.cpp's llama-server with -np
// slots: each slot computes one request at a time and keeps the tokens of
// the last prompt it computed, which only a request in the same slot can
// reuse. A response reports the reuse as llama-server does, in
// timings.cache_n (at most all but the last prompt token, which is always
// computed), with timings.prompt_n the tokens computed.
//
// A request naming a slot (id_slot) waits for that slot. One that does not
// takes, among the idle slots, the one whose kept prompt shares the most
// with it provided the shared part exceeds Similarity of the kept prompt,
// else the idle slot used longest ago; with every slot busy it waits. That
// is llama-server's choice (--slot-prompt-similarity) as documented.
type LlamaConfig struct {
	Slots       int     // -np [4]
	SlotContext int     // tokens one slot holds, prompt and answer [8192]
	Similarity  float64 // --slot-prompt-similarity [0.5]
	// Hold, when set, is called while a request occupies its slot, before
	// it is answered: a test blocks in it to keep the slot busy.
	Hold func(slot int, prompt string)
}

type llamaSlot struct {
	tokens []int // the last prompt computed
	busy   bool
	used   int64
}

// llamaHost is the slots.
type llamaHost struct {
	cfg   LlamaConfig
	mu    sync.Mutex
	freed *sync.Cond
	slots []llamaSlot
	clock int64
	// prompt and cached count prompt tokens received and reused.
	prompt, cached, pinned int64
	bySlot                 map[string][]int // prompt -> slots it was computed on
}

func newLlamaHost(cfg LlamaConfig) *llamaHost {
	if cfg.Slots <= 0 {
		cfg.Slots = 4
	}
	if cfg.SlotContext <= 0 {
		cfg.SlotContext = 8192
	}
	if cfg.Similarity <= 0 {
		cfg.Similarity = 0.5
	}
	h := &llamaHost{cfg: cfg, slots: make([]llamaSlot, cfg.Slots), bySlot: map[string][]int{}}
	h.freed = sync.NewCond(&h.mu)
	return h
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

// choose is llama-server's pick among idle slots for a request without
// id_slot; -1 when every slot is busy. Called with h.mu held.
func (h *llamaHost) choose(tokens []int) int {
	slots := make([]LlamaSlot, len(h.slots))
	for i, s := range h.slots {
		slots[i] = LlamaSlot{Tokens: s.tokens, Busy: s.busy, Used: s.used}
	}
	return LlamaPick(slots, tokens, h.cfg.Similarity)
}

// LlamaSlot is a slot as llama-server's choice sees it: the prompt it
// keeps, whether it is busy, and when it was last used.
type LlamaSlot struct {
	Tokens []int
	Busy   bool
	Used   int64
}

// LlamaPick is llama-server's choice of a slot for a request that names
// none: among the idle slots, the one whose kept prompt shares the most
// with tokens, provided the shared part exceeds similarity of the kept
// prompt; else the idle slot used longest ago; -1 when all are busy.
func LlamaPick(slots []LlamaSlot, tokens []int, similarity float64) int {
	best, bestLen := -1, 0
	for i, s := range slots {
		if s.Busy || len(s.Tokens) == 0 {
			continue
		}
		n := commonPrefix(s.Tokens, tokens)
		if n > bestLen && float64(n)/float64(len(s.Tokens)) > similarity {
			best, bestLen = i, n
		}
	}
	if best >= 0 {
		return best
	}
	for i, s := range slots {
		if !s.Busy && (best < 0 || s.Used < slots[best].Used) {
			best = i
		}
	}
	return best
}

// acquire waits for a slot (slot, or any when slot < 0) and marks it busy.
func (h *llamaHost) acquire(ctx context.Context, slot int, tokens []int) (int, bool) {
	stop := context.AfterFunc(ctx, func() {
		h.mu.Lock()
		h.freed.Broadcast()
		h.mu.Unlock()
	})
	defer stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		if ctx.Err() != nil {
			return 0, false
		}
		s := slot
		if s < 0 {
			s = h.choose(tokens)
		}
		if s >= 0 && !h.slots[s].busy {
			h.slots[s].busy = true
			return s, true
		}
		h.freed.Wait()
	}
}

// compute runs a prompt on slot s: what it reuses, and the slot now keeps
// the prompt.
func (h *llamaHost) compute(s int, prompt string, tokens []int) (cacheN int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sl := &h.slots[s]
	cacheN = min(commonPrefix(sl.tokens, tokens), max(len(tokens)-1, 0))
	sl.tokens = tokens
	h.clock++
	sl.used = h.clock
	h.prompt += int64(len(tokens))
	h.cached += int64(cacheN)
	h.bySlot[prompt] = append(h.bySlot[prompt], s)
	return cacheN
}

func (h *llamaHost) release(s int) {
	h.mu.Lock()
	h.slots[s].busy = false
	h.mu.Unlock()
	h.freed.Broadcast()
}

// run answers one chat request's prompt in a slot; it writes the error and
// reports false when it cannot.
func (h *llamaHost) run(w http.ResponseWriter, r *http.Request, done <-chan struct{}, req ChatRequest, prompt string) (cacheN int, ok bool) {
	slot := -1
	if raw, set := req.Extra["id_slot"]; set {
		if err := json.Unmarshal(raw, &slot); err != nil || slot >= len(h.slots) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("id_slot %s: want a slot below %d", raw, len(h.slots)), "invalid_request_error")
			return 0, false
		}
	}
	tokens := Tokens(prompt)
	if len(tokens)+req.MaxTokens > h.cfg.SlotContext {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the request exceeds the available context size (%d tokens), try increasing it", h.cfg.SlotContext), "exceed_context_size_error")
		return 0, false
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	s, ok := h.acquire(ctx, slot, tokens)
	if !ok {
		return 0, false
	}
	if slot >= 0 {
		h.mu.Lock()
		h.pinned++
		h.mu.Unlock()
	}
	defer h.release(s)
	if h.cfg.Hold != nil {
		h.cfg.Hold(s, prompt)
	}
	return h.compute(s, prompt, tokens), true
}

// LlamaStats is what a llama-server-mode Server saw.
type LlamaStats struct {
	Prompt, Cached int64 // prompt tokens received, and reused from a slot
	Pinned         int64 // requests that named their slot (id_slot)
	// Slots lists the slots each prompt was computed on.
	Slots map[string][]int
}

// Llama reports what a llama-server-mode Server saw.
func (s *Server) Llama() LlamaStats {
	if s.llama == nil {
		return LlamaStats{}
	}
	h := s.llama
	h.mu.Lock()
	defer h.mu.Unlock()
	slots := make(map[string][]int, len(h.bySlot))
	for k, v := range h.bySlot {
		slots[k] = append([]int(nil), v...)
	}
	return LlamaStats{Prompt: h.prompt, Cached: h.cached, Pinned: h.pinned, Slots: slots}
}

// handleLlamaProps answers /props: one slot's context and the slots.
func (h *llamaHost) props() map[string]any {
	return map[string]any{"default_generation_settings": map[string]any{"n_ctx": h.cfg.SlotContext}, "total_slots": len(h.slots)}
}

// slotsReport answers /slots.
func (h *llamaHost) slotsReport() []any {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]any, len(h.slots))
	for i, s := range h.slots {
		out[i] = map[string]any{"id": i, "n_ctx": h.cfg.SlotContext, "is_processing": s.busy}
	}
	return out
}
