package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// The prompt tokens a server found cached are journaled with the response
// and read back, and "not reported" stays distinct from zero.
func TestResponseCachedTokens(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	k := mustKeyer(t, testIdentity())
	zero, some := 0, 1234
	for i, cached := range []*int{nil, &zero, &some} {
		req := &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: fmt.Sprint("question ", i)}}}
		r := benchKeyed(int64(i), req)
		resp := &sdk.GenerateResponse{Text: "a", Usage: sdk.Usage{PromptTokens: 2000, CompletionTokens: 1, CachedTokens: cached}}
		if err := s.PutResponse(ctx, k, r, resp, time.Second); err != nil {
			t.Fatal(err)
		}
		got, ok, err := s.LookupResponse(ctx, r.Key)
		if err != nil || !ok {
			t.Fatalf("lookup %d: %v %v", i, ok, err)
		}
		g := got.Response.Usage.CachedTokens
		if (g == nil) != (cached == nil) || g != nil && *g != *cached {
			t.Errorf("response %d: cached %v, want %v", i, g, cached)
		}
	}
}

// A row's prefix-cache counters are journaled with its outcome and read
// back with its prefix use; a row without them has none.
func TestPrefixMetrics(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "a.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	want := &PrefixMetrics{Source: "vLLM http://x/metrics", PromptTokens: 5000, CachedTokens: 4000, SharedRows: 2}
	for _, tc := range []struct {
		name string
		m    *PrefixMetrics
	}{{"e/a/none", want}, {"e/b/none", nil}} {
		if err := s.PutEval(ctx, run, EvalInfo{Name: tc.name}); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishEval(ctx, run, tc.name, Outcome{PrefixMetrics: tc.m}, nil); err != nil {
			t.Fatal(err)
		}
		u, err := s.PrefixUse(ctx, run, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if (u.Metrics == nil) != (tc.m == nil) || u.Metrics != nil && *u.Metrics != *tc.m {
			t.Errorf("%s: metrics %+v, want %+v", tc.name, u.Metrics, tc.m)
		}
	}
	if r, ok := want.HitRate(); !ok || r != 0.8 {
		t.Errorf("hit rate %g %v", r, ok)
	}
}
