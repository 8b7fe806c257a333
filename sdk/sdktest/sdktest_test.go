package sdktest_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

// counter is a task of n samples. stopped receives how many samples it
// yielded when its loop ends, so tests can see the remote side stop.
type counter struct {
	n       int
	stopped chan int
}

func (c *counter) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		sent := 0
		defer func() {
			if c.stopped != nil {
				c.stopped <- sent
			}
		}()
		for i := range c.n {
			if req.Limit > 0 && i >= req.Limit {
				return
			}
			if ctx.Err() != nil {
				yield(nil, ctx.Err())
				return
			}
			s := &sdk.Sample{
				ID:       fmt.Sprintf("s%04d", i),
				Context:  strings.Repeat("hay ", 8),
				Question: "where is the needle?",
				Targets:  []string{fmt.Sprint(i)},
				Depth:    float64(i) / float64(c.n),
				Length:   sdk.Length{Tokens: 8, Tokenizer: "words"},
				Metadata: map[string]any{"i": float64(i)},
			}
			if !yield(s, nil) {
				return
			}
			sent++
		}
	}
}

// echo is a model answering with the last message, failing on demand.
type echo struct{ fail string }

func (e *echo) Generate(ctx context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	switch e.fail {
	case "retryable":
		return nil, sdk.Retryable(errors.New("HTTP 503"), 2*time.Second)
	case "request":
		return nil, &sdk.RequestError{Code: sdk.CodeContextLength, Msg: "too long"}
	case "panic":
		if req.Messages[0].Content == "panic" {
			panic("model bug")
		}
	case "slow":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	last := req.Messages[len(req.Messages)-1].Content
	return &sdk.GenerateResponse{Text: last, FinishReason: "stop", Usage: sdk.Usage{PromptTokens: len(strings.Fields(last)), CompletionTokens: 1}}, nil
}

type tokenizingEcho struct{ echo }

func (tokenizingEcho) Tokenize(_ context.Context, req *sdk.TokenizeRequest) (*sdk.TokenizeResponse, error) {
	out := &sdk.TokenizeResponse{Tokenizer: "model:words"}
	for _, s := range req.Texts {
		var ids []int
		for _, w := range strings.Fields(s) {
			ids = append(ids, len(w))
		}
		out.Tokens = append(out.Tokens, ids)
	}
	return out, nil
}

// exact scores 1 when the prediction is a target; an empty prediction is
// invalid.
type exact struct{}

func (exact) Score(_ context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	if req.Prediction == "" {
		return &sdk.ScoreResponse{Invalid: true, Details: map[string]any{"why": "empty"}}, nil
	}
	for _, t := range req.Sample.Targets {
		if t == req.Prediction {
			return &sdk.ScoreResponse{Value: 1, Stats: []float64{1, 1}}, nil
		}
	}
	return &sdk.ScoreResponse{Stats: []float64{0, 1}}, nil
}

type aggregatingExact struct{ exact }

func (aggregatingExact) Aggregate(_ context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	var out sdk.AggregateResponse
	for _, s := range req.Scores {
		if s.Invalid {
			out.Invalid++
			continue
		}
		out.N++
		out.Value += s.Value
	}
	if out.N > 0 {
		out.Value /= float64(out.N)
	}
	return &out, nil
}

// head keeps the first k bytes of the context.
type head struct{ k int }

func (h head) Retrieve(_ context.Context, req *sdk.RetrieveRequest) (*sdk.RetrieveResponse, error) {
	c := req.Sample.Context
	if len(c) > h.k {
		c = c[:h.k]
	}
	return &sdk.RetrieveResponse{Context: c, Chunks: []sdk.Chunk{{ID: 0, Offset: 0, Score: 1}}, Details: map[string]any{"kept": float64(len(c))}}, nil
}

// Validate refuses absurd sizes; it exists to test sdk.Validator remotely.
func (h head) Validate(context.Context) error {
	if h.k > 1<<30 {
		return sdk.Configf("k", "%d bytes is more than any context", h.k)
	}
	return nil
}

func testSet(stopped chan int) *sdk.Set {
	set := sdk.NewSet("testplugins", "0.1.0")
	set.RegisterTask("counter", func(_ context.Context, o sdk.Options) (sdk.Task, error) {
		var opts struct {
			N int `json:"n"`
		}
		if err := o.Decode(&opts); err != nil {
			return nil, err
		}
		if opts.N < 0 {
			return nil, sdk.Configf("n", "must not be negative, got %d", opts.N)
		}
		return &counter{n: opts.N, stopped: stopped}, nil
	})
	set.RegisterModel("echo", func(_ context.Context, o sdk.Options) (sdk.Model, error) {
		var opts struct {
			Fail string `json:"fail"`
		}
		if err := o.Decode(&opts); err != nil {
			return nil, err
		}
		return &tokenizingEcho{echo{fail: opts.Fail}}, nil
	})
	set.RegisterModel("plain", func(context.Context, sdk.Options) (sdk.Model, error) { return &echo{}, nil })
	set.RegisterScorer("exact", func(context.Context, sdk.Options) (sdk.Scorer, error) { return aggregatingExact{}, nil })
	set.RegisterScorer("noagg", func(context.Context, sdk.Options) (sdk.Scorer, error) { return exact{}, nil })
	set.RegisterRetriever("head", func(_ context.Context, o sdk.Options) (sdk.Retriever, error) {
		opts := struct {
			K int `json:"k"`
		}{K: 16}
		if err := o.Decode(&opts); err != nil {
			return nil, err
		}
		return head{k: opts.K}, nil
	})
	return set
}

func TestTaskOverGRPC(t *testing.T) {
	local := &counter{n: 50}
	remote := sdktest.Task(t, testSet(nil), "counter", map[string]any{"n": 50})
	var want, got []*sdk.Sample
	for s, err := range local.Samples(context.Background(), &sdk.SamplesRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, s)
	}
	for s, err := range remote.Samples(context.Background(), &sdk.SamplesRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("remote samples differ from local ones:\n got %v\nwant %v", got, want)
	}
	if info := remote.Info(); info.Plugin != "testplugins" || info.Version != "0.1.0" || info.Protocol != plugin.Protocol {
		t.Errorf("info = %+v", info)
	}
	sdktest.CheckTask(t, remote)
}

