package runner

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/sdk"
)

// Asker sends one-off requests to a model block of a config — data
// transforms such as XLBench's Fiction-T translation — through the same
// path as an eval's requests: the model's concurrency limit, its decoding
// settings, and the store. Every answer is journaled when it arrives and
// looked up by its request key first, so running a transform again asks the
// model only for what is missing.
type Asker struct {
	h     *modelHandle
	comps *components
	r     *Runner
	// Requests counts requests sent to the model; Cached those answered
	// from the journal.
	Requests, Cached atomic.Int64
}

// NewAsker opens the model block ref ("model.openai.local") of cfg. The
// runner must have a Store. Close the Asker when done.
func (r *Runner) NewAsker(ctx context.Context, cfg *config.Config, ref string) (*Asker, error) {
	if r.opts.Store == nil {
		return nil, errors.New("asker: the runner has no store to journal answers in")
	}
	var comp *config.Component
	var refs []string
	for _, c := range cfg.Components {
		if c.Kind == sdk.KindModel {
			refs = append(refs, c.Ref())
			if c.Ref() == ref {
				comp = c
			}
		}
	}
	if comp == nil {
		msg := fmt.Sprintf("%q is not a model block of the config", ref)
		if s := config.Suggest(ref, refs); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return nil, errors.New(msg)
	}
	comps := newComponents(r.opts.Opener)
	h, err := comps.model(ctx, comp)
	if err != nil {
		comps.closeAll()
		return nil, err
	}
	return &Asker{h: h, comps: comps, r: r}, nil
}

// Close stops the model's plugin.
func (a *Asker) Close() { a.comps.closeAll() }

// Model is the model block's reference.
func (a *Asker) Model() string { return a.h.comp.Ref() }

// Ask returns the model's answer to msgs, from the journal when this exact
// request (model identity, messages, decoding parameters) was answered
// before. Safe for concurrent use; the model's max_concurrency bounds the
// requests in flight.
func (a *Asker) Ask(ctx context.Context, msgs []sdk.Message) (string, error) {
	ans, err := a.r.respond(ctx, a.h, &sdk.GenerateRequest{Messages: msgs, Params: a.h.settings.Params}, nil)
	var ge *generateError
	switch {
	case errors.As(err, &ge):
		a.Requests.Add(1)
		return "", fmt.Errorf("%s: %w", a.h.comp.Ref(), ge.err)
	case err != nil:
		return "", err
	case ans.cached:
		a.Cached.Add(1)
	default:
		a.Requests.Add(1)
	}
	return ans.text, nil
}
