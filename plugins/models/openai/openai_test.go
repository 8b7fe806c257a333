package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
	"github.com/hayloft/hayloft/sdk"
)

func newTestClient(t *testing.T, base string, extra map[string]any) *Client {
	t.Helper()
	opts := map[string]any{"base_url": base, "model": "fake-model", "retry_backoff": "1ms", "retry_backoff_max": "5ms", "timeout": "5s"}
	for k, v := range extra {
		opts[k] = v
	}
	c, err := NewClient(context.Background(), sdk.MustOptions(opts))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// eachTransport runs test once through each transport: the connection
// pool that carries plain-HTTP requests by default, and net/http.
func eachTransport(t *testing.T, test func(t *testing.T, transport string)) {
	for _, tr := range []string{TransportAuto, TransportNetHTTP} {
		t.Run("transport="+tr, func(t *testing.T) { test(t, tr) })
	}
}

// newTransportClient is newTestClient with the transport option set.
func newTransportClient(t *testing.T, transport, base string, extra map[string]any) *Client {
	t.Helper()
	opts := map[string]any{"transport": transport}
	for k, v := range extra {
		opts[k] = v
	}
	c := newTestClient(t, base, opts)
	if got := c.pool != nil; got != (transport == TransportAuto && strings.HasPrefix(base, "http://")) {
		t.Fatalf("transport %s, base %s: connection pool in use = %v", transport, base, got)
	}
	return c
}

func chat(content string) *sdk.GenerateRequest {
	return &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: content}}}
}

func statuses(as []sdk.Attempt) []int {
	out := make([]int, len(as))
	for i, a := range as {
		out[i] = a.Status
	}
	return out
}

func TestOptions(t *testing.T) {
	t.Setenv("HAYLOFT_TEST_EMPTY", "")
	tests := []struct {
		name  string
		opts  map[string]any
		field string
	}{
		{"missing base_url", map[string]any{}, "base_url"},
		{"bad scheme", map[string]any{"base_url": "ftp://x/v1"}, "base_url"},
		{"credentials in url", map[string]any{"base_url": "http://u:p@127.0.0.1/v1"}, "base_url"},
		{"key in config", map[string]any{"base_url": "http://127.0.0.1/v1", "api_key": "sk-secret"}, "api_key"},
		{"empty key env", map[string]any{"base_url": "http://127.0.0.1/v1", "api_key_env": "HAYLOFT_TEST_EMPTY"}, "api_key_env"},
		{"bad timeout", map[string]any{"base_url": "http://127.0.0.1/v1", "timeout": "soon"}, "timeout"},
		{"negative retries", map[string]any{"base_url": "http://127.0.0.1/v1", "max_retries": -1}, "max_retries"},
		{"retries not a number", map[string]any{"base_url": "http://127.0.0.1/v1", "max_retries": "five"}, "max_retries"},
		{"bad endpoint", map[string]any{"base_url": "http://127.0.0.1/v1", "endpoint": "responses"}, "endpoint"},
		{"reserved extra_body", map[string]any{"base_url": "http://127.0.0.1/v1", "extra_body": map[string]any{"temperature": 1}}, "extra_body"},
		{"unknown option", map[string]any{"base_url": "http://127.0.0.1/v1", "temprature": 1}, "temprature"},
		{"bad batch", map[string]any{"base_url": "http://127.0.0.1/v1", "batch_size": -2}, "batch_size"},
		{"bad transport", map[string]any{"base_url": "http://127.0.0.1/v1", "transport": "h2"}, "transport"},
		{"zero retry_after_max", map[string]any{"base_url": "http://127.0.0.1/v1", "retry_after_max": "0s"}, "retry_after_max"},
		{"retry_after_max not a duration", map[string]any{"base_url": "http://127.0.0.1/v1", "retry_after_max": "forever"}, "retry_after_max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(context.Background(), sdk.MustOptions(tt.opts))
			var ce *sdk.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Fatalf("err = %v, want *sdk.ConfigError for %q", err, tt.field)
			}
			if strings.Contains(err.Error(), "sk-secret") {
				t.Errorf("error repeats the key: %v", err)
			}
		})
	}
	if _, err := New(context.Background(), sdk.MustOptions(map[string]any{"base_url": "http://127.0.0.1:8000/v1/"})); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

