package limiter

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
)

func TestProbes(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{Capacity: 2, Latency: 400 * time.Millisecond})
	defer srv.Close()
	ctx := context.Background()
	if n, err := VLLMWaiting(ctx, srv.BaseURL()); err != nil || n != 0 {
		t.Fatalf("idle: waiting=%d err=%v", n, err)
	}
	if n, err := LlamaCppWaiting(ctx, srv.URL); err != nil || n != 0 {
		t.Fatalf("idle slots: %d %v", n, err)
	}
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"q%d"}]}`, i)
			if resp, err := http.Post(srv.BaseURL()+"/chat/completions", "application/json", strings.NewReader(body)); err == nil {
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(150 * time.Millisecond)
	if n, err := VLLMWaiting(ctx, srv.BaseURL()); err != nil || n != 3 {
		t.Errorf("busy: waiting=%d err=%v, want 3", n, err)
	}
	if n, err := LlamaCppWaiting(ctx, srv.URL); err != nil || n != 1 {
		t.Errorf("busy slots: %d %v, want 1", n, err)
	}
	wg.Wait()
	plain := openaitest.NewServer(openaitest.Options{})
	defer plain.Close()
	if _, err := LlamaCppWaiting(ctx, plain.URL); err == nil {
		t.Errorf("slots on a server without capacity: want an error")
	}
}
