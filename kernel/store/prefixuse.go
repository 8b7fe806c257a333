package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/hayloft/hayloft/sdk"
)

// PrefixUse is what a row's responses say of the server's prefix cache:
// prompt tokens, those found cached, and how many responses reported it.
type PrefixUse struct {
	Responses    int `json:"responses"`
	Reported     int `json:"reported"` // responses that gave a cached count
	PromptTokens int `json:"prompt_tokens"`
	// CachedTokens and ComputedTokens cover the reporting responses only.
	CachedTokens   int `json:"cached_tokens"`
	ComputedTokens int `json:"computed_tokens"`
	// Metrics is the server's own count over the row, where it was read:
	// the fallback for servers whose responses say nothing.
	Metrics *PrefixMetrics `json:"metrics,omitempty"`
}

// PrefixMetrics is what a server's prefix-cache counters (/metrics: vLLM's
// vllm:prefix_cache_queries_total and _hits_total, SGLang's
// sglang:prompt_tokens_total and sglang:cached_tokens_total) rose by while
// an eval row ran: an eval-level figure, not per sample. The counters are
// the server's, so they include whatever else it served meanwhile: the
// other rows of the eval sharing the server at the time (SharedRows counts
// them all, this one included, when more than one) and any other client.
type PrefixMetrics struct {
	Source       string `json:"source"`
	PromptTokens int64  `json:"prompt_tokens"`
	CachedTokens int64  `json:"cached_tokens"`
	SharedRows   int    `json:"shared_rows,omitempty"`
}

// HitRate is cached ÷ prompt tokens; false when no prompt was counted.
func (m *PrefixMetrics) HitRate() (float64, bool) {
	if m == nil || m.PromptTokens <= 0 {
		return 0, false
	}
	return float64(m.CachedTokens) / float64(m.PromptTokens), true
}

// Add counts one response's usage into u as the journal's sum of a row
// (sumPrefixUse) counts each of its responses: its prompt tokens, and
// where it reported a cached count, its cached and computed tokens.
func (u *PrefixUse) Add(usage sdk.Usage) {
	u.Responses++
	u.PromptTokens += usage.PromptTokens
	if c := usage.CachedTokens; c != nil {
		u.Reported++
		u.CachedTokens += *c
		u.ComputedTokens += usage.PromptTokens - *c
	}
}

// HitRate is cached ÷ prompt tokens over the responses that reported;
// false when none did.
func (u PrefixUse) HitRate() (float64, bool) {
	if u.Reported == 0 || u.CachedTokens+u.ComputedTokens == 0 {
		return 0, false
	}
	return float64(u.CachedTokens) / float64(u.CachedTokens+u.ComputedTokens), true
}

// PrefixUse is what the responses to row evalName's samples said of the
// prefix cache: the sums journaled when the row finished (FinishEval), else,
// for a row still running or finished by an older hayloft, summed now.
func (s *Store) PrefixUse(ctx context.Context, runID, evalName string) (PrefixUse, error) {
	var (
		u                  PrefixUse
		journaled, metrics sql.NullString
	)
	err := s.db.QueryRowContext(ctx, `SELECT prefix_use, prefix_metrics FROM evals WHERE run_id = $1 AND name = $2`, runID, evalName).Scan(&journaled, &metrics)
	if err != nil && err != sql.ErrNoRows {
		return u, fmt.Errorf("prefix cache use of %s/%s: %w", runID, evalName, err)
	}
	if journaled.Valid {
		if err := json.Unmarshal([]byte(journaled.String), &u); err != nil {
			return u, fmt.Errorf("prefix cache use of %s/%s: journaled %q: %w", runID, evalName, journaled.String, err)
		}
	} else if u, err = s.sumPrefixUse(ctx, runID, evalName); err != nil {
		return u, err
	}
	u.Metrics = nil
	if metrics.Valid {
		u.Metrics = new(PrefixMetrics)
		if err := json.Unmarshal([]byte(metrics.String), u.Metrics); err != nil {
			return u, fmt.Errorf("prefix cache metrics of %s/%s: %w", runID, evalName, err)
		}
	}
	return u, nil
}

// sumPrefixUse sums the cache use of the responses to row evalName's
// samples (without the server's metrics). It joins every sample to its
// response and reads the token counts journaled after the request, so it
// costs about a second per 200,000 samples: FinishEval journals its result.
func (s *Store) sumPrefixUse(ctx context.Context, runID, evalName string) (PrefixUse, error) {
	var (
		u                      PrefixUse
		prompt, reportedPrompt sql.NullInt64
		cached                 sql.NullInt64
	)
	if err := s.flush(ctx); err != nil {
		return u, fmt.Errorf("prefix cache use of %s/%s: %w", runID, evalName, err)
	}
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(r.cached_tokens), SUM(r.prompt_tokens),
			SUM(CASE WHEN r.cached_tokens IS NULL THEN 0 ELSE r.prompt_tokens END), SUM(r.cached_tokens)
		FROM samples s JOIN responses r ON r.key = s.request_key
		WHERE s.run_id = $1 AND s.eval_name = $2`, runID, evalName).
		Scan(&u.Responses, &u.Reported, &prompt, &reportedPrompt, &cached)
	if err != nil {
		return u, fmt.Errorf("prefix cache use of %s/%s: %w", runID, evalName, err)
	}
	u.PromptTokens = int(prompt.Int64)
	u.CachedTokens = int(cached.Int64)
	u.ComputedTokens = int(reportedPrompt.Int64) - u.CachedTokens
	return u, nil
}

// finishedPrefixUse is the JSON FinishEval journals as a finished row's
// prefix use (evals.prefix_use): its samples' sums as they stand.
func (s *Store) finishedPrefixUse(ctx context.Context, runID, evalName string) (string, error) {
	u, err := s.sumPrefixUse(ctx, runID, evalName)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(u)
	return string(b), err
}