func TestGenerateSendsParams(t *testing.T) { eachTransport(t, testGenerateSendsParams) }

func testGenerateSendsParams(t *testing.T, transport string) {
	var mu sync.Mutex
	var seen []openaitest.ChatRequest
	srv := openaitest.NewServer(openaitest.Options{Answer: func(r openaitest.ChatRequest) string {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		return "forty two"
	}})
	defer srv.Close()
	c := newTransportClient(t, transport, srv.BaseURL(), map[string]any{"extra_body": map[string]any{"top_k": 5}})
	temp, seed := 0.0, int64(7)
	tests := []struct {
		name      string
		params    sdk.GenerationParams
		sampleMax int
		wantMax   int
	}{
		{"params win", sdk.GenerationParams{Temperature: &temp, MaxTokens: 3, Stop: []string{"\n"}, Seed: &seed}, 100, 3},
		{"sample budget fills in", sdk.GenerationParams{}, 100, 100},
		{"neither", sdk.GenerationParams{}, 0, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := chat("question")
			req.Params = tt.params
			req.Sample = &sdk.Sample{ID: "s", MaxNewTokens: tt.sampleMax}
			resp, err := c.Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "forty two" || resp.FinishReason != "stop" {
				t.Errorf("resp = %+v", resp)
			}
			if resp.Usage.PromptTokens != 1 || resp.Usage.CompletionTokens != 2 {
				t.Errorf("usage = %+v", resp.Usage)
			}
			if got := statuses(resp.Attempts); len(got) != 1 || got[0] != 200 {
				t.Errorf("attempts = %v", got)
			}
			mu.Lock()
			r := seen[i]
			mu.Unlock()
			if r.Model != "fake-model" || r.MaxTokens != tt.wantMax || string(r.Extra["top_k"]) != "5" {
				t.Errorf("server saw model=%q max_tokens=%d extra=%v", r.Model, r.MaxTokens, r.Extra)
			}
			if (r.Temperature != nil) != (tt.params.Temperature != nil) || (r.Seed != nil) != (tt.params.Seed != nil) || len(r.Stop) != len(tt.params.Stop) {
				t.Errorf("server saw temperature=%v seed=%v stop=%v", r.Temperature, r.Seed, r.Stop)
			}
		})
	}
}

func TestCompletionsEndpoint(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{Answer: func(r openaitest.ChatRequest) string { return r.Messages[0].Content }})
	defer srv.Close()
	c := newTestClient(t, srv.BaseURL(), map[string]any{"endpoint": "completions"})
	req := &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "system", Content: "A"}, {Role: "user", Content: "B"}}}
	resp, err := c.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != " A\n\nB" {
		t.Errorf("text = %q", resp.Text)
	}
	if srv.Requests("/v1/completions") != 1 {
		t.Errorf("completions requests = %d", srv.Requests("/v1/completions"))
	}
}

func TestFaults(t *testing.T) { eachTransport(t, testFaults) }