// Stopping the range loop on the host must stop the task in the plugin,
// not leave it producing into a dead stream.
func TestEarlyStopReachesPlugin(t *testing.T) {
	stopped := make(chan int, 1)
	const n = 100000
	task := sdktest.Task(t, testSet(stopped), "counter", map[string]any{"n": n})
	got := 0
	for _, err := range task.Samples(context.Background(), &sdk.SamplesRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if got++; got == 3 {
			break
		}
	}
	select {
	case sent := <-stopped:
		if sent >= n {
			t.Errorf("plugin task sent all %d samples after the host stopped at 3", sent)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("plugin task still running 10s after the host stopped reading")
	}
}

func TestCancelTask(t *testing.T) {
	task := sdktest.Task(t, testSet(nil), "counter", map[string]any{"n": 1000000})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	var last error
	for _, err := range task.Samples(ctx, &sdk.SamplesRequest{}) {
		if err != nil {
			last = err
			break
		}
		if n++; n == 10 {
			cancel()
		}
	}
	if !errors.Is(last, context.Canceled) {
		t.Errorf("after cancel: got %v after %d samples, want context.Canceled", last, n)
	}
}

func TestModelOverGRPC(t *testing.T) {
	m := sdktest.Model(t, testSet(nil), "echo", nil)
	resp, err := m.Generate(context.Background(), &sdk.GenerateRequest{
		Messages: []sdk.Message{{Role: "system", Content: "x"}, {Role: "user", Content: "the answer is 42"}},
		Params:   sdk.GenerationParams{MaxTokens: 8},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &sdk.GenerateResponse{Text: "the answer is 42", FinishReason: "stop", Usage: sdk.Usage{PromptTokens: 4, CompletionTokens: 1}}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("got %+v, want %+v", resp, want)
	}
	tok, err := m.Tokenize(context.Background(), &sdk.TokenizeRequest{Texts: []string{"ab c", ""}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tok.Tokens, [][]int{{2, 1}, {}}) || tok.Tokenizer != "model:words" {
		t.Errorf("tokenize = %+v", tok)
	}
	if !m.Info().Has(plugin.CapTokenizer) {
		t.Errorf("capabilities %v lack tokenizer", m.Info().Capabilities)
	}
}

func TestOptionalInterfacesUnsupported(t *testing.T) {
	set := testSet(nil)
	m := sdktest.Model(t, set, "plain", nil)
	if _, err := m.Tokenize(context.Background(), &sdk.TokenizeRequest{Texts: []string{"x"}}); !errors.Is(err, sdk.ErrUnsupported) {
		t.Errorf("Tokenize on a model without a tokenizer: got %v, want sdk.ErrUnsupported", err)
	}
	if m.Info().Has(plugin.CapTokenizer) {
		t.Error("plain model claims a tokenizer")
	}
	s := sdktest.Scorer(t, set, "noagg", nil)
	if _, err := s.Aggregate(context.Background(), &sdk.AggregateRequest{}); !errors.Is(err, sdk.ErrUnsupported) {
		t.Errorf("Aggregate on a scorer without an aggregator: got %v, want sdk.ErrUnsupported", err)
	}
}

func TestModelErrorsKeepKind(t *testing.T) {
	set := testSet(nil)
	msgs := []sdk.Message{{Role: "user", Content: "hi"}}

	_, err := sdktest.Model(t, set, "echo", map[string]any{"fail": "retryable"}).
		Generate(context.Background(), &sdk.GenerateRequest{Messages: msgs})
	var re *sdk.RetryableError
	if !errors.As(err, &re) || re.After != 2*time.Second {
		t.Errorf("retryable: got %#v", err)
	}

	_, err = sdktest.Model(t, set, "echo", map[string]any{"fail": "request"}).
		Generate(context.Background(), &sdk.GenerateRequest{Messages: msgs})
	var qe *sdk.RequestError
	if !errors.As(err, &qe) || qe.Code != sdk.CodeContextLength || qe.Msg != "too long" {
		t.Errorf("request: got %#v", err)
	}

	slow := sdktest.Model(t, set, "echo", map[string]any{"fail": "slow"})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := slow.Generate(ctx, &sdk.GenerateRequest{Messages: msgs}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: got %v", err)
	}
}

func TestPanicBecomesError(t *testing.T) {
	m := sdktest.Model(t, testSet(nil), "echo", map[string]any{"fail": "panic"})
	_, err := m.Generate(context.Background(), &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: "panic"}}})
	if err == nil || !strings.Contains(err.Error(), "panic in plugin component") || !strings.Contains(err.Error(), "model bug") {
		t.Fatalf("got %v, want the recovered panic", err)
	}
	// The server survived the panic.
	if _, err := m.Generate(context.Background(), &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: "fine"}}}); err != nil {
		t.Errorf("after the panic: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name, comp string
		kind       sdk.Kind
		opts       any
		field      string
	}{
		{"unknown option", "counter", sdk.KindTask, map[string]any{"n": 1, "bogus": true}, "bogus"},
		{"wrong type", "counter", sdk.KindTask, `{"n": "ten"}`, "n"},
		{"factory check", "counter", sdk.KindTask, map[string]any{"n": -1}, "n"},
		{"retriever option", "head", sdk.KindRetriever, map[string]any{"kk": 3}, "kk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if s, ok := opts.(string); ok {
				opts = []byte(s)
			}
			_, err := sdktest.Configure(t, testSet(nil), tt.kind, tt.comp, opts)
			var ce *sdk.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Errorf("got %#v, want a *sdk.ConfigError for %q", err, tt.field)
			}
		})
	}
	if _, err := sdktest.Configure(t, testSet(nil), sdk.KindModel, "nope", nil); !errors.Is(err, sdk.ErrUnsupported) {
		t.Errorf("unknown component: got %v, want sdk.ErrUnsupported", err)
	}
}

