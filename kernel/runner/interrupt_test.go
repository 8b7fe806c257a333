package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayloft/hayloft/plugins/models/openai"
	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
	"github.com/hayloft/hayloft/sdk"
)

// blockingRetriever waits for its context on every call once armed.
type blockingRetriever struct {
	started atomic.Int64
}

func (b *blockingRetriever) Retrieve(ctx context.Context, req *sdk.RetrieveRequest) (*sdk.RetrieveResponse, error) {
	n := b.started.Add(1)
	if n > 5 {
		<-ctx.Done()
		return nil, fmt.Errorf("retrieve: %w", ctx.Err())
	}
	return &sdk.RetrieveResponse{Context: req.Sample.Context, Chunks: []sdk.Chunk{{ID: 0}}}, nil
}

// Ctrl-C while samples are at the retriever: an interruption is not a
// failure of those samples (sample.go says so for the model stage), so the
// interrupted run must neither count them as errors nor journal failures
// for them.
func TestCancelDuringRetrievalIsNotAFailure(t *testing.T) {
	f := newFixture(t, 50, map[string]*echoModel{"good": {}})
	rt := &blockingRetriever{}
	f.set.RegisterRetriever("blocking", func(context.Context, sdk.Options) (sdk.Retriever, error) { return rt, nil })
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for rt.started.Load() < 8 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	res, err := f.run(t, ctx, `
task "counting" "t" {}
model "good" "g" { max_concurrency = 4 }
retriever "blocking" "b" {}
eval "e" {
  task       = task.counting.t
  models     = [model.good.g]
  retrievers = [retriever.blocking.b]
  scorers    = ["match"]
}`)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the interruption", err)
	}
	ev := res.Evals[0]
	fails, ferr := f.store.Failures(context.Background(), res.RunID, "e/model.good.g/retriever.blocking.b")
	if ferr != nil {
		t.Fatal(ferr)
	}
	if ev.Errors != 0 || len(fails) != 0 {
		var why []string
		for _, fl := range fails {
			why = append(why, fmt.Sprintf("%s: %s", fl.SampleID, fl.Message))
		}
		t.Errorf("interrupted run counted %d errors and journaled %d failures for samples that were only interrupted: %s",
			ev.Errors, len(fails), strings.Join(why, "; "))
	}
}

// failingScorer fails sample "5" with an error of the component (not of
// the sample), which ends the row.
type failingScorer struct{}

func (failingScorer) Score(_ context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	if req.Sample.ID == "5" {
		return nil, errors.New("scorer bug")
	}
	return &sdk.ScoreResponse{Value: 1}, nil
}

// A row that ends on a scorer's failure: its Samples count must be what it
// journaled (results with scores), not also the samples answered and never
// scored or journaled.
func TestSamplesCountMatchesJournaledResults(t *testing.T) {
	f := newFixture(t, 10, map[string]*echoModel{"good": {}})
	f.set.RegisterScorer("failing", func(context.Context, sdk.Options) (sdk.Scorer, error) { return failingScorer{}, nil })
	res, err := f.run(t, context.Background(), `
task "counting" "t" {}
model "good" "g" { max_concurrency = 1 }
eval "e" {
  task    = task.counting.t
  models  = [model.good.g]
  scorers = ["failing"]
}`)
	if err != nil {
		t.Fatal(err)
	}
	ev := res.Evals[0]
	recs, err := f.store.Samples(context.Background(), res.RunID, "e/model.good.g/none")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if m := ev.Metrics["failing"]; m != nil {
		n = m.N
	}
	if ev.Samples != len(recs) || ev.Samples != n {
		t.Errorf("row says %d samples; %d journaled, metric over %d (error %q)", ev.Samples, len(recs), n, ev.Error)
	}
}

// openAIConfig is a one-eval config against the real openai client.
func openAIConfig(base, attrs string) string {
	return fmt.Sprintf(`
task "counting" "t" {}
model "openai" "m" {
  base_url        = %q
  max_concurrency = 2
  %s
}
eval "e" {
  task    = task.counting.t
  models  = [model.openai.m]
  scorers = ["match"]
}`, base, attrs)
}

// Without a model attribute the openai client asks the server which model
// it serves (Provision), and that id is in the cache key
// (sdk.ServedModeler): the same base_url serving another model later is
// asked again, not answered from the first model's journal.
func TestServedModelIsPartOfTheKey(t *testing.T) {
	a := openaitest.NewServer(openaitest.Options{Model: "model-a", Answer: func(openaitest.ChatRequest) string { return "from A" }})
	addr := strings.TrimPrefix(a.URL, "http://")
	f := newFixture(t, 5, nil)
	f.set.RegisterModel("openai", openai.New)
	if _, err := f.run(t, context.Background(), openAIConfig(a.BaseURL(), "")); err != nil {
		t.Fatal(err)
	}
	a.Close()
	var b *openaitest.Server
	var err error
	for range 50 { // the port is free again once A's listener is closed
		if b, err = openaitest.Start(openaitest.Options{Addr: addr, Model: "model-b", Answer: func(openaitest.ChatRequest) string { return "from B" }}); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	defer b.Close()
	res, err := f.run(t, context.Background(), openAIConfig(b.BaseURL(), ""))
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Requests("/v1/chat/completions"); got == 0 || res.Evals[0].Cached != 0 {
		t.Errorf("server now serves model-b, yet it was asked %d times and %d of 5 answers came from model-a's journal", got, res.Evals[0].Cached)
	}
}

// Resuming after raising the timeout or the retries (the obvious reaction
// to a run whose server timed out) asks nothing already answered: the
// openai model names them as transport options, out of the cache key. An
// option that changes answers (extra_body here) still asks again.
func TestTransportOptionsKeepTheCache(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{})
	defer srv.Close()
	f := newFixture(t, 10, nil)
	f.set.RegisterModel("openai", openai.New)
	const chat = "/v1/chat/completions"
	for _, tc := range []struct {
		attrs string
		asked int // more requests than before
	}{
		{`model = "fake-model"` + "\n" + `timeout = "30s"`, 10},
		{`model = "fake-model"` + "\n" + `timeout = "90s"` + "\n" + `max_retries = 7` + "\n" + `retry_backoff = "2s"` + "\n" + `retry_after_max = "5m"` + "\n" + `stream = "off"` + "\n" + `transport = "net/http"`, 0},
		{`model = "fake-model"` + "\n" + `extra_body = { top_k = 3 }`, 10},
	} {
		before := srv.Requests(chat)
		res, err := f.run(t, context.Background(), openAIConfig(srv.BaseURL(), tc.attrs))
		if err != nil {
			t.Fatal(err)
		}
		if got := srv.Requests(chat) - before; got != tc.asked {
			t.Errorf("%q: asked %d, want %d (cached %d of 10)", tc.attrs, got, tc.asked, res.Evals[0].Cached)
		}
	}
}
