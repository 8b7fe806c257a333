package runner

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/sdk"
)

// docs is a task whose samples ask about two documents, interleaved; pad
// lengthens each document by that many bytes.
type docs struct{ n, pad int }

func (d docs) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		for i := range d.n {
			s := &sdk.Sample{ID: fmt.Sprint(i), Context: d.doc(i), Question: fmt.Sprint("question ", i),
				Targets: []string{"a" + fmt.Sprint(i)}, Depth: -1}
			if !yield(s, nil) {
				return
			}
		}
	}
}

// doc is the document sample i asks about.
func (d docs) doc(i int) string {
	return []string{"Document A, read twice.", "Document B, read once."}[i%2] + strings.Repeat(" filler", d.pad/7)
}

// runDocs runs task's samples through m with max_concurrency conc, order and
// the match scorer, and checks that every sample was answered for itself
// (the order must never change which answer a sample gets).
func runDocs(t *testing.T, task docs, m sdk.Model, conc int, order string) (*fixture, *Result) {
	t.Helper()
	n := task.n
	f := newFixture(t, 0, nil)
	f.set.RegisterTask("docs", func(context.Context, sdk.Options) (sdk.Task, error) { return task, nil })
	f.set.RegisterModel("m", func(context.Context, sdk.Options) (sdk.Model, error) { return m, nil })
	res, err := f.run(t, context.Background(), fmt.Sprintf(`
task "docs" "d" {}
model "m" "m" { max_concurrency = %d }
eval "e" {
  task    = task.docs.d
  models  = [model.m.m]
  scorers = ["match"]
  order   = %q
}`, conc, order))
	if err != nil || res.Evals[0].Samples != n || res.Evals[0].Metrics["match"].Value != 1 {
		t.Fatalf("run: %v %+v", err, res.Evals[0])
	}
	return f, res
}

// orderModel records the order in which prompts reach it.
type orderModel struct {
	mu   sync.Mutex
	seen []string
}

func (m *orderModel) Generate(_ context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	m.mu.Lock()
	m.seen = append(m.seen, req.Messages[len(req.Messages)-1].Content[:len("Document A")])
	m.mu.Unlock()
	return &sdk.GenerateResponse{Text: "a" + req.Sample.ID}, nil
}

// With order = "prefix" (the default) the server sees one document's
// questions together; with "task", the task's order. The journal and the
// metrics follow the task's order either way.
func TestSamplesSharingADocumentAreSentTogether(t *testing.T) {
	for _, tc := range []struct {
		order string
		want  string
	}{
		{config.OrderPrefix, "[Document A Document A Document A Document A Document B Document B Document B Document B]"},
		{config.OrderTask, "[Document A Document B Document A Document B Document A Document B Document A Document B]"},
	} {
		m := &orderModel{}
		f, res := runDocs(t, docs{n: 8}, m, 1, tc.order)
		if got := fmt.Sprint(m.seen); got != tc.want {
			t.Errorf("order %s: the server saw %s\nwant %s", tc.order, got, tc.want)
		}
		recs, err := f.store.Samples(context.Background(), res.RunID, "e/model.m.m/none")
		if err != nil || len(recs) != 8 {
			t.Fatalf("journaled samples: %v, %d", err, len(recs))
		}
		for i, r := range recs {
			if r.Index != i || r.ID != fmt.Sprint(i) {
				t.Errorf("journal row %d: index %d, id %s", i, r.Index, r.ID)
			}
		}
	}
}

// warmModel checks that no request about a document starts before the
// first one about it is answered, and counts requests in flight.
type warmModel struct {
	mu          sync.Mutex
	started     map[string]int
	answered    map[string]bool
	early       []string
	inFlight    int
	maxInFlight int
}

func (m *warmModel) Generate(ctx context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	doc := req.Messages[len(req.Messages)-1].Content[:len("Document A")]
	m.mu.Lock()
	m.started[doc]++
	first := m.started[doc] == 1
	if !first && !m.answered[doc] {
		m.early = append(m.early, req.Sample.ID)
	}
	m.inFlight++
	m.maxInFlight = max(m.maxInFlight, m.inFlight)
	m.mu.Unlock()
	if first {
		time.Sleep(30 * time.Millisecond) // a slow prefill: followers sent now would miss the cache
	}
	m.mu.Lock()
	m.inFlight--
	if first {
		m.answered[doc] = true
	}
	m.mu.Unlock()
	return &sdk.GenerateResponse{Text: "a" + req.Sample.ID}, nil
}

