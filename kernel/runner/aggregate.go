package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
	"github.com/hayloft/hayloft/sdk/stats"
)

// aggregate computes every scorer's eval-level metric for one row.
func (r *Runner) aggregate(ctx context.Context, rw *row, scorers []scorerHandle) {
	for _, sh := range scorers {
		list := rw.scores[sh.ref]
		sort.Slice(list, func(i, j int) bool { return list[i].seq < list[j].seq })
		agg := sh.agg
		_, mean := agg.(meanOnly)
		scores := make([]*sdk.ScoreResponse, len(list))
		var err error
		for i, s := range list {
			scores[i] = s.sc
			if !mean && s.sc.Details == nil && s.details != nil {
				// The scorer's own Aggregate may read the details,
				// which came encoded (scoreJob.details).
				if scores[i], err = withDetails(s.sc, s.details); err != nil {
					break
				}
			}
		}
		var m *sdk.AggregateResponse
		if err == nil {
			m, err = stats.Aggregate(context.WithoutCancel(ctx), agg, scores, stats.DefaultSeed)
		}
		if err != nil {
			r.log.Error("aggregate", "scorer", sh.ref, "error", err)
			// No value and no count: a report shows it missing, with its
			// error, never as a score of 0.
			rw.res.Metrics[sh.ref] = &store.Metric{Details: map[string]any{"error": err.Error()}}
			continue
		}
		rw.res.Metrics[sh.ref] = m
	}
}

// withDetails is sc with details, a JSON object, decoded into Details.
func withDetails(sc *sdk.ScoreResponse, details []byte) (*sdk.ScoreResponse, error) {
	c := *sc
	if err := json.Unmarshal(details, &c.Details); err != nil {
		return nil, fmt.Errorf("score details: %w", err)
	}
	return &c, nil
}

// aggregator is sc as stats.Aggregate is to see it. A plugin scorer whose
// component says it has no Aggregate of its own (no plugin.CapAggregator
// among the capabilities it was configured with) is aggregated by the mean
// at once: asking it would send every score of the row to the plugin only
// to hear sdk.ErrUnsupported back, at the end of the run.
func aggregator(sc sdk.Scorer) sdk.Scorer {
	if p, ok := sc.(interface{ Info() plugin.Info }); ok {
		// Protocol is set only by a configured component's answer: the
		// capabilities are then its own.
		if i := p.Info(); i.Protocol != "" && !i.Has(plugin.CapAggregator) {
			return meanOnly{sc}
		}
	}
	return sc
}

// meanOnly hides a scorer's Aggregate method: stats.Aggregate takes the mean.
type meanOnly struct{ sdk.Scorer }