func testFaults(t *testing.T, transport string) {
	tests := []struct {
		name       string
		opts       openaitest.Options
		client     map[string]any
		wantStatus []int
		wantCode   string // RequestError code; "" for success, "retryable" for exhausted retries
		minElapsed time.Duration
	}{
		{"429 with Retry-After seconds", openaitest.Options{Faults: []openaitest.Fault{openaitest.Fault429}, RetryAfter: time.Second},
			nil, []int{429, 200}, "", time.Second},
		{"503 with retry-after-ms", openaitest.Options{Faults: []openaitest.Fault{openaitest.Fault503}, RetryAfter: 300 * time.Millisecond},
			nil, []int{503, 200}, "", 300 * time.Millisecond},
		{"500 then success", openaitest.Options{Faults: []openaitest.Fault{openaitest.Fault500, openaitest.Fault500}},
			nil, []int{500, 500, 200}, "", 0},
		{"reset is retried", openaitest.Options{Faults: []openaitest.Fault{openaitest.FaultReset}},
			nil, []int{0, 200}, "", 0},
		{"hang times out and is retried", openaitest.Options{Faults: []openaitest.Fault{openaitest.FaultHang}},
			map[string]any{"timeout": "200ms"}, []int{0, 200}, "", 200 * time.Millisecond},
		{"retries are bounded", openaitest.Options{FailRate: 1, FaultKinds: []openaitest.Fault{openaitest.Fault500}},
			map[string]any{"max_retries": 2}, []int{500, 500, 500}, "retryable", 0},
		{"no retries", openaitest.Options{FailRate: 1, FaultKinds: []openaitest.Fault{openaitest.Fault429}},
			map[string]any{"max_retries": 0}, []int{429}, "retryable", 0},
		{"context length is final", openaitest.Options{MaxContext: 3},
			nil, []int{400}, sdk.CodeContextLength, 0},
		{"malformed answer is final", openaitest.Options{Faults: []openaitest.Fault{openaitest.FaultMalformed}},
			nil, []int{200}, sdk.CodeBadResponse, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(tt.opts)
			defer srv.Close()
			c := newTransportClient(t, transport, srv.BaseURL(), tt.client)
			start := time.Now()
			resp, err := c.Generate(context.Background(), chat("one two three four five"))
			elapsed := time.Since(start)
			var attempts []sdk.Attempt
			switch tt.wantCode {
			case "":
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				attempts = resp.Attempts
			default:
				var ae *AttemptsError
				if !errors.As(err, &ae) {
					t.Fatalf("err = %v, want *AttemptsError", err)
				}
				attempts = ae.Attempts
				if tt.wantCode == "retryable" {
					if !sdk.IsRetryable(err) {
						t.Errorf("err = %v, want retryable", err)
					}
				} else {
					var re *sdk.RequestError
					if !errors.As(err, &re) || re.Code != tt.wantCode {
						t.Errorf("err = %v, want RequestError %s", err, tt.wantCode)
					}
					if sdk.IsRetryable(err) {
						t.Errorf("final error is retryable")
					}
				}
			}
			if got := statuses(attempts); fmt.Sprint(got) != fmt.Sprint(tt.wantStatus) {
				t.Errorf("attempt statuses = %v, want %v", got, tt.wantStatus)
			}
			if got := srv.Requests("/v1/chat/completions"); got != len(tt.wantStatus) {
				t.Errorf("server saw %d requests, want %d", got, len(tt.wantStatus))
			}
			if elapsed < tt.minElapsed {
				t.Errorf("took %v, want at least %v", elapsed, tt.minElapsed)
			}
			for i, a := range attempts[:len(attempts)-1] {
				if a.Error == "" {
					t.Errorf("failed attempt %d has no error text", i)
				}
			}
		})
	}
}

// A Retry-After beyond retry_after_max waits the cap, not what the server
// asked: one misbehaving proxy's 429 with an hour's Retry-After would hold
// the request, and the concurrency slot it occupies, for that hour. The
// failed attempt's record says the server asked for more. A Retry-After
// within the cap is still honoured as asked.
func TestRetryAfterIsCapped(t *testing.T) { eachTransport(t, testRetryAfterIsCapped) }

