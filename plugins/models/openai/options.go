package openai

import (
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// Options are the settings of an "openai" model block.
type Options struct {
	// BaseURL is the API root, e.g. "http://127.0.0.1:8000/v1". Required.
	BaseURL string `json:"base_url"`
	// Model is the served model id; empty asks the server's /v1/models for
	// its first model during Provision, which then keys the journal's
	// answers (sdk.ServedModeler) as a configured one does.
	Model string `json:"model"`
	// APIKeyEnv names the environment variable holding the API key. The key
	// itself is never accepted in a config file.
	APIKeyEnv string `json:"api_key_env"`
	// Timeout bounds one attempt; default "120s".
	Timeout string `json:"timeout"`
	// MaxRetries is how many times a retryable failure is retried; default 5.
	MaxRetries *int `json:"max_retries"`
	// RetryBackoff is the base of the exponential backoff (default "500ms");
	// RetryBackoffMax caps it (default "30s"). A server's Retry-After (or
	// retry-after-ms) wins over both, up to RetryAfterMax.
	RetryBackoff    string `json:"retry_backoff"`
	RetryBackoffMax string `json:"retry_backoff_max"`
	// RetryAfterMax caps the wait a server's Retry-After asks for (default
	// "60s"): a longer one waits RetryAfterMax, and the failed attempt's
	// record says what the server asked. Hosted APIs limit rates per
	// minute, so a minute covers an honest 429; an hour's Retry-After
	// (a quota or a misbehaving proxy) would otherwise hold the request and
	// its concurrency slot for that hour on every retry. Raise it to wait
	// out a longer limit.
	RetryAfterMax string `json:"retry_after_max"`
	// Endpoint is "chat" (default) or "completions".
	Endpoint string `json:"endpoint"`
	// ExtraBody is merged into every generation request body; it may not set
	// the fields the client owns (see reservedBody).
	ExtraBody map[string]any `json:"extra_body"`
	// Tokenizer "model" counts tokens with the server's /tokenize; anything
	// else leaves counting to the kernel.
	Tokenizer string `json:"tokenizer"`
	// BatchSize is the number of texts per embeddings request; default 64.
	BatchSize int `json:"batch_size"`
	// Loglikelihood makes every request a prompt-scoring one: the rendered
	// prompt is sent to the legacy completions endpoint with echo and
	// logprobs, and the answer's text is a LogLikelihoodAnswer in JSON
	// (journaled and cached like any answer). Provision checks that the
	// server returns prompt logprobs.
	Loglikelihood bool `json:"loglikelihood"`
	// MaxConnectionFailures stops the eval after this many requests in a
	// row got no answer from the server, each after its retries; default
	// 5, 0 never stops. Finished samples stay journaled.
	MaxConnectionFailures *int `json:"max_connection_failures"`
	// Stream is "auto" (default), "on" or "off". Streamed answers tell the
	// kernel when the server has computed a prompt (its first token), so
	// that requests sharing its prefix go then rather than at the end of
	// the answer. "auto" streams exactly when the kernel listens for that
	// (its prefix send order, a run's samples); every server hayloft speaks
	// to (vLLM, SGLang, llama-server, OpenAI) streams chat and completions.
	// "off" is for a proxy that does not pass events through.
	Stream string `json:"stream"`

	// Transport is "auto" (default) or "net/http". "auto" sends requests to
	// a plain http:// server that no proxy variable covers over hayloft's
	// own keep-alive connections (connPool: a request costs less CPU than
	// through net/http's Transport) and everything else (https, proxies)
	// through net/http; "net/http" always uses net/http.
	Transport string `json:"transport"`

	// APIKey exists only to reject a key written in the config with a
	// message that says what to do instead.
	APIKey json.RawMessage `json:"api_key"`
}

// reservedBody are request fields the client sets itself; decoding
// parameters come from the eval (they are part of the cache key), so
// extra_body must not override them behind the cache's back; id_slot is
// the kernel's send order's (a llama-server slot per shared prefix).
var reservedBody = []string{"model", "messages", "prompt", "stream", "n", "echo", "logprobs",
	"temperature", "top_p", "max_tokens", "stop", "seed", "input", "id_slot", "stream_options"}

// settings are validated Options.
type settings struct {
	base, root      string
	model           string
	key             string
	timeout         time.Duration
	maxRetries      int
	backoff, capped time.Duration
	retryAfterMax   time.Duration
	endpoint        string
	extra           []byte // extra_body's members, encoded once: `"k":v,…`
	tokenizer       string
	batch           int
	loglikelihood   bool
	maxConnFails    int    // 0: never stop
	stream          string // StreamAuto, StreamOn or StreamOff
	transport       string // TransportAuto or TransportNetHTTP
}

// Transport settings (Options.Transport).
const (
	TransportAuto    = "auto"
	TransportNetHTTP = "net/http"
)

func parseOptions(opts sdk.Options) (*settings, error) {
	var o Options
	if err := opts.Decode(&o); err != nil {
		return nil, err
	}
	if o.APIKey != nil {
		return nil, sdk.Configf("api_key", "an API key is never read from the config; put it in an environment variable and set api_key_env to its name")
	}
	s := &settings{model: o.Model, tokenizer: o.Tokenizer, loglikelihood: o.Loglikelihood}
	if o.BaseURL == "" {
		return nil, sdk.Configf("base_url", "required, e.g. \"http://127.0.0.1:8000/v1\"")
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, sdk.Configf("base_url", "want an http(s) URL such as \"http://127.0.0.1:8000/v1\", got %q", o.BaseURL)
	}
	if u.User != nil {
		return nil, sdk.Configf("base_url", "credentials in the URL are not accepted; use api_key_env")
	}
	s.base = strings.TrimRight(o.BaseURL, "/")
	s.root = strings.TrimSuffix(s.base, "/v1")
	if o.APIKeyEnv != "" {
		s.key = os.Getenv(o.APIKeyEnv)
		if s.key == "" {
			return nil, sdk.Configf("api_key_env", "environment variable %s is empty or unset", o.APIKeyEnv)
		}
	}
	durations := []struct {
		field, val, def string
		dst             *time.Duration
	}{
		{"timeout", o.Timeout, "120s", &s.timeout},
		{"retry_backoff", o.RetryBackoff, "500ms", &s.backoff},
		{"retry_backoff_max", o.RetryBackoffMax, "30s", &s.capped},
		{"retry_after_max", o.RetryAfterMax, "60s", &s.retryAfterMax},
	}
	for _, d := range durations {
		dur, err := sdk.PositiveDuration(d.field, d.val, d.def)
		if err != nil {
			return nil, err
		}
		*d.dst = dur
	}
	s.maxRetries = 5
	if o.MaxRetries != nil {
		if *o.MaxRetries < 0 {
			return nil, sdk.Configf("max_retries", "must not be negative, got %d", *o.MaxRetries)
		}
		s.maxRetries = *o.MaxRetries
	}
	switch o.Endpoint {
	case "", "chat":
		s.endpoint = "chat"
	case "completions":
		s.endpoint = "completions"
	default:
		return nil, sdk.Configf("endpoint", "want \"chat\" or \"completions\", got %q", o.Endpoint)
	}
	for _, k := range reservedBody {
		if _, ok := o.ExtraBody[k]; ok {
			return nil, sdk.Configf("extra_body", "%q is set by hayloft itself (decoding parameters belong in the eval's params)", k)
		}
	}
	if len(o.ExtraBody) > 0 {
		b, err := json.Marshal(o.ExtraBody)
		if err != nil {
			return nil, sdk.Configf("extra_body", "%v", err)
		}
		s.extra = b[1 : len(b)-1]
	}
	s.batch = 64
	if o.BatchSize < 0 {
		return nil, sdk.Configf("batch_size", "must be positive, got %d", o.BatchSize)
	}
	if o.BatchSize > 0 {
		s.batch = o.BatchSize
	}
	switch o.Stream {
	case "", StreamAuto:
		s.stream = StreamAuto
	case StreamOn, StreamOff:
		s.stream = o.Stream
	default:
		return nil, sdk.Configf("stream", "want \"auto\", \"on\" or \"off\", got %q", o.Stream)
	}
	switch o.Transport {
	case "", TransportAuto:
		s.transport = TransportAuto
	case TransportNetHTTP:
		s.transport = TransportNetHTTP
	default:
		return nil, sdk.Configf("transport", "want \"auto\" or \"net/http\", got %q", o.Transport)
	}
	s.maxConnFails = 5
	if o.MaxConnectionFailures != nil {
		if *o.MaxConnectionFailures < 0 {
			return nil, sdk.Configf("max_connection_failures", "must not be negative, got %d", *o.MaxConnectionFailures)
		}
		s.maxConnFails = *o.MaxConnectionFailures
	}
	return s, nil
}
