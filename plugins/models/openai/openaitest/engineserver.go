package openaitest

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// engineHost runs an Engine behind the HTTP handlers: requests join it as
// they arrive and a loop steps it while any is waiting or running. The
// engine's clock is simulated; the loop paces it in real time only with
// EngineConfig.RealTime, and then tells requests of their first token and
// their end once the step that made them has taken its time.
type engineHost struct {
	mu     sync.Mutex
	wake   *sync.Cond
	e      *Engine
	stop   bool
	notify []func() // callbacks of the step just taken
}

func newEngineHost(cfg EngineConfig) *engineHost {
	h := &engineHost{e: NewEngine(cfg)}
	h.wake = sync.NewCond(&h.mu)
	go h.loop()
	return h
}

func (h *engineHost) loop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		for !h.stop && !h.e.Busy() {
			h.wake.Wait()
		}
		if h.stop {
			return
		}
		before := h.e.Now
		h.e.Step()
		notify := h.notify
		h.notify = nil
		if h.e.cfg.RealTime {
			h.mu.Unlock()
			time.Sleep(time.Duration((h.e.Now - before) * float64(time.Second)))
			h.mu.Lock()
		}
		for _, f := range notify {
			f()
		}
	}
}

func (h *engineHost) close() {
	h.mu.Lock()
	h.stop = true
	h.mu.Unlock()
	h.wake.Broadcast()
}

// run puts a prompt through the engine and waits for it to finish; it
// reports the prompt tokens found cached, or false if r ended first.
// prefilled, when not nil, is closed when the first token is out.
func (h *engineHost) run(r *http.Request, done <-chan struct{}, prompt string, output int, prefilled chan<- struct{}) (cached int, ok bool) {
	fin := make(chan struct{})
	er := &EngineRequest{ID: fmt.Sprint(len(prompt)), Tokens: Tokens(prompt), Output: output}
	// Called from Step, with h.mu held: delivered after the step.
	er.OnFinish = func(*EngineRequest) { h.notify = append(h.notify, func() { close(fin) }) }
	if prefilled != nil {
		// A request preempted and computed again is prefilled twice.
		var once sync.Once
		er.OnPrefill = func(*EngineRequest) { h.notify = append(h.notify, func() { once.Do(func() { close(prefilled) }) }) }
	}
	h.mu.Lock()
	h.e.Add(er)
	h.mu.Unlock()
	h.wake.Broadcast()
	select {
	case <-fin:
		return er.Cached, true
	case <-r.Context().Done():
	case <-done:
	}
	return 0, false // the engine still finishes it, as vLLM would not
}

// Engine reports the engine's counters: prompt tokens queried, found
// cached and computed, and the simulated time so far.
func (s *Server) Engine() (queries, hits, computed int64, now float64) {
	if s.engine == nil {
		return 0, 0, 0, 0
	}
	s.engine.mu.Lock()
	defer s.engine.mu.Unlock()
	e := s.engine.e
	return e.Queries, e.Hits, e.Computed, e.Now
}

// handleServerInfo answers SGLang's /get_server_info.
func (s *Server) handleServerInfo(w http.ResponseWriter, r *http.Request) {
	if s.engine == nil || s.engine.e.cfg.Reports != "sglang" {
		http.NotFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"max_total_num_tokens": s.engine.e.CacheTokens(), "model_path": s.opts.Model})
}

// handleProps answers llama-server's /props; the engine is one slot.
func (s *Server) handleProps(w http.ResponseWriter, r *http.Request) {
	if s.llama != nil {
		writeJSON(w, http.StatusOK, s.llama.props())
		return
	}
	if s.engine == nil || s.engine.e.cfg.Reports != "llamacpp" {
		http.NotFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"default_generation_settings": map[string]any{"n_ctx": s.engine.e.CacheTokens()}, "total_slots": 1})
}

// writeEngineMetrics adds vLLM's cache metrics: the cache's geometry as
// the labels of vllm:cache_config_info, and the prefix-cache counters.
func (s *Server) writeEngineMetrics(w http.ResponseWriter) {
	s.engine.mu.Lock()
	e := s.engine.e
	cfg, queries, hits := e.cfg, e.Queries, e.Hits
	s.engine.mu.Unlock()
	switch cfg.Reports {
	case "sglang":
		// SGLang (--enable-metrics): prompt tokens and those found cached.
		fmt.Fprintf(w, "# HELP sglang:prompt_tokens_total Number of prefill tokens processed.\n")
		fmt.Fprintf(w, "# TYPE sglang:prompt_tokens_total counter\n")
		fmt.Fprintf(w, "sglang:prompt_tokens_total{model_name=%q} %d.0\n", s.opts.Model, queries)
		fmt.Fprintf(w, "# HELP sglang:cached_tokens_total Number of cached prompt tokens.\n")
		fmt.Fprintf(w, "# TYPE sglang:cached_tokens_total counter\n")
		fmt.Fprintf(w, "sglang:cached_tokens_total{cache_source=\"device\",model_name=%q} %d.0\n", s.opts.Model, hits)
		rate := 0.0
		if queries > 0 {
			rate = float64(hits) / float64(queries)
		}
		fmt.Fprintf(w, "# HELP sglang:cache_hit_rate The prefix cache hit rate.\n")
		fmt.Fprintf(w, "# TYPE sglang:cache_hit_rate gauge\n")
		fmt.Fprintf(w, "sglang:cache_hit_rate{model_name=%q} %g\n", s.opts.Model, rate)
		return
	case "", "vllm":
	default:
		return
	}
	fmt.Fprintf(w, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n")
	fmt.Fprintf(w, "# TYPE vllm:cache_config_info gauge\n")
	fmt.Fprintf(w, "vllm:cache_config_info{block_size=\"%d\",enable_prefix_caching=\"True\",num_gpu_blocks=\"%d\"} 1.0\n", cfg.BlockSize, cfg.NumBlocks)
	fmt.Fprintf(w, "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.\n")
	fmt.Fprintf(w, "# TYPE vllm:prefix_cache_queries_total counter\n")
	fmt.Fprintf(w, "vllm:prefix_cache_queries_total{model_name=%q} %d.0\n", s.opts.Model, queries)
	fmt.Fprintf(w, "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.\n")
	fmt.Fprintf(w, "# TYPE vllm:prefix_cache_hits_total counter\n")
	fmt.Fprintf(w, "vllm:prefix_cache_hits_total{model_name=%q} %d.0\n", s.opts.Model, hits)
}