func testRetryAfterIsCapped(t *testing.T, transport string) {
	for _, tt := range []struct {
		name       string
		asked      time.Duration // openaitest sends whole seconds as Retry-After, else retry-after-ms
		fault      openaitest.Fault
		status     int
		max        string
		waits      time.Duration
		annotation string // in the failed attempt's error; "" for none
	}{
		{"Retry-After of 1000h", 1000 * time.Hour, openaitest.Fault429, 429, "200ms", 200 * time.Millisecond,
			"the server asked to wait 1000h0m0s before retrying; waited retry_after_max 200ms"},
		{"retry-after-ms of 1000h", 1000*time.Hour + time.Millisecond, openaitest.Fault503, 503, "300ms", 300 * time.Millisecond,
			"the server asked to wait 1000h0m0.001s before retrying; waited retry_after_max 300ms"},
		{"within the cap", 400 * time.Millisecond, openaitest.Fault429, 429, "10s", 400 * time.Millisecond, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(openaitest.Options{Faults: []openaitest.Fault{tt.fault}, RetryAfter: tt.asked})
			defer srv.Close()
			c := newTransportClient(t, transport, srv.BaseURL(), map[string]any{"retry_after_max": tt.max})
			// Bounded, so that a wait of what the server asked fails the
			// test instead of hanging it.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			resp, err := c.Generate(ctx, chat("x"))
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("Generate after %v: %v", elapsed, err)
			}
			if got := statuses(resp.Attempts); fmt.Sprint(got) != fmt.Sprint([]int{tt.status, 200}) {
				t.Fatalf("attempt statuses = %v, want [%d 200]", got, tt.status)
			}
			if elapsed < tt.waits || elapsed > tt.waits+5*time.Second {
				t.Errorf("took %v, want about %v", elapsed, tt.waits)
			}
			msg := resp.Attempts[0].Error
			if tt.annotation == "" && strings.Contains(msg, "asked to wait") || !strings.Contains(msg, tt.annotation) {
				t.Errorf("failed attempt's error %q, want it to say %q", msg, tt.annotation)
			}
		})
	}
}

// retryAfter saturates a delay beyond time.Duration's range instead of
// converting it (Go leaves a float's out-of-range conversion to an integer
// unspecified: on amd64 it is negative, which read as "no Retry-After").
func TestRetryAfterSaturates(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		name, value string
		want        time.Duration
	}{
		{"Retry-After", "1e30", math.MaxInt64},
		{"Retry-After", "+Inf", math.MaxInt64},
		{"retry-after-ms", "1e30", math.MaxInt64},
		{"Retry-After", "2.5", 2500 * time.Millisecond},
		{"retry-after-ms", "250", 250 * time.Millisecond},
		{"Retry-After", "NaN", 0},
		{"Retry-After", "-3", 0},
	} {
		h := http.Header{}
		h.Set(tt.name, tt.value)
		if got := retryAfter(h, now); got != tt.want {
			t.Errorf("%s: %s = %v, want %v", tt.name, tt.value, got, tt.want)
		}
	}
}

