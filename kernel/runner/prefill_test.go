package runner

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayloft/hayloft/plugins/models/openai"
	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
	"github.com/hayloft/hayloft/sdk"
)

// Against the simulated vLLM engine in real time, through the real OpenAI
// client: with streaming, a document's other questions go when its first
// question's first token is back, before its answer; without, after the
// answer, as before. The answers and the cache hits do not change.
func TestSiblingsReleasedAtFirstToken(t *testing.T) {
	task := docs{n: 8, pad: 1000}
	answers := map[string]map[string]string{}
	cached := map[string]int{}
	for _, stream := range []string{openai.StreamOff, openai.StreamAuto} {
		t.Run(stream, func(t *testing.T) {
			srv := openaitest.NewServer(openaitest.Options{Engine: &openaitest.EngineConfig{RealTime: true}, Answer: answerDocs})
			defer srv.Close()
			spy := &sendSpy{gate: stream != openai.StreamOff, answers: map[string]string{}, sent: map[string]chan struct{}{}}
			f := newFixture(t, 0, nil)
			f.set.RegisterTask("docs", func(context.Context, sdk.Options) (sdk.Task, error) { return task, nil })
			f.set.RegisterModel("openai", func(ctx context.Context, opts sdk.Options) (sdk.Model, error) {
				m, err := openai.New(ctx, opts)
				spy.Model = m
				return spy, err
			})
			res, err := f.run(t, context.Background(), fmt.Sprintf(`
task "docs" "d" {}
model "openai" "m" {
  base_url        = %q
  model           = "fake-model"
  max_concurrency = 4
  stream          = %q
}
eval "e" {
  task    = task.docs.d
  models  = [model.openai.m]
  scorers = ["match"]
}`, srv.BaseURL(), stream))
			if err != nil || res.Evals[0].Samples != task.n || res.Evals[0].Metrics["match"].Value != 1 {
				t.Fatalf("run: %v %+v", err, res.Evals[0])
			}
			use, err := f.store.PrefixUse(context.Background(), res.RunID, "e/model.openai.m/none")
			if err != nil {
				t.Fatal(err)
			}
			answers[stream], cached[stream] = spy.answers, use.CachedTokens
			// Each document's first question leads; where does its first
			// sibling go relative to the leader's prefill and answer?
			for _, doc := range []string{"Document A", "Document B"} {
				var seq []string
				for _, e := range spy.events {
					if e.doc != doc {
						continue
					}
					switch {
					case e.what == "sent" && len(seq) == 0:
						seq = append(seq, "leader sent")
					case e.what == "sent" && len(seq) > 0 && !strings.HasPrefix(seq[len(seq)-1], "sibling"):
						seq = append(seq, "sibling sent")
					case e.leader && e.what != "sent":
						seq = append(seq, "leader "+e.what)
					}
				}
				want := []string{"leader sent", "leader answered", "sibling sent"}
				if stream != openai.StreamOff {
					want = []string{"leader sent", "leader prefilled", "sibling sent", "leader answered"}
				}
				if len(seq) < len(want) || !slicesEqual(seq[:len(want)], want) {
					t.Errorf("%s: events %v, want them to begin %v", doc, seq, want)
				}
			}
		})
	}
	if !maps.Equal(answers[openai.StreamOff], answers[openai.StreamAuto]) {
		t.Errorf("answers differ: without streaming %v, with %v", answers[openai.StreamOff], answers[openai.StreamAuto])
	}
	if cached[openai.StreamAuto] < cached[openai.StreamOff] || cached[openai.StreamOff] == 0 {
		t.Errorf("cached tokens %v: streaming must not lose hits", cached)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// sendSpy wraps a model and records, per document, each request sent, the
// first request's prefill and its answer. With gate, the first request of
// a document does not return its answer before another of the document has
// been sent: siblings released only at the answer would then wait forever,
// so the wait gives up after a while and the order shows the failure.
type sendSpy struct {
	sdk.Model
	gate bool

	mu      sync.Mutex
	events  []spyEvent
	answers map[string]string        // by question
	sent    map[string]chan struct{} // by document: closed when a sibling is sent
}

type spyEvent struct {
	doc, what string
	leader    bool
}

func (s *sendSpy) add(e spyEvent) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

func (s *sendSpy) Generate(ctx context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	text := req.Messages[len(req.Messages)-1].Content
	doc := text[:len("Document A")]
	s.mu.Lock()
	ch, seen := s.sent[doc]
	if !seen {
		ch = make(chan struct{})
		s.sent[doc] = ch
	} else {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
	s.events = append(s.events, spyEvent{doc: doc, what: "sent"})
	s.mu.Unlock()
	leader := !seen
	if leader {
		kernel := ctx
		ctx = sdk.WithPrefillHook(ctx, func() {
			s.add(spyEvent{doc: doc, what: "prefilled", leader: true})
			sdk.Prefilled(kernel)
		})
	}
	resp, err := s.Model.Generate(ctx, req)
	if leader && s.gate {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
		}
	}
	if leader {
		s.add(spyEvent{doc: doc, what: "answered", leader: true})
	}
	if err == nil {
		s.mu.Lock()
		s.answers[text[strings.LastIndex(text, "question"):]] = resp.Text
		s.mu.Unlock()
	}
	return resp, err
}
