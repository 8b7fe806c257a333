package none

import (
	"context"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

func TestFullContext(t *testing.T) {
	r, err := New(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Retrieve(context.Background(), &sdk.RetrieveRequest{Sample: &sdk.Sample{Context: "whole document"}})
	if err != nil || resp.Context != "whole document" {
		t.Fatalf("Retrieve = %+v, %v", resp, err)
	}
	if _, err := New(context.Background(), sdk.MustOptions(map[string]any{"top_k": 5})); err == nil {
		t.Fatal("unknown option accepted")
	}
}
