package openai

import (
	"context"
	"errors"
	"testing"

	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

// The kernel reaches the model over gRPC: answers, attempts and the kinds of
// errors must survive the trip.
func TestOverGRPC(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{
		MaxContext: 20,
		Tokenize:   openaitest.TokenizeVLLM,
		FaultFunc: func(n int, prompt string) openaitest.Fault {
			switch prompt {
			case "flaky":
				if n%2 == 0 {
					return openaitest.Fault500
				}
			case "down":
				return openaitest.Fault503
			}
			return openaitest.FaultNone
		},
	})
	defer srv.Close()
	set := sdk.NewSet("test", "0")
	set.RegisterModel(Name, New)
	m := sdktest.Model(t, set, Name, map[string]any{
		"base_url": srv.BaseURL(), "max_retries": 2, "retry_backoff": "1ms", "tokenizer": "model",
	})
	ctx := context.Background()

	resp, err := m.Generate(ctx, chat("flaky"))
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(resp.Attempts); len(got) != 2 || got[0] != 500 || got[1] != 200 {
		t.Errorf("attempts = %v, want [500 200]", got)
	}

	_, err = m.Generate(ctx, chat("down"))
	var re *sdk.RetryableError
	if !errors.As(err, &re) {
		t.Errorf("exhausted retries: err = %v, want *sdk.RetryableError", err)
	}

	_, err = m.Generate(ctx, chat("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty twentyone"))
	var qe *sdk.RequestError
	if !errors.As(err, &qe) || qe.Code != sdk.CodeContextLength {
		t.Errorf("over-long prompt: err = %v, want context_length_exceeded", err)
	}

	tok, err := m.Tokenize(ctx, &sdk.TokenizeRequest{Texts: []string{"a b c"}})
	if err != nil || len(tok.Tokens) != 1 || len(tok.Tokens[0]) != 3 {
		t.Errorf("Tokenize = %v, %v", tok, err)
	}

	if _, err := sdktest.Configure(t, set, sdk.KindModel, Name, map[string]any{"base_url": srv.BaseURL(), "api_key": "sk-x"}); err == nil {
		t.Error("api_key in config accepted")
	} else {
		var ce *sdk.ConfigError
		if !errors.As(err, &ce) || ce.Field != "api_key" {
			t.Errorf("err = %v, want ConfigError on api_key", err)
		}
	}
}
