package limiter

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// PrefixCache is a server's prefix (KV) cache size as it reports it, and
// where the figure was read.
type PrefixCache struct {
	Tokens int
	Source string
	// Slots is llama-server's slot count (each slot caching its own
	// prefix, of Tokens); 0 for servers with one shared cache.
	Slots int
	// Assumed marks a size nobody stated (sendorder.DefaultCacheTokens):
	// the send order then orders by it but never holds a request back for
	// room, since a guess too small would starve the server.
	Assumed bool
}

// LearnPrefixCache asks the server at base (the API root …/v1 or the server
// root) how many tokens its prefix cache holds, trying in turn vLLM's
// /metrics (vllm:cache_config_info: block_size × num_gpu_blocks), SGLang's
// /get_server_info (max_total_num_tokens) and llama-server's /props (the
// context of one slot, n_ctx, as llama-server reuses a prefix only within
// the slot that holds it). It fails when none answers.
func LearnPrefixCache(ctx context.Context, base string) (PrefixCache, error) {
	var errs []error
	for _, learn := range []func(context.Context, string) (PrefixCache, error){vllmCache, sglangCache, llamaCppCache} {
		pc, err := learn(ctx, base)
		if err == nil {
			return pc, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return PrefixCache{}, errors.Join(errs...)
}

func vllmCache(ctx context.Context, base string) (PrefixCache, error) {
	url := serverRoot(base) + "/metrics"
	body, err := probeGet(ctx, url)
	if err != nil {
		return PrefixCache{}, err
	}
	defer body.Close()
	const name = "vllm:cache_config_info{"
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		labels := map[string]string{}
		rest := line[len(name):]
		if i := strings.IndexByte(rest, '}'); i >= 0 {
			rest = rest[:i]
		}
		for _, kv := range strings.Split(rest, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if ok {
				labels[strings.TrimSpace(k)] = strings.Trim(v, `"`)
			}
		}
		bs, err1 := strconv.Atoi(labels["block_size"])
		nb, err2 := strconv.Atoi(labels["num_gpu_blocks"])
		if err1 != nil || err2 != nil || bs <= 0 || nb <= 0 {
			return PrefixCache{}, fmt.Errorf("%s: vllm:cache_config_info: block_size %q, num_gpu_blocks %q", url, labels["block_size"], labels["num_gpu_blocks"])
		}
		return PrefixCache{Tokens: bs * nb, Source: fmt.Sprintf("vLLM %s: block_size %d × num_gpu_blocks %d", url, bs, nb)}, nil
	}
	if err := sc.Err(); err != nil {
		return PrefixCache{}, fmt.Errorf("%s: %w", url, err)
	}
	return PrefixCache{}, fmt.Errorf("%s: no vllm:cache_config_info", url)
}

func sglangCache(ctx context.Context, base string) (PrefixCache, error) {
	url := serverRoot(base) + "/get_server_info"
	var info struct {
		MaxTotalNumTokens int `json:"max_total_num_tokens"`
	}
	if err := getJSON(ctx, url, &info); err != nil {
		return PrefixCache{}, err
	}
	if info.MaxTotalNumTokens <= 0 {
		return PrefixCache{}, fmt.Errorf("%s: no max_total_num_tokens", url)
	}
	return PrefixCache{Tokens: info.MaxTotalNumTokens, Source: fmt.Sprintf("SGLang %s: max_total_num_tokens", url)}, nil
}

func llamaCppCache(ctx context.Context, base string) (PrefixCache, error) {
	url := serverRoot(base) + "/props"
	var props struct {
		Settings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		TotalSlots int `json:"total_slots"`
	}
	if err := getJSON(ctx, url, &props); err != nil {
		return PrefixCache{}, err
	}
	if props.Settings.NCtx <= 0 {
		return PrefixCache{}, fmt.Errorf("%s: no default_generation_settings.n_ctx", url)
	}
	return PrefixCache{Tokens: props.Settings.NCtx, Source: fmt.Sprintf("llama-server %s: n_ctx of one slot (%d slots)", url, props.TotalSlots), Slots: props.TotalSlots}, nil
}

// LearnSlots asks the server at base for llama-server's slots, /props
// total_slots. It fails for a server without them (not a llama-server).
// /slots is not read: it lists no slots when llama-server runs with
// --no-slots, and /props is always there.
func LearnSlots(ctx context.Context, base string) (int, error) {
	var props struct {
		TotalSlots int `json:"total_slots"`
	}
	url := serverRoot(base) + "/props"
	if err := getJSON(ctx, url, &props); err != nil {
		return 0, err
	}
	if props.TotalSlots <= 0 {
		return 0, fmt.Errorf("%s: no total_slots (not a llama-server)", url)
	}
	return props.TotalSlots, nil
}

func getJSON(ctx context.Context, url string, v any) error {
	body, err := probeGet(ctx, url)
	if err != nil {
		return err
	}
	defer body.Close()
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return nil
}
