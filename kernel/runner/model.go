package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/limiter"
	"github.com/hayloft/hayloft/kernel/prompt"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/tokenizer"
)

type modelHandle struct {
	model    sdk.Model
	settings config.ModelSettings
	identity store.ModelIdentity
	keyer    *store.Keyer // request keys under identity
	// jobs bounds the samples on their way to the model and at it
	// (retrieval, fitting included), post those journaled and scored after
	// its answer (job.answered); limit bounds the requests at the server.
	jobs  chan struct{}
	post  chan struct{}
	limit *limiter.Limiter
	comp  *config.Component
	// readsSample: the model answers from GenerateRequest.Sample's context
	// (sdk.SampleReader); others get the sample without it.
	readsSample bool
	// window fits prompts to the model (kernel/prompt); its tokenizer is
	// an encoding, or the model's own for tokenizer = "model".
	window prompt.Window
	// cache is the server's prefix cache, learned once (order.go).
	cacheOnce sync.Once
	cache     limiter.PrefixCache
	keyed     bool // the model block sets an API key
}

// newModelHandle prepares a model block for use. Every prompt is measured,
// so each result records the tokens sent, window or not; m may be nil where
// no request will be sent (`hayloft gen`), unless the model counts its own
// tokens.
func newModelHandle(ctx context.Context, comp *config.Component, m sdk.Model) (*modelHandle, error) {
	ms := config.ModelSettings{MaxConcurrency: 8, Truncation: "middle"}
	if comp.Model != nil {
		ms = *comp.Model
	}
	if ms.MaxConcurrency < 1 {
		ms.MaxConcurrency = 1
	}
	var extra map[string]any
	if len(comp.Options) > 0 {
		if err := json.Unmarshal(comp.Options, &extra); err != nil {
			return nil, fmt.Errorf("options: %w", err)
		}
	}
	// A model that answers from the sample (a baseline) sees more than the
	// messages, so the sample belongs in its cache key.
	reads := readsSample(m)
	// An endpoint behind a key (a hosted API, most likely) is not asked
	// for its cache anonymously: the key never leaves the plugin.
	_, keyed := extra["api_key"]
	_, keyedEnv := extra["api_key_env"]
	extra = store.WithoutCredentials(extra)
	if extra == nil {
		extra = map[string]any{}
	}
	if t, ok := m.(sdk.TransportOptioner); ok {
		// What only changes how a request travels (a timeout, retries)
		// changes no answer: the cache holds across it.
		for _, name := range t.TransportOptions() {
			delete(extra, name)
		}
	}
	if reads {
		extra[store.UsesSample] = true
	}
	id := store.ModelIdentity{Component: comp.Type, Instance: comp.Name, Params: ms.Params, Extra: extra}
	id.Endpoint, _ = extra["base_url"].(string)
	id.Model, _ = extra["model"].(string)
	if sm, ok := m.(sdk.ServedModeler); ok && id.Model == "" {
		// The config names no model and the model found out which it
		// answers as (a server's first): without it, a server restarted
		// with another model at the same address would be answered from
		// the first one's journal. A configured model keeps its key.
		id.Model = sm.ServedModel()
	}
	if o, ok := m.(sdk.Originator); ok {
		origin := o.Origin()
		id.Plugin, id.PluginVersion = origin.Plugin, origin.Version
	}
	initial := ms.InitialConcurrency
	if initial <= 0 || initial > ms.MaxConcurrency {
		initial = ms.MaxConcurrency
	}
	keyer, err := store.NewKeyer(id)
	if err != nil {
		return nil, err
	}
	h := &modelHandle{window: prompt.Window{Size: ms.ContextWindow, Strategy: prompt.Strategy(ms.Truncation)}, model: m, settings: ms, identity: id, keyer: keyer, comp: comp, readsSample: reads, keyed: keyed || keyedEnv, jobs: make(chan struct{}, ms.MaxConcurrency), post: make(chan struct{}, ms.MaxConcurrency),
		limit: limiter.New(limiter.Options{Initial: initial, Min: 1, Max: ms.MaxConcurrency})}
	if ms.LoadProbe != "" {
		base, _ := extra["base_url"].(string)
		if base == "" {
			return nil, sdk.Configf("load_probe", "needs the model's base_url")
		}
		probe, err := limiter.Probe(ms.LoadProbe, base)
		if err != nil {
			return nil, sdk.Configf("load_probe", "%v", err)
		}
		h.limit.SetLoadProbe(probe)
	}
	name := tokenizerName(extra)
	if name == "model" {
		if m == nil {
			return nil, sdk.Configf("tokenizer", `"model" needs the model itself`)
		}
		mt, err := newModelTokens(ctx, m)
		if err != nil {
			return nil, err
		}
		h.window.Tokenizer = mt.name
		h.window.Counter = func(ctx context.Context) (prompt.Counter, error) { return mt.counter(ctx), nil }
		return h, nil
	}
	if !slices.Contains(tokenizer.Names(), name) {
		_, err := tokenizer.Get(name) // for its message, which lists the known names
		return nil, sdk.Configf("tokenizer", "%v", err)
	}
	h.window.Tokenizer = name
	// Loaded on first use (prompt.Window.Counter says why).
	h.window.Counter = func(context.Context) (prompt.Counter, error) { return tokenizer.Get(name) }
	return h, nil
}

// tokenizerName is the tokenizer that measures prompts against the window:
// an encoding name, or "model" for the server's own.
func tokenizerName(opts map[string]any) string {
	if s, ok := opts["tokenizer"].(string); ok && s != "" {
		return s
	}
	return "cl100k_base"
}

// tokenizer names what measured a prompt's length.
func (h *modelHandle) tokenizer() string { return h.window.Tokenizer }

func (h *modelHandle) startJob(ctx context.Context) error {
	select {
	case h.jobs <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *modelHandle) endJob() { <-h.jobs }

// generate sends one request under the model's adaptive limit, which backs
// off when the server says it is overloaded and grows back while latency
// holds.
func (h *modelHandle) generate(ctx context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	done, err := h.limit.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := h.model.Generate(ctx, req)
	done(limiter.Outcome{Overloaded: overloaded(resp, err), Err: err})
	return resp, err
}

// overloaded reports whether any attempt was refused for load (429, 503).
func overloaded(resp *sdk.GenerateResponse, err error) bool {
	var attempts []sdk.Attempt
	switch {
	case resp != nil:
		attempts = resp.Attempts
	case err != nil:
		// Only here: errors.As's target escapes, an allocation per
		// request had it run for every answer.
		var ae *sdk.AttemptsError
		if errors.As(err, &ae) {
			attempts = ae.Attempts
		}
	}
	for _, a := range attempts {
		if a.Status == 429 || a.Status == 503 {
			return true
		}
	}
	return false
}

// params are the decoding parameters for smp: the model block's, with the
// benchmark's generation budget when the block sets none.
func (h *modelHandle) params(smp *sdk.Sample) sdk.GenerationParams {
	p := h.settings.Params
	if p.MaxTokens == 0 && smp.MaxNewTokens > 0 {
		p.MaxTokens = smp.MaxNewTokens
	}
	return p
}

// requestSample is the sample as the model receives it: without its
// context unless the model reads it, since the messages carry it already.
func (h *modelHandle) requestSample(smp *bareSample) *sdk.Sample {
	if h.readsSample {
		return smp.full
	}
	return smp.bare()
}
