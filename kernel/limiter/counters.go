package limiter

import (
	"context"
	"fmt"
	"strings"
)

// PrefixCounters are a server's cumulative prefix-cache counters, in prompt
// tokens, as its Prometheus /metrics gives them: tokens looked up in the
// cache and tokens found there.
type PrefixCounters struct {
	Queries, Hits float64
	Source        string // the server kind and metric names read
}

// counterNames are the counters of each server, tried in turn: vLLM v1's
// prefix_cache_queries/hits (and their earlier gpu_ names), SGLang's
// prompt_tokens/cached_tokens.
var counterNames = []struct{ kind, queries, hits string }{
	{"vLLM", "vllm:prefix_cache_queries", "vllm:prefix_cache_hits"},
	{"vLLM", "vllm:gpu_prefix_cache_queries", "vllm:gpu_prefix_cache_hits"},
	{"SGLang", "sglang:prompt_tokens", "sglang:cached_tokens"},
}

// ReadPrefixCounters reads the prefix-cache counters of the server at base
// (the API root …/v1 or the server root), each summed over its label sets
// (models, ranks, SGLang's cache sources). It fails when /metrics has none
// of them. Two readings apart give what the server did between them.
func ReadPrefixCounters(ctx context.Context, base string) (PrefixCounters, error) {
	url := serverRoot(base) + "/metrics"
	body, err := probeGet(ctx, url)
	if err != nil {
		return PrefixCounters{}, err
	}
	defer body.Close()
	sums := map[string]float64{}
	seen := map[string]bool{}
	// prometheus_client adds _total to a counter's name; a name without
	// it is read too.
	err = eachSample(body, func(n string) bool { return wantCounter(strings.TrimSuffix(n, "_total")) }, func(n string, v float64) {
		n = strings.TrimSuffix(n, "_total")
		sums[n] += v
		seen[n] = true
	})
	if err != nil {
		return PrefixCounters{}, fmt.Errorf("%s: %w", url, err)
	}
	for _, c := range counterNames {
		if seen[c.queries] && seen[c.hits] {
			return PrefixCounters{Queries: sums[c.queries], Hits: sums[c.hits],
				Source: fmt.Sprintf("%s %s %s_total, %s_total", c.kind, url, c.hits, c.queries)}, nil
		}
	}
	return PrefixCounters{}, fmt.Errorf("%s: no prefix-cache counters (vllm:prefix_cache_hits_total, sglang:cached_tokens_total)", url)
}

func wantCounter(name string) bool {
	for _, c := range counterNames {
		if name == c.queries || name == c.hits {
			return true
		}
	}
	return false
}
