package runner

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/limiter"

	"github.com/hayloft/hayloft/kernel/sendorder"
	"github.com/hayloft/hayloft/sdk"
)

// Samples whose prompts begin alike share work on a server with a prefix
// cache (vLLM's automatic prefix caching, SGLang's radix cache, llama.cpp's
// slots, hosted prompt caching): several questions about one document, one
// haystack cut to many lengths. Package sendorder decides the order, over a
// bounded look-ahead: the prompts' shared-prefix tree walked depth first,
// each subtree's leader before its siblings, and no more documents begun at
// once than the cache holds. An eval with order = "task" sends samples
// strictly in the task's order.
//
// The order is decided on each sample's prompt as rendered; where fitting a
// model's window truncates the context, what is sent differs after the cut.

// newWindow returns the look-ahead for an eval's phase, sized to the
// smallest prefix cache among its models.
func (r *Runner) newWindow(ctx context.Context, order string, rows []*row) sendorder.Window[*sdk.Sample] {
	var opts sendorder.Options
	if order != config.OrderTask {
		opts = r.cacheTokens(ctx, rows)
	}
	return sendorder.New[*sdk.Sample](order, opts)
}

// learnTimeout bounds asking a server for its cache size.
const learnTimeout = 5 * time.Second

// prefixCache is the model's prefix cache: the model block's
// prefix_cache_tokens, else what its server reports, else
// sendorder.DefaultCacheTokens. Learned once, and logged with its source.
func (r *Runner) prefixCache(ctx context.Context, h *modelHandle) limiter.PrefixCache {
	h.cacheOnce.Do(func() {
		assumed := true
		switch {
		case h.settings.PrefixCacheTokens > 0:
			h.cache = limiter.PrefixCache{Tokens: h.settings.PrefixCacheTokens, Source: "prefix_cache_tokens in config"}
			assumed = false
		case h.keyed:
			h.cache = limiter.PrefixCache{Tokens: sendorder.DefaultCacheTokens, Source: "default: a server behind an API key is not asked (set prefix_cache_tokens)"}
		case h.identity.Endpoint != "":
			lctx, cancel := context.WithTimeout(ctx, learnTimeout)
			pc, err := limiter.LearnPrefixCache(lctx, h.identity.Endpoint)
			cancel()
			if err == nil {
				h.cache, assumed = pc, false
				break
			}
			h.cache = limiter.PrefixCache{Tokens: sendorder.DefaultCacheTokens, Source: "default: the server does not report its cache (set prefix_cache_tokens)"}
		default:
			h.cache = limiter.PrefixCache{Tokens: sendorder.DefaultCacheTokens, Source: "default: no server to ask (set prefix_cache_tokens)"}
		}
		switch {
		case h.settings.ServerSlots > 0:
			h.cache.Slots = h.settings.ServerSlots
			h.cache.Source += fmt.Sprintf("; %d slots (server_slots in config)", h.settings.ServerSlots)
		case h.cache.Slots > 0 || h.keyed || h.identity.Endpoint == "":
		default:
			// The cache size was configured, so /props was not read yet.
			lctx, cancel := context.WithTimeout(ctx, learnTimeout)
			if n, err := limiter.LearnSlots(lctx, h.identity.Endpoint); err == nil {
				h.cache.Slots = n
				h.cache.Source += fmt.Sprintf("; %d llama-server slots (/props)", n)
			}
			cancel()
		}
		// An assumed size is worth a warning where a server could have a
		// cache; a learned or configured one is information.
		h.cache.Assumed = assumed
		switch {
		case !assumed:
			r.log.Info("prefix cache", "model", h.comp.Ref(), "tokens", h.cache.Tokens, "source", h.cache.Source)
		case h.identity.Endpoint != "":
			r.log.Warn("prefix cache size assumed: requests are ordered for it, none held back for room", "model", h.comp.Ref(), "tokens", h.cache.Tokens, "source", h.cache.Source)
		default:
			r.log.Debug("prefix cache", "model", h.comp.Ref(), "tokens", h.cache.Tokens, "source", h.cache.Source)
		}
	})
	return h.cache
}

