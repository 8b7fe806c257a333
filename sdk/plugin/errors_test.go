package plugin

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hayloft/hayloft/sdk"
)

func TestErrorsKeepKind(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		check func(t *testing.T, got error)
	}{
		{"config", sdk.Configf("top_k", "must be positive, got %d", -1), func(t *testing.T, got error) {
			var ce *sdk.ConfigError
			if !errors.As(got, &ce) || ce.Field != "top_k" || ce.Msg != "must be positive, got -1" {
				t.Errorf("got %#v", got)
			}
		}},
		{"wrapped config keeps its text", fmt.Errorf("load haystack: %w", sdk.Configf("haystack", "no such file")), func(t *testing.T, got error) {
			var ce *sdk.ConfigError
			if !errors.As(got, &ce) || ce.Field != "haystack" || ce.Msg != "no such file" {
				t.Errorf("got %#v", got)
			}
			if got.Error() != "load haystack: haystack: no such file" {
				t.Errorf("text %q", got.Error())
			}
		}},
		{"config without field", &sdk.ConfigError{Msg: "block is empty"}, func(t *testing.T, got error) {
			var ce *sdk.ConfigError
			if !errors.As(got, &ce) || ce.Field != "" || ce.Msg != "block is empty" {
				t.Errorf("got %#v", got)
			}
		}},
		{"retryable", sdk.Retryable(errors.New("HTTP 429"), 1500*time.Millisecond), func(t *testing.T, got error) {
			var re *sdk.RetryableError
			if !errors.As(got, &re) || re.After != 1500*time.Millisecond || re.Err.Error() != "HTTP 429" {
				t.Errorf("got %#v", got)
			}
		}},
		{"request", &sdk.RequestError{Code: sdk.CodeContextLength, Msg: "prompt has 140000 tokens"}, func(t *testing.T, got error) {
			var qe *sdk.RequestError
			if !errors.As(got, &qe) || qe.Code != sdk.CodeContextLength || qe.Msg != "prompt has 140000 tokens" {
				t.Errorf("got %#v", got)
			}
		}},
		{"unsupported", fmt.Errorf("no tokenizer: %w", sdk.ErrUnsupported), func(t *testing.T, got error) {
			if !errors.Is(got, sdk.ErrUnsupported) || got.Error() != "no tokenizer: unsupported" {
				t.Errorf("got %#v", got)
			}
		}},
		{"canceled", context.Canceled, func(t *testing.T, got error) {
			if !errors.Is(got, context.Canceled) {
				t.Errorf("got %#v", got)
			}
		}},
		{"deadline", fmt.Errorf("call server: %w", context.DeadlineExceeded), func(t *testing.T, got error) {
			if !errors.Is(got, context.DeadlineExceeded) {
				t.Errorf("got %#v", got)
			}
		}},
		{"plain", errors.New("disk full"), func(t *testing.T, got error) {
			if got.Error() != "disk full" || sdk.IsRetryable(got) {
				t.Errorf("got %#v", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, fromStatus(context.Background(), toStatus(tt.err)))
		})
	}
}

// Errors that never passed through toStatus come from gRPC itself.
func TestTransportErrors(t *testing.T) {
	tests := []struct {
		code codes.Code
		want error
	}{
		{codes.Unavailable, ErrConnection},
		{codes.Unimplemented, sdk.ErrUnsupported},
		// Cancelled while the caller's context is live: the connection
		// closed under the call.
		{codes.Canceled, ErrConnection},
		{codes.DeadlineExceeded, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.code.String(), func(t *testing.T) {
			got := fromStatus(context.Background(), status.Error(tt.code, "boom"))
			if !errors.Is(got, tt.want) {
				t.Errorf("got %v, want it to wrap %v", got, tt.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := fromStatus(ctx, status.Error(codes.Canceled, "boom")); !errors.Is(got, context.Canceled) {
		t.Errorf("Canceled by the caller: got %v", got)
	}
	if got := fromStatus(context.Background(), status.Error(codes.Internal, "boom")); errors.Is(got, ErrConnection) || got == nil {
		t.Errorf("Internal: got %v", got)
	}
}