// retry_after_max defaults to a minute, and like the other retry settings
// it is a transport option: it changes when a request is sent again, never
// the answer, so it stays out of the cache key. Every transport option
// names a real option.
func TestRetryAfterMaxOption(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1/v1", nil)
	if c.s.retryAfterMax != time.Minute {
		t.Errorf("retry_after_max defaults to %v, want 1m", c.s.retryAfterMax)
	}
	if !slices.Contains(c.TransportOptions(), "retry_after_max") {
		t.Errorf("transport options %q lack retry_after_max", c.TransportOptions())
	}
	names := map[string]bool{}
	typ := reflect.TypeFor[Options]()
	for i := range typ.NumField() {
		names[strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	for _, o := range c.TransportOptions() {
		if !names[o] {
			t.Errorf("transport option %q is no option of Options", o)
		}
	}
}

func TestContextLengthMessage(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{MaxContext: 3})
	defer srv.Close()
	c := newTestClient(t, srv.BaseURL(), nil)
	_, err := c.Generate(context.Background(), chat("one two three four"))
	var re *sdk.RequestError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "This model's maximum context length is 3 tokens") {
		t.Fatalf("err = %v", err)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{Faults: []openaitest.Fault{openaitest.Fault429}, RetryAfter: 30 * time.Second})
	defer srv.Close()
	c := newTestClient(t, srv.BaseURL(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Generate(ctx, chat("x"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned after %v, want promptly", d)
	}
}

// The key goes out as a Bearer token and never comes back in an error,
// even when the server quotes it.
func TestAPIKeyNeverLeaks(t *testing.T) { eachTransport(t, testAPIKeyNeverLeaks) }

func testAPIKeyNeverLeaks(t *testing.T, transport string) {
	const key = "sk-planted-4f1c9e2b7a"
	t.Setenv("HAYLOFT_TEST_KEY", key)
	srv := openaitest.NewServer(openaitest.Options{APIKey: key, Faults: []openaitest.Fault{openaitest.Fault500, openaitest.FaultReset, openaitest.FaultMalformed}})
	defer srv.Close()
	c := newTransportClient(t, transport, srv.BaseURL(), map[string]any{"api_key_env": "HAYLOFT_TEST_KEY", "max_retries": 1})

	var texts []string
	collect := func(resp *sdk.GenerateResponse, err error) {
		if err != nil {
			texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
			var ae *AttemptsError
			if errors.As(err, &ae) {
				resp = &sdk.GenerateResponse{Attempts: ae.Attempts}
			}
		}
		if resp != nil {
			for _, a := range resp.Attempts {
				texts = append(texts, a.Error)
			}
		}
	}
	collect(c.Generate(context.Background(), chat("a"))) // 500, reset -> retryable
	collect(c.Generate(context.Background(), chat("b"))) // malformed
	collect(c.Generate(context.Background(), chat("c"))) // success
	for _, a := range srv.Authorizations() {
		if a != "Bearer "+key {
			t.Errorf("Authorization = %q", a)
		}
	}

	// A server that quotes the header back in its error message.
	quoting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"bad key `+r.Header.Get("Authorization")+`","code":"invalid_api_key"}}`, http.StatusUnauthorized)
	}))
	defer quoting.Close()
	q := newTransportClient(t, transport, quoting.URL+"/v1", map[string]any{"api_key_env": "HAYLOFT_TEST_KEY"})
	_, err := q.Generate(context.Background(), chat("d"))
	// A 401 on the first request is the config's error (the key), not the
	// sample's.
	var ce *sdk.ConfigError
	if !errors.As(err, &ce) || ce.Field != "api_key_env" {
		t.Errorf("401: err = %v, want a config error on api_key_env", err)
	}
	texts = append(texts, err.Error())
	_, _, err = q.LogLikelihood(context.Background(), "e")
	collect(nil, err)

	if len(texts) < 6 {
		t.Fatalf("collected only %d error texts", len(texts))
	}
	for _, s := range texts {
		if strings.Contains(s, key) {
			t.Errorf("key leaked: %s", s)
		}
	}
}

// 1,000 concurrent requests against random faults: each ends in an answer
// or a recorded error, retries stay bounded, and the server saw exactly the
// attempts the client reports.
func TestConcurrentFaults(t *testing.T) { eachTransport(t, testConcurrentFaults) }

func testConcurrentFaults(t *testing.T, transport string) {
	srv := openaitest.NewServer(openaitest.Options{
		FailRate:   0.3,
		FaultKinds: []openaitest.Fault{openaitest.Fault429, openaitest.Fault500, openaitest.FaultReset, openaitest.FaultMalformed},
		Seed:       1,
	})
	defer srv.Close()
	const maxRetries = 3
	c := newTransportClient(t, transport, srv.BaseURL(), map[string]any{"max_retries": maxRetries})
	const n = 1000
	type result struct {
		attempts []sdk.Attempt
		err      error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Generate(context.Background(), chat(fmt.Sprintf("sample %d", i)))
			if err != nil {
				var ae *AttemptsError
				if !errors.As(err, &ae) {
					results[i] = result{err: fmt.Errorf("not an AttemptsError: %w", err)}
					return
				}
				results[i] = result{ae.Attempts, err}
				return
			}
			results[i] = result{resp.Attempts, nil}
		}()
	}
	wg.Wait()
	total, ok, failed := 0, 0, 0
	prompts := srv.Prompts()
	for i, r := range results {
		if len(r.attempts) == 0 {
			t.Fatalf("request %d: no attempts recorded (err %v)", i, r.err)
		}
		if len(r.attempts) > maxRetries+1 {
			t.Errorf("request %d: %d attempts", i, len(r.attempts))
		}
		if got := prompts[fmt.Sprintf("sample %d", i)]; got != len(r.attempts) {
			t.Errorf("request %d: server saw it %d times, client reports %d attempts", i, got, len(r.attempts))
		}
		total += len(r.attempts)
		if r.err == nil {
			ok++
			continue
		}
		failed++
		var re *sdk.RequestError
		if !sdk.IsRetryable(r.err) && !(errors.As(r.err, &re) && re.Code == sdk.CodeBadResponse) {
			t.Errorf("request %d: unexpected error kind %v", i, r.err)
		}
	}
	if got := srv.Requests("/v1/chat/completions"); got != total {
		t.Errorf("server saw %d requests, clients report %d attempts", got, total)
	}
	if ok < n/2 || failed == 0 {
		t.Errorf("ok=%d failed=%d: fault injection not exercised as expected", ok, failed)
	}
	t.Logf("%d ok, %d failed, %d attempts, server max in flight %d", ok, failed, total, srv.MaxInFlight())
}

func TestLogLikelihood(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{})
	defer srv.Close()
	c := newTestClient(t, srv.BaseURL(), nil)
	prompt := "The quick brown fox"
	sum, per, err := c.LogLikelihood(context.Background(), prompt)
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"quick", "brown", "fox"}
	if len(per) != len(words) {
		t.Fatalf("per-token = %v, want %d values", per, len(words))
	}
	want := 0.0
	for i, w := range words {
		lp := openaitest.TokenLogprob(w)
		if per[i] != lp {
			t.Errorf("token %q: %v, want %v", w, per[i], lp)
		}
		want += lp
	}
	if math.Abs(sum-want) > 1e-9 {
		t.Errorf("sum = %v, want %v", sum, want)
	}
}

func TestEmbedder(t *testing.T) { eachTransport(t, testEmbedder) }

func testEmbedder(t *testing.T, transport string) {
	srv := openaitest.NewServer(openaitest.Options{EmbeddingDim: 16, Faults: []openaitest.Fault{openaitest.Fault500}})
	defer srv.Close()
	e, err := NewEmbedder(context.Background(), sdk.MustOptions(map[string]any{
		"base_url": srv.BaseURL(), "batch_size": 3, "retry_backoff": "1ms",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	texts := []string{"a", "b", "c", "d", "e", "f", "g"}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vecs {
		want := openaitest.Vector(texts[i], 16)
		if fmt.Sprint(v) != fmt.Sprint(want) {
			t.Errorf("vector %d differs", i)
		}
	}
	if got := srv.Requests("/v1/embeddings"); got != 4 { // 3 batches, one retried
		t.Errorf("embeddings requests = %d, want 4", got)
	}
}

func TestTokenize(t *testing.T) { eachTransport(t, testTokenize) }

func testTokenize(t *testing.T, transport string) {
	texts := []string{"Hello, world", "小明在北京", "", "one two three four"}
	tests := []struct {
		style       openaitest.TokenizeStyle
		tokenizer   string
		unsupported bool
	}{
		{openaitest.TokenizeVLLM, "model", false},
		{openaitest.TokenizeLlamaCpp, "model", false},
		{openaitest.TokenizeNone, "model", true},
		{openaitest.TokenizeVLLM, "", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s", tt.style, tt.tokenizer), func(t *testing.T) {
			srv := openaitest.NewServer(openaitest.Options{Tokenize: tt.style})
			defer srv.Close()
			c := newTransportClient(t, transport, srv.BaseURL(), map[string]any{"tokenizer": tt.tokenizer})
			resp, err := c.Tokenize(context.Background(), &sdk.TokenizeRequest{Texts: texts})
			if tt.unsupported {
				if !errors.Is(err, sdk.ErrUnsupported) {
					t.Fatalf("err = %v, want ErrUnsupported", err)
				}
				// The verdict is remembered: no second probe.
				before := srv.Requests("/tokenize")
				_, err = c.Tokenize(context.Background(), &sdk.TokenizeRequest{Texts: texts})
				if !errors.Is(err, sdk.ErrUnsupported) || srv.Requests("/tokenize") != before {
					t.Errorf("second call: err=%v, requests %d -> %d", err, before, srv.Requests("/tokenize"))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Tokenizer != "model:fake-model" {
				t.Errorf("tokenizer = %q", resp.Tokenizer)
			}
			for i, text := range texts {
				if fmt.Sprint(resp.Tokens[i]) != fmt.Sprint(openaitest.Tokens(text)) {
					t.Errorf("text %d: %v, want %v", i, resp.Tokens[i], openaitest.Tokens(text))
				}
			}
			before := srv.Requests("/tokenize")
			counts, err := c.CountTokens(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			for i, text := range texts {
				if counts[i] != openaitest.CountTokens(text) {
					t.Errorf("count %d = %d", i, counts[i])
				}
			}
			if srv.Requests("/tokenize") != before {
				t.Errorf("cached counts still hit the server")
			}
		})
	}
}

func TestProvisionAndValidate(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{Model: "org/served"})
	defer srv.Close()
	m, err := New(context.Background(), sdk.MustOptions(map[string]any{"base_url": srv.BaseURL()}))
	if err != nil {
		t.Fatal(err)
	}
	c := m.(*Client)
	if err := c.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.Model() != "org/served" {
		t.Errorf("model = %q", c.Model())
	}
	if err := c.Validate(context.Background()); err != nil {
		t.Errorf("Validate: %v", err)
	}
	wrong := newTestClient(t, srv.BaseURL(), map[string]any{"model": "other"})
	if err := wrong.Validate(context.Background()); err == nil || !strings.Contains(err.Error(), "org/served") {
		t.Errorf("Validate wrong model: %v", err)
	}
}

// encode splices extra_body in without deduplicating keys, which is sound
// only while every field of a generation body is one extra_body may not set.
func TestRequestFieldsAreReserved(t *testing.T) {
	typ := reflect.TypeOf(request{})
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if !slices.Contains(reservedBody, name) {
			t.Errorf("request field %q is not in reservedBody", name)
		}
	}
}

func TestEncodeMergesExtraBody(t *testing.T) {
	for _, tt := range []struct {
		extra map[string]any
		r     request
		want  string
	}{
		{nil, request{Model: "m", MaxTokens: 3}, `{"model":"m","max_tokens":3}`},
		{map[string]any{"top_k": 5, "chat_template_kwargs": map[string]any{"enable_thinking": false}}, request{Model: "m"},
			`{"chat_template_kwargs":{"enable_thinking":false},"top_k":5,"model":"m"}`},
		{map[string]any{"top_k": 5}, request{}, `{"top_k":5}`},
		{nil, request{Model: "m", Messages: []sdk.Message{{Role: "user", Content: "<a> & \"b\"\n\u2028\xff"}}, Stop: []string{"\n"}},
			`{"model":"m","messages":[{"role":"user","content":"\u003ca\u003e \u0026 \"b\"\n\u2028\ufffd"}],"stop":["\n"]}`},
		{nil, request{Messages: []sdk.Message{{Role: "user", Content: "q"}}}, `{"messages":[{"role":"user","content":"q"}]}`},
		{map[string]any{"top_k": 5}, request{Model: "m", Messages: []sdk.Message{{Role: "user", Content: "q"}}, MaxTokens: 2},
			`{"top_k":5,"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":2}`},
	} {
		opts := map[string]any{"base_url": "http://127.0.0.1/v1"}
		if tt.extra != nil {
			opts["extra_body"] = tt.extra
		}
		c, err := NewClient(context.Background(), sdk.MustOptions(opts))
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.encode(&tt.r)
		if err != nil || string(got) != tt.want {
			t.Errorf("encode(%+v) with extra_body %v = %s, %v; want %s", tt.r, tt.extra, got, err, tt.want)
		}
		if cap(got) < len(got) || cap(got) > len(got)+3 {
			t.Errorf("encode(%+v): %d bytes in a buffer of %d: not sized in advance", tt.r, len(got), cap(got))
		}
		if tt.extra == nil {
			if want, _ := json.Marshal(&tt.r); string(got) != string(want) {
				t.Errorf("encode(%+v) = %s, json.Marshal gives %s", tt.r, got, want)
			}
		}
	}
}

// In loglikelihood mode every request scores its prompt; a server that does
// not return prompt logprobs is a config error on the option, found by
// Provision before any sample.
func TestLoglikelihoodMode(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{})
	defer srv.Close()
	c := newTestClient(t, srv.BaseURL(), map[string]any{"loglikelihood": true})
	if err := c.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	req := &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: "The quick brown fox"}}}
	resp, err := c.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var got LogLikelihoodAnswer
	if err := json.Unmarshal([]byte(resp.Text), &got); err != nil {
		t.Fatalf("answer %q: %v", resp.Text, err)
	}
	want := 0.0
	for _, w := range []string{"quick", "brown", "fox"} {
		want += openaitest.TokenLogprob(w)
	}
	if got.Tokens != 3 || math.Abs(got.LogprobSum-want) > 1e-9 || resp.FinishReason != "loglikelihood" {
		t.Errorf("answer %+v (%s), want sum %v over 3 tokens", got, resp.FinishReason, want)
	}
	if n := srv.Requests("/v1/completions"); n != 2 {
		t.Errorf("%d completions requests, want the probe and one", n)
	}

	bare := openaitest.NewServer(openaitest.Options{NoLogprobs: true})
	defer bare.Close()
	nc := newTestClient(t, bare.BaseURL(), map[string]any{"loglikelihood": true})
	err = nc.Provision(context.Background())
	var ce *sdk.ConfigError
	if !errors.As(err, &ce) || ce.Field != "loglikelihood" || !strings.Contains(ce.Msg, "without logprobs") {
		t.Fatalf("Provision against a server without logprobs: %v; want a config error on loglikelihood", err)
	}
	if _, err := nc.Generate(context.Background(), req); !errors.As(err, &ce) {
		t.Errorf("Generate against a server without logprobs: %v; want a config error", err)
	}
}

// A long prompt's body is encoded as it is sent: the bytes are encode's,
// the declared length is theirs, and every attempt (a 500 and a reset
// before the answer) gets the whole body again.
func TestLongPromptBodyStreamed(t *testing.T) { eachTransport(t, testLongPromptBodyStreamed) }

func testLongPromptBodyStreamed(t *testing.T, transport string) {
	long := strings.Repeat("hay <&> \"é日🐄\" \n", streamBodyBytes/8) + "\xe2" + strings.Repeat("\x80", messagesPiece+5)
	r := request{Model: "fake-model", MaxTokens: 4, Stop: []string{"\n"},
		Messages: []sdk.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: long}, {Role: "user", Content: ""}}}
	c := newTransportClient(t, transport, "http://127.0.0.1/v1", map[string]any{"extra_body": map[string]any{"top_k": 5}})
	want, err := c.encode(&r)
	if err != nil {
		t.Fatal(err)
	}
	body, err := c.requestBody(&r)
	if err != nil || body.stream == nil {
		t.Fatalf("requestBody: %v, streamed %v", err, body.stream != nil)
	}
	for range 2 { // a reader is made anew for each attempt
		got, err := io.ReadAll(body.stream())
		if err != nil || string(got) != string(want) || body.size != int64(len(want)) {
			t.Fatalf("streamed %d bytes (declared %d, %v), encode gives %d; equal: %v", len(got), body.size, err, len(want), string(got) == string(want))
		}
		// io.Copy takes the reader's WriteTo.
		var w strings.Builder
		if n, err := io.Copy(&w, body.stream()); err != nil || w.String() != string(want) || n != int64(len(want)) {
			t.Fatalf("WriteTo: %d bytes (%v), encode gives %d; equal: %v", n, err, len(want), w.String() == string(want))
		}
	}

	var seen []string
	var mu sync.Mutex
	srv, err := openaitest.Start(openaitest.Options{FaultFunc: func(n int, prompt string) openaitest.Fault {
		mu.Lock()
		seen = append(seen, prompt)
		mu.Unlock()
		return []openaitest.Fault{openaitest.Fault500, openaitest.FaultReset, openaitest.FaultNone}[min(n, 2)]
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c = newTransportClient(t, transport, srv.BaseURL(), nil)
	resp, err := c.Generate(context.Background(), &sdk.GenerateRequest{Messages: r.Messages})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Attempts) != 3 || len(seen) != 3 {
		t.Fatalf("%d attempts, server saw %d, want 3", len(resp.Attempts), len(seen))
	}
	for i, p := range seen {
		if !strings.Contains(p, strings.ToValidUTF8(long, "\uFFFD")[:1000]) || len(p) < len(long) {
			t.Errorf("attempt %d: the server got %d bytes of prompt, want the whole %d", i, len(p), len(long))
		}
	}
}
