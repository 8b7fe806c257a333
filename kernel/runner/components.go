package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/prompt"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/stats"
	"github.com/hayloft/hayloft/sdk/tokenizer"
)

// components opens each configured component once per run, however many
// evals use it, and closes them all at the end.
type components struct {
	opener Opener
	mu     sync.Mutex
	open_  map[string]any
	errs   map[string]error
	models map[string]*modelHandle
}

func newComponents(o Opener) *components {
	return &components{opener: o, open_: map[string]any{}, errs: map[string]error{}, models: map[string]*modelHandle{}}
}

func (c *components) open(ctx context.Context, comp *config.Component) (any, error) {
	ref := comp.Ref()
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.open_[ref]; ok {
		return v, nil
	}
	if err, ok := c.errs[ref]; ok {
		return nil, err
	}
	v, err := c.opener.Open(ctx, comp.Kind, comp.Type, comp.Plugin, comp.Options)
	if err != nil {
		err = comp.Diag(err)
		c.errs[ref] = err
		return nil, err
	}
	c.open_[ref] = v
	return v, nil
}

func (c *components) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.open_ {
		if cl, ok := v.(io.Closer); ok {
			cl.Close()
		}
	}
}

// model returns the shared handle for a model block: one concurrency bound
// for every eval and retriever that uses the model.
func (c *components) model(ctx context.Context, comp *config.Component, o Opener) (*modelHandle, error) {
	v, err := c.open(ctx, comp)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.models[comp.Ref()]; ok {
		return h, nil
	}
	h, err := newModelHandle(comp, v.(sdk.Model), o, false)
	if err != nil {
		return nil, comp.Diag(err)
	}
	c.models[comp.Ref()] = h
	return h, nil
}

type modelHandle struct {
	model    sdk.Model
	settings config.ModelSettings
	identity store.ModelIdentity
	slots    chan struct{}
	enc      *tokenizer.Encoding // nil when the window is unknown: nothing to fit
}

// newModelHandle prepares a model block for use. With count set, prompts are
// measured even when the window is unknown (for `hayloft gen`).
func newModelHandle(comp *config.Component, m sdk.Model, o Opener, count bool) (*modelHandle, error) {
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
	id := store.ModelIdentity{Component: comp.Type, Params: ms.Params, Extra: extra}
	id.Plugin, id.PluginVersion = "builtin", ""
	if ider, ok := o.(Identifier); ok {
		id.Plugin, id.PluginVersion = ider.Identify(sdk.KindModel, comp.Type, comp.Plugin)
	}
	h := &modelHandle{model: m, settings: ms, identity: id, slots: make(chan struct{}, ms.MaxConcurrency)}
	if ms.ContextWindow > 0 || count {
		enc, err := tokenizer.Get(tokenizerName(extra))
		if err != nil {
			return nil, sdk.Configf("tokenizer", "%v", err)
		}
		h.enc = enc
	}
	return h, nil
}

// tokenizerName is the encoding that measures prompts against the window.
// "model" (the server's own tokenizer) falls back to cl100k_base until the
// kernel brokers Tokenize calls.
func tokenizerName(opts map[string]any) string {
	if s, ok := opts["tokenizer"].(string); ok && s != "" && s != "model" {
		return s
	}
	return "cl100k_base"
}

func (h *modelHandle) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *modelHandle) release() { <-h.slots }

// params are the decoding parameters for smp: the model block's, with the
// benchmark's generation budget when the block sets none.
func (h *modelHandle) params(smp *sdk.Sample) sdk.GenerationParams {
	p := h.settings.Params
	if p.MaxTokens == 0 && smp.MaxNewTokens > 0 {
		p.MaxTokens = smp.MaxNewTokens
	}
	return p
}

type fitted struct {
	messages  []sdk.Message
	tokens    int
	truncated bool
}

// fit renders smp and, when the model's window is known, truncates the
// context so that no request over the window ever reaches the server.
func (h *modelHandle) fit(smp *sdk.Sample) (fitted, error) {
	if h.enc == nil {
		return fitted{messages: smp.Render()}, nil
	}
	if h.settings.ContextWindow == 0 {
		msgs := smp.Render()
		n := 0
		for _, m := range msgs {
			n += h.enc.Count(m.Content)
		}
		return fitted{messages: msgs, tokens: n}, nil
	}
	f, err := prompt.Fit(smp, h.enc, prompt.Limits{
		ContextWindow: h.settings.ContextWindow,
		MaxTokens:     h.params(smp).MaxTokens,
		Strategy:      prompt.Strategy(h.settings.Truncation),
	})
	if err != nil {
		return fitted{}, &sdk.RequestError{Code: "prompt_overflow", Msg: err.Error()}
	}
	return fitted{messages: f.Messages, tokens: f.PromptTokens, truncated: f.Truncated}, nil
}

// aggregate uses the scorer's own corpus-level aggregation when it has one
// (corpus BLEU), else the mean of valid values with a bootstrap interval.
func aggregate(ctx context.Context, sc sdk.Scorer, scores []*sdk.ScoreResponse) (*sdk.AggregateResponse, error) {
	if a, ok := sc.(sdk.Aggregator); ok {
		resp, err := a.Aggregate(ctx, &sdk.AggregateRequest{Scores: scores})
		if err == nil {
			return resp, nil
		}
		if !isUnsupported(err) {
			return nil, err
		}
	}
	return stats.AggregateMean(scores, 1), nil
}

func isUnsupported(err error) bool { return errors.Is(err, sdk.ErrUnsupported) }
