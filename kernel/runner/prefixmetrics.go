package runner

import (
	"context"

	"github.com/hayloft/hayloft/kernel/limiter"
	"github.com/hayloft/hayloft/kernel/store"
)

// Where responses carry no cached-token count (vLLM without
// --enable-prompt-tokens-details, SGLang without --enable-cache-report), the
// server's own prefix-cache counters on /metrics still say how much of the
// prompts it found cached. They are read before and after each phase of an
// eval, and what they rose by is journaled with each row as an eval-level
// figure (store.PrefixMetrics), never as a sample's.

// readCounters reads the prefix-cache counters of every server the live
// rows send to, by endpoint; servers without them are left out.
func (r *Runner) readCounters(ctx context.Context, rows []*row) map[string]limiter.PrefixCounters {
	out := map[string]limiter.PrefixCounters{}
	tried := map[string]bool{}
	for _, rw := range rows {
		if rw.model == nil || rw.res.Error != "" || rw.model.keyed || rw.model.identity.Endpoint == "" {
			continue
		}
		ep := rw.model.identity.Endpoint
		if tried[ep] {
			continue
		}
		tried[ep] = true
		lctx, cancel := context.WithTimeout(ctx, learnTimeout)
		c, err := limiter.ReadPrefixCounters(lctx, ep)
		cancel()
		if err != nil {
			r.log.Debug("prefix cache counters", "endpoint", ep, "error", err)
			continue
		}
		out[ep] = c
	}
	return out
}

// recordCounters gives each row what its server's counters rose by between
// before and after, noting how many rows of the phase shared the server.
func (r *Runner) recordCounters(rows []*row, before, after map[string]limiter.PrefixCounters) {
	shared := map[string]int{}
	for _, rw := range rows {
		if rw.model != nil && rw.res.Error == "" {
			shared[rw.model.identity.Endpoint]++
		}
	}
	for _, rw := range rows {
		if rw.model == nil || rw.res.Error != "" {
			continue
		}
		ep := rw.model.identity.Endpoint
		b, ok1 := before[ep]
		a, ok2 := after[ep]
		if !ok1 || !ok2 {
			continue
		}
		m := &store.PrefixMetrics{Source: a.Source, PromptTokens: int64(a.Queries - b.Queries), CachedTokens: int64(a.Hits - b.Hits)}
		if m.PromptTokens < 0 || m.CachedTokens < 0 {
			r.log.Warn("prefix cache counters went down (server restarted?); not recorded", "eval", rw.journalName, "endpoint", ep)
			continue
		}
		if m.PromptTokens == 0 {
			continue // nothing was sent (every answer came from the journal)
		}
		if n := shared[ep]; n > 1 {
			m.SharedRows = n
		}
		rw.prefixMetrics = m
	}
}