func TestScorerOverGRPC(t *testing.T) {
	s := sdktest.Scorer(t, testSet(nil), "exact", nil)
	smp := &sdk.Sample{ID: "a", Targets: []string{"42"}}
	sdktest.CheckScorer(t, s, []sdktest.ScorerCase{
		{Name: "hit", Req: &sdk.ScoreRequest{Sample: smp, Prediction: "42"}, Want: 1},
		{Name: "miss", Req: &sdk.ScoreRequest{Sample: smp, Prediction: "41"}, Want: 0},
		{Name: "empty", Req: &sdk.ScoreRequest{Sample: smp, Prediction: ""}, Invalid: true},
	})
	agg, err := s.Aggregate(context.Background(), &sdk.AggregateRequest{Scores: []*sdk.ScoreResponse{{Value: 1}, {Value: 0}, {Invalid: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if agg.N != 2 || agg.Invalid != 1 || agg.Value != 0.5 {
		t.Errorf("aggregate = %+v", agg)
	}
}

// A 1M-token context is about 4 MB; it must cross in both directions.
func TestLargeContext(t *testing.T) {
	r := sdktest.Retriever(t, testSet(nil), "head", map[string]any{"k": 8 << 20})
	big := strings.Repeat("needle in a haystack ", (4<<20)/21+1)
	resp, err := r.Retrieve(context.Background(), &sdk.RetrieveRequest{Sample: &sdk.Sample{ID: "big", Context: big}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Context != big {
		t.Errorf("context came back with %d bytes, sent %d", len(resp.Context), len(big))
	}
}

func BenchmarkScoreLoopback(b *testing.B) {
	s := sdktest.Scorer(b, testSet(nil), "exact", nil)
	req := &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "a", Context: strings.Repeat("x", 4096), Targets: []string{"42"}}, Prediction: "42"}
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.Score(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

func TestValidateOverGRPC(t *testing.T) {
	set := testSet(nil)
	if err := sdktest.Retriever(t, set, "head", nil).Validate(context.Background()); err != nil {
		t.Errorf("valid retriever: %v", err)
	}
	r := sdktest.Retriever(t, set, "head", map[string]any{"k": 1 << 31})
	if !r.Info().Has(plugin.CapValidator) {
		t.Errorf("capabilities %v lack validator", r.Info().Capabilities)
	}
	err := r.Validate(context.Background())
	var ce *sdk.ConfigError
	if !errors.As(err, &ce) || ce.Field != "k" {
		t.Errorf("got %#v, want a *sdk.ConfigError for k", err)
	}
	// A component without Validate passes.
	if err := sdktest.Model(t, set, "plain", nil).Validate(context.Background()); err != nil {
		t.Errorf("model without a validator: %v", err)
	}
}
