package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/plugins/models/openai"
	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
	"github.com/hayloft/hayloft/sdk"
)

// Against the simulated vLLM engine, through the real OpenAI client: the
// run learns the cache from /metrics, every response's cached tokens are
// journaled and add up to what the engine counted, the answers do not
// depend on the order, and the tree order computes each document once.
func TestPrefixCacheMeasuredOnTheEngine(t *testing.T) {
	task := docs{n: 24, pad: 4000}
	computed := map[string]int64{}
	for _, order := range config.Orders {
		srv := openaitest.NewServer(openaitest.Options{Engine: &openaitest.EngineConfig{NumBlocks: 4096}, Answer: answerDocs})
		f, res := runOpenAIDocs(t, task, srv, 4, order)
		srv.Close()
		queries, hits, comp, _ := srv.Engine()
		use, err := f.store.PrefixUse(context.Background(), res.RunID, "e/model.openai.m/none")
		if err != nil {
			t.Fatal(err)
		}
		if use.Responses != task.n || use.Reported != task.n || int64(use.PromptTokens) != queries || int64(use.CachedTokens) != hits {
			t.Errorf("order %s: journal %+v, engine queried %d hit %d", order, use, queries, hits)
		}
		computed[order] = comp
		t.Logf("order %s: engine computed %d of %d prompt tokens", order, comp, queries)
	}
	doc := int64(len(openaitest.Tokens(docs{n: 1, pad: 4000}.doc(0))))
	// Two documents once each, plus each question's tail and partial blocks.
	if most := 2*doc + int64(task.n)*(2*16+20); computed[config.OrderPrefix] > most {
		t.Errorf("order prefix computed %d prompt tokens, want at most %d (task order: %d)", computed[config.OrderPrefix], most, computed[config.OrderTask])
	}
}

// Against llama-server's slots, through the real OpenAI client: the run
// learns the slots from /props and pins each document to one slot, so every
// question after a document's first reuses the document.
func TestLlamaSlotsPinned(t *testing.T) {
	task := docs{n: 24, pad: 4000}
	srv := openaitest.NewServer(openaitest.Options{Llama: &openaitest.LlamaConfig{Slots: 2}, Answer: answerDocs})
	defer srv.Close()
	f, res := runOpenAIDocs(t, task, srv, 4, "")
	st := srv.Llama()
	cached, slots := st.Cached, st.Slots
	if st.Pinned != int64(task.n) {
		t.Errorf("%d of %d requests named their slot", st.Pinned, task.n)
	}
	docSlot := map[int]map[int]bool{}
	for prompt, ss := range slots {
		d := 0
		if strings.Contains(prompt, "Document B") {
			d = 1
		}
		if docSlot[d] == nil {
			docSlot[d] = map[int]bool{}
		}
		for _, s := range ss {
			docSlot[d][s] = true
		}
	}
	for d, ss := range docSlot {
		if len(ss) != 1 {
			t.Errorf("document %d computed on slots %v, want one", d, ss)
		}
	}
	// Each document's first question computes it, the other 11 reuse it.
	least := int64(0)
	for d := range 2 {
		least += int64(task.n/2-1) * int64(openaitest.CountTokens(task.doc(d)))
	}
	if cached < least {
		t.Errorf("the slots reused %d prompt tokens, want at least %d", cached, least)
	}
	use, err := f.store.PrefixUse(context.Background(), res.RunID, "e/model.openai.m/none")
	if err != nil || use.Reported != task.n || int64(use.CachedTokens) != cached {
		t.Errorf("journal %+v, %v; the server reused %d", use, err, cached)
	}
}

// Where responses carry no cached count, the server's /metrics counters,
// read before and after the eval, are journaled with the row under vLLM's
// and SGLang's names alike.
func TestPrefixCountersFallback(t *testing.T) {
	task := docs{n: 12, pad: 2000}
	for _, reports := range []string{"vllm", "sglang"} {
		t.Run(reports, func(t *testing.T) {
			srv := openaitest.NewServer(openaitest.Options{Engine: &openaitest.EngineConfig{Reports: reports, HideCached: true}, Answer: answerDocs})
			defer srv.Close()
			f, res := runOpenAIDocs(t, task, srv, 2, "")
			queries, hits, _, _ := srv.Engine()
			use, err := f.store.PrefixUse(context.Background(), res.RunID, "e/model.openai.m/none")
			if err != nil {
				t.Fatal(err)
			}
			if use.Reported != 0 || use.Metrics == nil {
				t.Fatalf("prefix use %+v: want no response reporting and the counters read", use)
			}
			if m := use.Metrics; m.PromptTokens != queries || m.CachedTokens != hits || hits == 0 || m.SharedRows != 0 {
				t.Errorf("counters %+v; the engine queried %d, hit %d", m, queries, hits)
			}
		})
	}
}

// answerDocs answers question i with "a<i>", so the match scorer shows that
// every sample got its own answer.
func answerDocs(req openaitest.ChatRequest) string {
	c := req.Messages[len(req.Messages)-1].Content
	return "a" + strings.TrimSpace(c[strings.LastIndex(c, "question ")+len("question "):])
}

// runOpenAIDocs runs task through the real OpenAI client against srv with
// max_concurrency conc and order ("": the default), and checks that every
// sample was answered, each with its own answer.
func runOpenAIDocs(t *testing.T, task docs, srv *openaitest.Server, conc int, order string) (*fixture, *Result) {
	t.Helper()
	f := newFixture(t, 0, nil)
	f.set.RegisterTask("docs", func(context.Context, sdk.Options) (sdk.Task, error) { return task, nil })
	f.set.RegisterModel("openai", openai.New)
	orderAttr := ""
	if order != "" {
		orderAttr = fmt.Sprintf("order = %q", order)
	}
	res, err := f.run(t, context.Background(), fmt.Sprintf(`
task "docs" "d" {}
model "openai" "m" {
  base_url        = %q
  model           = "fake-model"
  max_concurrency = %d
}
eval "e" {
  task    = task.docs.d
  models  = [model.openai.m]
  scorers = ["match"]
  %s
}`, srv.BaseURL(), conc, orderAttr))
	if err != nil || res.Evals[0].Samples != task.n {
		t.Fatalf("order %q: %v %+v", order, err, res.Evals[0])
	}
	if m := res.Evals[0].Metrics["match"]; m == nil || m.Value != 1 {
		t.Errorf("order %q: match %+v: a sample got another's answer", order, m)
	}
	return f, res
}
