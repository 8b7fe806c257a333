// Command testplugin is a hayloft plugin for pluginhost's tests. Its
// components crash on demand: with crash_marker set they crash only while
// the marker file does not exist (creating it first), so a restarted process
// carries on; without it they crash every time. Its retriever is the real
// cosine one, for the embedding cache the host serves.
//
// It also serves as a stand-in hayloft binary: a leading "plugin" argument
// (as in `hayloft plugin start ...`) is dropped.
package main

import (
	"context"
	"fmt"
	"iter"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hayloft/hayloft/plugins/retrievers/cosine"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

type crash struct {
	Marker string `json:"crash_marker"`
}

// now crashes the process, unless the marker says it already did once.
func (c crash) now() {
	if c.Marker != "" {
		if _, err := os.Stat(c.Marker); err == nil {
			return
		}
		if err := os.WriteFile(c.Marker, nil, 0o644); err != nil {
			panic(err)
		}
	}
	os.Exit(7)
}

type counter struct {
	N          int `json:"n"`
	CrashAfter int `json:"crash_after"` // crash after yielding this many samples
	DelayMS    int `json:"delay_ms"`
	crash
	// CountCrash crashes CountSamples (an optional call) every time, or,
	// with CountMarker, only until that file exists.
	CountCrash  bool   `json:"count_crash"`
	CountMarker string `json:"count_crash_marker"`
}

func (c *counter) CountSamples(_ context.Context, req *sdk.SamplesRequest) (int, error) {
	if c.CountCrash {
		crash{Marker: c.CountMarker}.now()
	}
	if req.Limit > 0 && req.Limit < c.N {
		return req.Limit, nil
	}
	return c.N, nil
}

func (c *counter) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		for i := range c.N {
			if req.Limit > 0 && i >= req.Limit {
				return
			}
			if c.CrashAfter > 0 && i == c.CrashAfter {
				c.now()
			}
			if c.DelayMS > 0 {
				select {
				case <-ctx.Done():
					yield(nil, ctx.Err())
					return
				case <-time.After(time.Duration(c.DelayMS) * time.Millisecond):
				}
			}
			s := &sdk.Sample{ID: fmt.Sprintf("s%05d", i), Question: "q", Targets: []string{fmt.Sprint(i)}, Depth: -1,
				Metadata: map[string]any{"i": i}}
			if !yield(s, nil) {
				return
			}
		}
	}
}

type echo struct {
	CrashOnCall int64  `json:"crash_on_call"` // crash on this call of the process (1-based)
	Fail        string `json:"fail"`
	crash
	calls atomic.Int64
}

func (e *echo) Generate(ctx context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	if n := e.calls.Add(1); e.CrashOnCall > 0 && n == e.CrashOnCall {
		e.now()
	}
	switch e.Fail {
	case "request":
		return nil, &sdk.RequestError{Code: sdk.CodeContextLength, Msg: "too long"}
	case "panic":
		panic("echo bug")
	}
	var text strings.Builder
	for _, m := range req.Messages {
		text.WriteString(m.Content)
	}
	return &sdk.GenerateResponse{Text: text.String(), FinishReason: "stop",
		Usage: sdk.Usage{PromptTokens: len(req.Messages), CompletionTokens: int(e.calls.Load())}}, nil
}

type exact struct{}

func (exact) Score(_ context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	for _, t := range req.Sample.Targets {
		if t == req.Prediction {
			return &sdk.ScoreResponse{Value: 1}, nil
		}
	}
	return &sdk.ScoreResponse{}, nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "plugin" {
		os.Args = append(os.Args[:1], os.Args[2:]...)
	}
	set := sdk.NewSet("testplugin", "1.2.3")
	set.RegisterTask("count", func(_ context.Context, o sdk.Options) (sdk.Task, error) {
		c := &counter{N: 10}
		if err := o.Decode(c); err != nil {
			return nil, err
		}
		return c, nil
	})
	set.RegisterModel("echo", func(_ context.Context, o sdk.Options) (sdk.Model, error) {
		e := &echo{}
		if err := o.Decode(e); err != nil {
			return nil, err
		}
		if e.Fail != "" && e.Fail != "request" && e.Fail != "panic" {
			return nil, sdk.Configf("fail", "want request or panic, got %q", e.Fail)
		}
		return e, nil
	})
	set.RegisterScorer("exact", func(context.Context, sdk.Options) (sdk.Scorer, error) { return exact{}, nil })
	// The real cosine retriever, whose embedding cache the host serves.
	set.RegisterRetriever(cosine.Name, cosine.New)
	plugin.Main(set)
}