// A document's first question goes alone; the rest follow once it is
// answered, while the other document's first question uses the slack.
func TestGroupsWarmUpBeforeTheirFollowers(t *testing.T) {
	m := &warmModel{started: map[string]int{}, answered: map[string]bool{}}
	runDocs(t, docs{n: 20, pad: 2000}, m, 8, config.OrderPrefix)
	if len(m.early) > 0 {
		t.Errorf("samples %v were sent before their document's first question was answered", m.early)
	}
	if m.maxInFlight < 2 {
		t.Errorf("at most %d requests in flight: the two documents did not overlap", m.maxInFlight)
	}
}

// cacheModel is a server with a prefix cache: a request's prompt is
// computed except for its longest prefix (in blocks) that an answered
// request had, as vLLM's automatic prefix caching does.
type cacheModel struct {
	mu       sync.Mutex
	cached   map[string]bool
	computed int // prompt bytes computed
	// hold, when set, keeps the first hold requests from being answered
	// until all of them have arrived (or a second has passed): requests a
	// run sends at once then meet an empty cache however loaded the
	// machine is, as they would a real server's prefill.
	hold    int
	arrived int
	all     chan struct{}
}

const cacheBlock = 16

func (m *cacheModel) Generate(_ context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	var prompt strings.Builder
	for _, msg := range req.Messages {
		prompt.WriteString(msg.Content)
	}
	p := prompt.String()
	m.mu.Lock()
	hit := 0
	for end := cacheBlock; end <= len(p) && m.cached[p[:end]]; end += cacheBlock {
		hit = end
	}
	m.computed += len(p) - hit
	m.arrived++
	first := m.arrived <= m.hold
	if m.arrived == m.hold {
		close(m.all)
	}
	m.mu.Unlock()
	if first {
		select {
		case <-m.all:
		case <-time.After(time.Second):
		}
	}
	time.Sleep(2 * time.Millisecond) // the prefill: requests sent meanwhile find nothing cached
	m.mu.Lock()
	for end := cacheBlock; end <= len(p); end += cacheBlock {
		m.cached[p[:end]] = true
	}
	m.mu.Unlock()
	return &sdk.GenerateResponse{Text: "a" + req.Sample.ID}, nil
}

// The point of the order: a server with a prefix cache computes each
// document once, not once per question sent before the first was answered.
func TestPrefixOrderSavesPrefill(t *testing.T) {
	task := docs{n: 40, pad: 4000}
	computed := map[string]int{}
	for _, order := range config.Orders {
		m := &cacheModel{cached: map[string]bool{}, all: make(chan struct{})}
		if order == config.OrderTask {
			m.hold = 8
		}
		runDocs(t, task, m, 8, order)
		computed[order] = m.computed
	}
	doc := 4000
	// Two documents computed once each, plus each question's tail and its
	// last partial block.
	if got, most := computed[config.OrderPrefix], 2*doc+task.n*(2*cacheBlock+40); got > most {
		t.Errorf("order prefix computed %d prompt bytes, want at most %d", got, most)
	}
	// In task order the first 8 requests (4 per document) go at once and
	// miss, each computing its whole document (the model holds them until
	// all 8 have arrived: on a loaded machine some would otherwise start
	// only after an answer).
	if got, least := computed[config.OrderTask], 8*doc; got < least {
		t.Errorf("order task computed %d prompt bytes, want at least %d", got, least)
	}
	t.Logf("prompt bytes computed: prefix order %d, task order %d", computed[config.OrderPrefix], computed[config.OrderTask])
}

// orderPrompt writes exactly the text messagesText makes of Render, once.
func TestOrderPromptIsTheRenderedText(t *testing.T) {
	ctx := strings.Repeat("haystack ", 20000)
	for _, smp := range []*sdk.Sample{
		{Context: ctx, Question: "where is the needle?"},
		{Context: ctx, Question: "q", Messages: []sdk.Message{
			{Role: "system", Content: "read {{context}} twice: {{context}}"},
			{Role: "user", Content: "{{question}} and {{context}}"},
		}},
		{Context: "", Question: "", Messages: []sdk.Message{{Role: "user", Content: "no slots"}}},
		{Context: "has {{question}} inside", Question: "Q"},
	} {
		if got, want := orderPrompt(smp), messagesText(smp.Render()); got != want {
			t.Errorf("orderPrompt differs from the rendered text (%d vs %d bytes)", len(got), len(want))
		}
	}
	one := &sdk.Sample{Context: ctx, Question: "q"}
	if allocs := testing.AllocsPerRun(10, func() { orderPrompt(one) }); allocs != 1 {
		t.Errorf("%v allocations per order prompt, want 1", allocs)
	}
}
