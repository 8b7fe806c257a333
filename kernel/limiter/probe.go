package limiter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Load probes tell an adaptive limiter whether the server is queueing: a
// queue means more concurrency only adds latency. They suit SetLoadProbe.

// Probe returns the load probe of a server kind ("vllm" or "llamacpp") at
// base, the API root (…/v1) or the server root.
func Probe(kind, base string) (func(ctx context.Context) (int, error), error) {
	switch kind {
	case "vllm":
		return func(ctx context.Context) (int, error) { return VLLMWaiting(ctx, base) }, nil
	case "llamacpp":
		return func(ctx context.Context) (int, error) { return LlamaCppWaiting(ctx, base) }, nil
	}
	return nil, fmt.Errorf("load probe %q: want vllm or llamacpp", kind)
}

// VLLMWaiting reads vLLM's Prometheus /metrics and returns
// vllm:num_requests_waiting summed over models. base may be the API root
// (…/v1) or the server root.
func VLLMWaiting(ctx context.Context, base string) (int, error) {
	body, err := probeGet(ctx, serverRoot(base)+"/metrics")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	const name = "vllm:num_requests_waiting"
	total, found := 0.0, false
	err = eachSample(body, func(n string) bool { return n == name }, func(_ string, v float64) {
		total += v
		found = true
	})
	if err != nil {
		return 0, fmt.Errorf("probe %s/metrics: %w", serverRoot(base), err)
	}
	if !found {
		return 0, fmt.Errorf("probe %s/metrics: no %s (not a vLLM server?)", serverRoot(base), name)
	}
	return int(total), nil
}

// LlamaCppWaiting reads llama-server's /slots. It cannot see the queue
// itself, only whether every slot is busy, so it returns 1 when all are (a
// new request would wait) and 0 otherwise.
func LlamaCppWaiting(ctx context.Context, base string) (int, error) {
	body, err := probeGet(ctx, serverRoot(base)+"/slots")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	var slots []struct {
		IsProcessing bool `json:"is_processing"`
	}
	if err := json.NewDecoder(body).Decode(&slots); err != nil {
		return 0, fmt.Errorf("probe %s/slots: decode: %w", serverRoot(base), err)
	}
	if len(slots) == 0 {
		return 0, fmt.Errorf("probe %s/slots: no slots listed", serverRoot(base))
	}
	for _, s := range slots {
		if !s.IsProcessing {
			return 0, nil
		}
	}
	return 1, nil
}

func serverRoot(base string) string {
	return strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1")
}

func probeGet(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("probe %s: HTTP %d", url, resp.StatusCode)
	}
	return resp.Body, nil
}