// learnEarly asks the servers of ev's models for their prefix caches in
// the background, as soon as each model is open, when the send order will
// want them (newWindow): otherwise the first sample waits for those
// requests (a few ms on a local server) after the task and every scorer
// are ready and the row is journaled. The window's own prefixCache waits
// for what is under way.
func (r *Runner) learnEarly(ctx context.Context, ev *config.Eval, comps *components) {
	if ev.Order == config.OrderTask {
		return
	}
	for _, m := range ev.Models {
		go func() {
			if h, err := comps.model(ctx, m); err == nil {
				r.prefixCache(ctx, h)
			}
		}()
	}
}

// orderPrompt is the text the order is decided on: the rendered messages'
// contents joined by newlines, as messagesText joins them. It is held for
// every sample read ahead, so it is written once into a buffer sized for
// it, instead of rendered into messages and joined into a second copy.
func orderPrompt(smp *sdk.Sample) string {
	tmpl := smp.Template()
	n := len(smp.Context) + len(smp.Question) + len(tmpl)
	for _, m := range tmpl {
		n += len(m.Content)
	}
	b := make([]byte, 0, n)
	for i, m := range tmpl {
		if i > 0 {
			b = append(b, '\n')
		}
		b = smp.AppendContent(b, m.Content)
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// messagesText is messages' contents, one after another.
func messagesText(msgs []sdk.Message) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n")
}

// cacheTokens is the smallest prefix cache among the rows' models, the
// fewest slots among those whose server has slots (0: none has), and
// whether any of those sizes is assumed.
func (r *Runner) cacheTokens(ctx context.Context, rows []*row) sendorder.Options {
	var o sendorder.Options
	for _, rw := range rows {
		if rw.model == nil || rw.res.Error != "" {
			continue
		}
		pc := r.prefixCache(ctx, rw.model)
		if o.CacheTokens == 0 || pc.Tokens < o.CacheTokens {
			o.CacheTokens = pc.Tokens
		}
		if pc.Slots > 0 && (o.Slots == 0 || pc.Slots < o.Slots) {
			o.Slots = pc.Slots
		}
		o.Assumed = o.Assumed || pc.Assumed
	}
	return o
}

// slot is the slot hint of a request to h: the send order's choice, for a
// model whose server has slots (learned or configured by the time the
// window was made).
func (h *modelHandle) slot(s int) *int {
	if s < 0 || h.cache.Slots == 0 || s >= h.cache.Slots {
		return nil
	}
	return &s
}

// doneQueue carries the samples prefilled and answered by workers to the
// dispatcher, which waits on ready when everything read ahead waits for
// one.
type doneQueue struct {
	mu              sync.Mutex
	prefilled, done []sendorder.Item[*sdk.Sample]
	ready           chan struct{}
}

func newDoneQueue() *doneQueue { return &doneQueue{ready: make(chan struct{}, 1)} }

func (q *doneQueue) put(it sendorder.Item[*sdk.Sample]) { q.add(&q.done, it) }

func (q *doneQueue) prefill(it sendorder.Item[*sdk.Sample]) { q.add(&q.prefilled, it) }

func (q *doneQueue) add(list *[]sendorder.Item[*sdk.Sample], it sendorder.Item[*sdk.Sample]) {
	q.mu.Lock()
	*list = append(*list, it)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// drain tells w of every prefilled sample, then of every answered one (a
// sample's prefill is always queued before its answer).
func (q *doneQueue) drain(w sendorder.Window[*sdk.Sample]) {
	q.mu.Lock()
	pre, done := q.prefilled, q.done
	q.prefilled, q.done = nil, nil
	q.mu.Unlock()
	for _, it := range pre {
		w.Prefilled(it)
	}
	for _, it := range done {
		w.Done(it)
	}
}
