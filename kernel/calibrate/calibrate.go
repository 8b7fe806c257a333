// Package calibrate measures an OpenAI-compatible server's prefill and
// decode throughput, for `hayloft plan --calibrate`, with a few streamed
// requests of known sizes.
//
// Three requests, one after another: a short warm-up (not counted), then a
// short and a long prompt, each generating the same number of tokens. The
// time to the first streamed token is the prefill; the long prompt's less
// the short one's, over their difference in prompt tokens, is the prefill
// rate, so that what every request pays alike (the network, scheduling, the
// first decode step) cancels out. The decode rate is the tokens after the
// first over the time from the first to the last, both requests together.
//
// Every prompt begins with its own random words, so no prefix cache can
// serve it and the prefill measured is computed. The server is asked to
// ignore end-of-sequence (ignore_eos: vLLM, SGLang and llama-server), so
// that each request generates the tokens asked for; the counts come from
// the streamed usage (stream_options.include_usage), else from the chunks.
package calibrate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// Options size the requests; zero fields take the defaults in brackets.
type Options struct {
	Model          string // the served model id; empty: the server's default
	Completions    bool   // use the legacy completions endpoint (base models)
	ShortWords     int    // words of the short prompt [64]
	LongWords      int    // words of the long prompt [2048]
	DecodeTokens   int    // tokens each request generates [32]
	Client         *http.Client
	RequestTimeout time.Duration // per request [2m]
}

// Result is what the server was measured at.
type Result struct {
	PrefillTPS float64 `json:"prefill_tps"`
	DecodeTPS  float64 `json:"decode_tps"`
	// Requests is the requests sent, the warm-up included.
	Requests int `json:"requests"`
	// Note says how the figures were had, for the plan's output.
	Note string `json:"note"`
}

// timing is one streamed request as measured.
type timing struct {
	promptTokens, completionTokens int
	first, last                    time.Duration // since the request was sent
}

// Measure calibrates the server at base (the API root, …/v1).
func Measure(ctx context.Context, base string, opts Options) (Result, error) {
	if opts.ShortWords <= 0 {
		opts.ShortWords = 64
	}
	if opts.LongWords <= 0 {
		opts.LongWords = 2048
	}
	if opts.LongWords <= opts.ShortWords {
		return Result{}, fmt.Errorf("calibrate %s: the long prompt (%d words) must be longer than the short one (%d)", base, opts.LongWords, opts.ShortWords)
	}
	if opts.DecodeTokens <= 1 {
		opts.DecodeTokens = 32
	}
	if opts.Client == nil {
		opts.Client = http.DefaultClient
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 2 * time.Minute
	}
	base = strings.TrimRight(base, "/")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x63616c))
	var res Result
	run := func(words int) (timing, error) {
		res.Requests++
		return stream(ctx, base, opts, prompt(rng, words))
	}
	if _, err := run(8); err != nil {
		return res, fmt.Errorf("calibrate %s: warm-up: %w", base, err)
	}
	short, err := run(opts.ShortWords)
	if err != nil {
		return res, fmt.Errorf("calibrate %s: short prompt: %w", base, err)
	}
	long, err := run(opts.LongWords)
	if err != nil {
		return res, fmt.Errorf("calibrate %s: long prompt: %w", base, err)
	}
	dt := (long.first - short.first).Seconds()
	dp := long.promptTokens - short.promptTokens
	switch {
	case dt > 0 && dp > 0:
		res.PrefillTPS = float64(dp) / dt
		res.Note = fmt.Sprintf("prefill: %d more prompt tokens took %.3fs more to the first token", dp, dt)
	case long.first > 0:
		// Too fast to tell apart: the long prompt's own rate, overhead
		// included, is a lower bound.
		res.PrefillTPS = float64(long.promptTokens) / long.first.Seconds()
		res.Note = fmt.Sprintf("prefill: %d prompt tokens to the first token in %.3fs (short and long prompts too close to tell apart)", long.promptTokens, long.first.Seconds())
	default:
		return res, fmt.Errorf("calibrate %s: no time to the first token", base)
	}
	decoded := short.completionTokens + long.completionTokens - 2
	span := (short.last - short.first + long.last - long.first).Seconds()
	if decoded <= 0 || span <= 0 {
		return res, fmt.Errorf("calibrate %s: the answers were too short to time decoding (%d and %d tokens)", base, short.completionTokens, long.completionTokens)
	}
	res.DecodeTPS = float64(decoded) / span
	res.Note += fmt.Sprintf("; decode: %d tokens after the first in %.3fs", decoded, span)
	return res, nil
}

// vocabulary for the prompts: plain words a tokenizer keeps whole.
var vocabulary = strings.Fields("hay straw barn field oat rye loft bale cart horse wheat mill stone river bridge lane")

// prompt is words random words: no two prompts share a prefix.
func prompt(rng *rand.Rand, words int) string {
	var b strings.Builder
	for i := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[rng.IntN(len(vocabulary))])
	}
	return b.String()
}

// chunk is what stream reads of a streamed answer's event.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		Text string `json:"text"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// stream sends one streamed request and times its first and last token.
func stream(ctx context.Context, base string, opts Options, text string) (timing, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.RequestTimeout)
	defer cancel()
	body := map[string]any{
		"max_tokens":     opts.DecodeTokens,
		"temperature":    0,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
		"ignore_eos":     true,
	}
	if opts.Model != "" {
		body["model"] = opts.Model
	}
	url := base + "/chat/completions"
	if opts.Completions {
		url = base + "/completions"
		body["prompt"] = text
	} else {
		body["messages"] = []map[string]string{{"role": "user", "content": text}}
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return timing{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return timing{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := opts.Client.Do(req)
	if err != nil {
		return timing{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return timing{}, fmt.Errorf("POST %s: HTTP %d: %s", url, resp.StatusCode, strings.TrimSpace(b.String()))
	}
	var t timing
	chunks := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return timing{}, fmt.Errorf("POST %s: event %d: %w", url, chunks+1, err)
		}
		if c.Usage != nil {
			t.promptTokens, t.completionTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content == "" && ch.Text == "" {
				continue
			}
			now := time.Since(start)
			if chunks == 0 {
				t.first = now
			}
			t.last = now
			chunks++
		}
	}
	if err := sc.Err(); err != nil {
		return timing{}, fmt.Errorf("POST %s: %w", url, err)
	}
	if chunks == 0 {
		return timing{}, errors.New("POST " + url + ": the answer streamed no token (does the server stream?)")
	}
	if t.completionTokens == 0 {
		t.completionTokens = chunks // one token per event, as servers stream
	}
	if t.promptTokens == 0 {
		t.promptTokens = len(strings.Fields(text)) // about a token a word
	}
	return t, nil
}
