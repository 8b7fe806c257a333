package openaitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func post(t *testing.T, url string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return resp.StatusCode, resp.Header, out
}

func chatText(t *testing.T, out map[string]any) string {
	t.Helper()
	choices, _ := out["choices"].([]any)
	if len(choices) != 1 {
		t.Fatalf("choices = %v", out)
	}
	return choices[0].(map[string]any)["message"].(map[string]any)["content"].(string)
}

func TestDefaultAnswer(t *testing.T) {
	tests := []struct {
		name, msg, want string
	}{
		{"needle", "The sky is grey. The best thing to do in San Francisco is eat a sandwich. Cats sleep.\nWhat is the best thing to do in San Francisco?",
			"The best thing to do in San Francisco is eat a sandwich."},
		{"one line", "The magic number is 42. Rain falls. What is the magic number?", "The magic number is 42."},
		{"nothing shared", "Rain falls.\nWho won?", "I don't know."},
		{"cjk", "今天下雨。小明在北京工作。\n小明在哪里工作？", "小明在北京工作。"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DefaultAnswer(ChatRequest{Messages: []Message{{Role: "user", Content: tt.msg}}})
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestChatAndCounters(t *testing.T) {
	s := NewServer(Options{})
	defer s.Close()
	msg := "Alpha beta. Gamma delta epsilon.\nWhere is gamma?"
	for range 2 {
		code, _, out := post(t, s.BaseURL()+"/chat/completions", map[string]any{
			"model": "fake-model", "messages": []Message{{Role: "user", Content: msg}}, "max_tokens": 2,
		})
		if code != 200 {
			t.Fatalf("status %d: %v", code, out)
		}
		if got := chatText(t, out); got != "Gamma delta" {
			t.Errorf("text = %q, want max_tokens to cut it to %q", got, "Gamma delta")
		}
		usage := out["usage"].(map[string]any)
		if got := int(usage["prompt_tokens"].(float64)); got != CountTokens(msg) {
			t.Errorf("prompt_tokens = %d, want %d", got, CountTokens(msg))
		}
	}
	if got := s.Requests("/v1/chat/completions"); got != 2 {
		t.Errorf("Requests = %d, want 2", got)
	}
	if got := s.Prompts()[msg]; got != 2 {
		t.Errorf("Prompts[msg] = %d, want 2", got)
	}
}

func TestFaultSequence(t *testing.T) {
	s := NewServer(Options{Faults: []Fault{Fault429, Fault500, FaultMalformed, Fault503}, RetryAfter: 2 * time.Second})
	defer s.Close()
	body := map[string]any{"messages": []Message{{Role: "user", Content: "hi"}}}
	wantCodes := []int{429, 500, 200, 503, 200}
	for i, want := range wantCodes {
		code, hdr, out := post(t, s.BaseURL()+"/chat/completions", body)
		if code != want {
			t.Fatalf("request %d: status %d, want %d", i, code, want)
		}
		if (want == 429 || want == 503) && hdr.Get("Retry-After") != "2" {
			t.Errorf("request %d: Retry-After = %q", i, hdr.Get("Retry-After"))
		}
		if i == 2 && out != nil {
			t.Errorf("malformed body decoded: %v", out)
		}
	}
}

func TestResetAndHang(t *testing.T) {
	s := NewServer(Options{Faults: []Fault{FaultReset, FaultHang}})
	defer s.Close()
	b := []byte(`{"messages":[{"role":"user","content":"hi"}]}`)
	if _, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(b)); err == nil {
		t.Fatal("reset: want a transport error")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", s.BaseURL()+"/chat/completions", bytes.NewReader(b))
	start := time.Now()
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("hang: want a timeout")
	}
	if d := time.Since(start); d < 90*time.Millisecond {
		t.Errorf("hang returned after %v", d)
	}
}

func TestContextLength(t *testing.T) {
	s := NewServer(Options{MaxContext: 10})
	defer s.Close()
	code, _, out := post(t, s.BaseURL()+"/chat/completions", map[string]any{
		"messages": []Message{{Role: "user", Content: "one two three four five six seven eight"}}, "max_tokens": 5,
	})
	if code != 400 {
		t.Fatalf("status %d", code)
	}
	e := out["error"].(map[string]any)
	if e["code"] != "context_length_exceeded" || !strings.HasPrefix(e["message"].(string), "This model's maximum context length is 10 tokens. However, you requested 13 tokens") {
		t.Errorf("error = %v", e)
	}
}

func TestCompletionsEcho(t *testing.T) {
	s := NewServer(Options{Answer: func(ChatRequest) string { return "yes" }})
	defer s.Close()
	prompt := "The cat sat"
	code, _, out := post(t, s.BaseURL()+"/completions", map[string]any{
		"prompt": prompt, "max_tokens": 1, "echo": true, "logprobs": 1,
	})
	if code != 200 {
		t.Fatalf("status %d: %v", code, out)
	}
	ch := out["choices"].([]any)[0].(map[string]any)
	if ch["text"] != "The cat sat yes" {
		t.Errorf("text = %q", ch["text"])
	}
	lp := ch["logprobs"].(map[string]any)
	toks := lp["token_logprobs"].([]any)
	if len(toks) != 4 || toks[0] != nil {
		t.Fatalf("token_logprobs = %v", toks)
	}
	if got, want := toks[1].(float64), TokenLogprob("cat"); math.Abs(got-want) > 1e-12 {
		t.Errorf("logprob(cat) = %v, want %v", got, want)
	}
	offs := lp["text_offset"].([]any)
	if offs[3].(float64) != float64(len(prompt)+1) {
		t.Errorf("text_offset = %v", offs)
	}
}

// Logprob sets the logprobs a test knows; NoLogprobs answers without any.
func TestCompletionsKnownLogprobs(t *testing.T) {
	s := NewServer(Options{Logprob: func(prompt, token string) float64 {
		if strings.HasPrefix(prompt, "good") {
			return -0.5
		}
		return -float64(len(token))
	}})
	defer s.Close()
	for prompt, want := range map[string][]any{"good cat": {nil, -0.5}, "bad cat": {nil, -3.0}} {
		_, _, out := post(t, s.BaseURL()+"/completions", map[string]any{"prompt": prompt, "max_tokens": 1, "echo": true, "logprobs": 1})
		toks := out["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["token_logprobs"].([]any)
		if len(toks) < 2 || toks[0] != want[0] || toks[1] != want[1] {
			t.Errorf("%q: token_logprobs = %v, want %v …", prompt, toks, want)
		}
	}
	bare := NewServer(Options{NoLogprobs: true, Answer: func(ChatRequest) string { return "yes" }})
	defer bare.Close()
	_, _, out := post(t, bare.BaseURL()+"/completions", map[string]any{"prompt": "The cat", "max_tokens": 1, "echo": true, "logprobs": 1})
	ch := out["choices"].([]any)[0].(map[string]any)
	if _, ok := ch["logprobs"]; ok || ch["text"] != " yes" {
		t.Errorf("a server without logprobs answered %v", ch)
	}
}

func TestEmbeddings(t *testing.T) {
	s := NewServer(Options{EmbeddingDim: 8})
	defer s.Close()
	code, _, out := post(t, s.BaseURL()+"/embeddings", map[string]any{"input": []string{"a", "b"}})
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	for _, d := range out["data"].([]any) {
		d := d.(map[string]any)
		idx := int(d["index"].(float64))
		want := Vector([]string{"a", "b"}[idx], 8)
		got := d["embedding"].([]any)
		for i := range want {
			if float32(got[i].(float64)) != want[i] {
				t.Fatalf("embedding %d differs at %d", idx, i)
			}
		}
	}
}

func TestTokenizeStyles(t *testing.T) {
	text := "Hello, 世界 42"
	want := Tokens(text)
	if len(want) != 5 {
		t.Fatalf("Tokens(%q) has %d ids, want 5", text, len(want))
	}
	tests := []struct {
		style TokenizeStyle
		body  map[string]any
		code  int
		n     int
	}{
		{TokenizeVLLM, map[string]any{"model": "m", "prompt": text}, 200, 5},
		{TokenizeVLLM, map[string]any{"content": text}, 400, 0},
		{TokenizeLlamaCpp, map[string]any{"content": text}, 200, 5},
		{TokenizeLlamaCpp, map[string]any{"model": "m", "prompt": text}, 200, 0},
		{TokenizeNone, map[string]any{"content": text}, 404, 0},
	}
	for _, tt := range tests {
		s := NewServer(Options{Tokenize: tt.style})
		code, _, out := post(t, s.URL+"/tokenize", tt.body)
		s.Close()
		if code != tt.code {
			t.Errorf("%s %v: status %d, want %d", tt.style, tt.body, code, tt.code)
			continue
		}
		if code == 200 {
			toks, _ := out["tokens"].([]any)
			if len(toks) != tt.n {
				t.Errorf("%s %v: %d tokens, want %d", tt.style, tt.body, len(toks), tt.n)
			}
			_, hasCount := out["count"]
			if hasCount != (tt.style == TokenizeVLLM) {
				t.Errorf("%s: count field present = %v", tt.style, hasCount)
			}
		}
	}
}

func TestCapacityQueueAndMetrics(t *testing.T) {
	s := NewServer(Options{Capacity: 2, QueueLimit: 2, Latency: 300 * time.Millisecond})
	defer s.Close()
	var wg sync.WaitGroup
	codes := make([]int, 5)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := []byte(`{"messages":[{"role":"user","content":"hi"}]}`)
			resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(b))
			if err == nil {
				codes[i] = resp.StatusCode
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `vllm:num_requests_waiting{model_name="fake-model"} 2.0`) {
		t.Errorf("metrics:\n%s", metrics)
	}
	wg.Wait()
	n429 := 0
	for _, c := range codes {
		if c == 429 {
			n429++
		}
	}
	if n429 != 1 {
		t.Errorf("codes %v: want exactly one 429", codes)
	}
	if got := s.MaxInFlight(); got != 5 {
		t.Errorf("MaxInFlight = %d, want 5", got)
	}
}

// The command is what CI scripts start; build it and talk to it.
func TestFakeOpenAICommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "fakeopenai")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/fakeopenai").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-tokenize", "vllm")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("read address: %v", err)
	}
	root := strings.TrimSpace(line)
	resp, err := http.Get(root + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /v1/models: %d", resp.StatusCode)
	}
}

// Span covers a path's requests since the last reset, from the first
// arrival to the last answer, and nothing of other paths.
func TestSpan(t *testing.T) {
	s := NewServer(Options{Latency: 20 * time.Millisecond})
	defer s.Close()
	chat := map[string]any{"model": "fake-model", "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	post(t, s.BaseURL()+"/chat/completions", chat)
	s.ResetCounters()
	if first, last := s.Span("/v1/chat/completions"); !first.IsZero() || !last.IsZero() {
		t.Fatalf("after reset: span %v to %v, want zero", first, last)
	}
	before := time.Now()
	for range 2 {
		post(t, s.BaseURL()+"/chat/completions", chat)
	}
	after := time.Now()
	first, last := s.Span("/v1/chat/completions")
	if first.Before(before) || last.After(after) || last.Sub(first) < 40*time.Millisecond {
		t.Errorf("span %v to %v of two 20 ms requests made between %v and %v", first, last, before, after)
	}
	if f, _ := s.Span("/v1/embeddings"); !f.IsZero() {
		t.Errorf("span of a path never asked: starts %v", f)
	}
}
