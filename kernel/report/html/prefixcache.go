package html

import (
	"context"
	"fmt"
	"slices"

	"github.com/hayloft/hayloft/kernel/report"
	"github.com/hayloft/hayloft/kernel/store"
)

// prefixCache draws what the servers said of their prefix caches, per eval
// row, from the journal as the summary reads it (store.PrefixUse): prompt
// tokens, cached, computed and hit rate over the responses that reported a
// cached count, "not reported" where none did; and, where they were read,
// the server's /metrics counters over the eval, an eval-level figure that
// includes whatever else the server served meanwhile. Like the summary, it
// draws nothing when no row has either.
func (p *page) prefixCache(ctx context.Context, st *store.Store) {
	if st == nil || p.err != nil {
		return
	}
	if p.opts.First != nil {
		// Summing every response of a run is no first-page work (a
		// second on 200,000 samples): Later draws it.
		p.raw(`<div class="hl-later" id="hl-prefix-cache"></div>`)
		return
	}
	uses := make([]store.PrefixUse, len(p.run.Evals))
	for i, ev := range p.run.Evals {
		u, err := st.PrefixUse(ctx, p.run.ID, ev.Name)
		if err != nil {
			p.err = fmt.Errorf("report: %w", err)
			return
		}
		uses[i] = u
	}
	if !slices.ContainsFunc(uses, func(u store.PrefixUse) bool { return u.Reported > 0 || u.Metrics != nil }) {
		return
	}
	p.raw(`<section id="prefix-cache"><h2>Prefix cache</h2>`)
	p.raw(`<p class="note">Prompt tokens the server found in its prefix cache, as its responses reported them; computed is what it had to prefill. Server counters are its /metrics over the eval: not per sample, and counting whatever else it served meanwhile.</p>`)
	p.raw(`<table class="prefix-cache"><thead><tr><th rowspan="2">eval</th><th rowspan="2">model</th><th rowspan="2">retriever</th>` +
		`<th class="group" colspan="5">responses</th><th class="group" colspan="5">server counters over the eval</th></tr><tr>` +
		`<th>prompt tokens</th><th>cached</th><th>computed</th><th>hit rate</th><th>reported by</th>` +
		`<th>prompt tokens</th><th>cached</th><th>computed</th><th>hit rate</th><th>source</th></tr></thead><tbody>`)
	for i, ev := range p.run.Evals {
		u := uses[i]
		p.printf(`<tr data-eval="%s"><td>%s</td><td>%s</td><td>%s</td><td class="num">%d</td>`,
			esc(ev.Name), esc(ev.Base), esc(ev.Model), esc(ev.RetrieverName()), u.PromptTokens)
		if rate, ok := u.HitRate(); ok {
			p.printf(`<td class="num">%d</td><td class="num">%d</td><td class="num">%.1f%%</td><td class="num">%d of %d responses</td>`,
				u.CachedTokens, u.ComputedTokens, 100*rate, u.Reported, u.Responses)
		} else {
			p.raw(`<td colspan="4" class="not-reported">not reported</td>`)
		}
		if m := u.Metrics; m != nil {
			rate := report.Missing
			if r, ok := m.HitRate(); ok {
				rate = fmt.Sprintf("%.1f%%", 100*r)
			}
			source := m.Source
			if m.SharedRows > 1 {
				source += fmt.Sprintf(" (shared by %d rows at once)", m.SharedRows)
			}
			p.printf(`<td class="num">%d</td><td class="num">%d</td><td class="num">%d</td><td class="num">%s</td><td>%s</td>`,
				m.PromptTokens, m.CachedTokens, m.PromptTokens-m.CachedTokens, rate, esc(source))
		} else {
			p.raw(`<td colspan="5" class="not-reported">not read</td>`)
		}
		p.raw("</tr>")
	}
	p.raw("</tbody></table></section>\n")
}
