// Command prefix measures how much prompt a prefix-caching server computes
// under each send order: the order in the dataset file (as peer harnesses
// send), hayloft's earlier order (groups by the first 2 KB, a leader alone)
// and the shared-prefix tree order (kernel/sendorder), against the minimum —
// the size of the prompts' shared-prefix tree, in tokens. The server is
// openaitest's simulated vLLM v1 engine (16-token blocks, hash-chained
// prefix cache, LRU eviction, chunked prefill under an 8192-token budget,
// FCFS), run in simulated time, so every figure is deterministic.
//
//	go run ./bench/prefix [-workload docs|niah|all] [-scale 1]
//	go run ./bench/prefix -llama [-workload docs|niah|all] [-scale 1]
//	go run ./bench/prefix -plan [-hayloft BIN]
//
// Workloads: 16 documents × 8 questions, the file interleaved by question
// (~25K tokens per document); NIAH, 7 lengths (4K–64K words) × 11 depths
// over one haystack. For each: 16, 64 and 256 requests in flight, caches of
// 1×, 2× and 4× the largest prompt (half of it cannot hold a request at
// all: vLLM refuses to start with a window larger than its cache). Columns:
// computed prefill ÷ minimum and simulated wall time, per order.
//
// A second table does the same on llama-server's slots (slots.go): 4
// slots, each holding the longest prompt, with the dataset's order and the
// tree order left to llama-server's own choice of slot, and the tree order
// pinning each request to its slot (id_slot).
//
// The client side follows the runner: a request's siblings are released
// when it is answered, or, in the columns "first token", when its first
// token is out (the runner with a streaming model, openai's stream =
// "auto"); the look-ahead is sendorder's (256 samples, 16 MiB of prompt).
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hayloft/hayloft/kernel/sendorder"
	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "prefix:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("prefix", flag.ContinueOnError)
	workload := fs.String("workload", "all", "docs, niah or all")
	scale := fs.Float64("scale", 1, "multiply document and haystack sizes (smaller for a quick look)")
	plan := fs.Bool("plan", false, "instead: time `hayloft plan` on a 35 × 35 NIAH grid to 128K tokens, with its peak memory (plan.go)")
	bin := fs.String("hayloft", "", "with -plan: the hayloft binary to run (default: build it)")
	llama := fs.Bool("llama", false, "only the table of llama-server's slots (slots.go)")
	output := fs.Int("output", outputTokens, "every answer's length in tokens (longer answers favour releasing siblings at the first token)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *plan {
		return benchPlan(out, *bin)
	}
	var loads []load
	if *workload == "docs" || *workload == "all" {
		loads = append(loads, docsLoad(16, 8, int(25000**scale)))
	}
	if *workload == "niah" || *workload == "all" {
		lengths := []int{4000, 8000, 16000, 24000, 32000, 48000, 64000}
		for i := range lengths {
			lengths[i] = int(float64(lengths[i]) * *scale)
		}
		loads = append(loads, niahLoad(lengths, 11))
	}
	if *output < 1 {
		return fmt.Errorf("-output %d: want at least 1", *output)
	}
	for i := range loads {
		loads[i].output = *output
	}
	if len(loads) == 0 {
		return fmt.Errorf("-workload %q: want docs, niah or all", *workload)
	}
	if *llama {
		return slotsTable(out, loads)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tin flight\tcache\tdataset order\tearlier order\ttree order\ttree, first token\twall: dataset\twall: earlier\twall: tree\twall: tree, first token\t")
	for _, l := range loads {
		for _, inFlight := range []int{16, 64, 256} {
			for _, mult := range []int{1, 2, 4} {
				cache := mult * l.longest
				var ratio, wall []string
				for _, c := range []struct {
					policy     string
					firstToken bool
				}{{sendorder.Task, false}, {sendorder.Groups, false}, {sendorder.Prefix, false}, {sendorder.Prefix, true}} {
					res, err := simulate(l, c.policy, inFlight, cache, c.firstToken)
					if err != nil {
						return fmt.Errorf("%s, %s order, %d in flight, cache %d: %w", l.name, c.policy, inFlight, cache, err)
					}
					ratio = append(ratio, fmt.Sprintf("%.2f×", float64(res.computed)/float64(l.minimum)))
					wall = append(wall, fmt.Sprintf("%.0f s", res.wall))
				}
				fmt.Fprintf(tw, "%s\t%d\t%d× (%dK)\t%s\t%s\t\n", l.name, inFlight, mult, cache/1000, strings.Join(ratio, "\t"), strings.Join(wall, "\t"))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	return slotsTable(out, loads)
}

// load is a workload: its prompts in dataset order, their tokens, the
// longest prompt and the minimum prefill (the tree's size), in tokens.
type load struct {
	name    string
	prompts []string
	tokens  [][]int
	longest int
	minimum int
	output  int // every answer's length, in tokens
}

func newLoad(name string, prompts []string) load {
	l := load{name: name, prompts: prompts, output: outputTokens}
	for _, p := range prompts {
		t := openaitest.Tokens(p)
		l.tokens = append(l.tokens, t)
		l.longest = max(l.longest, len(t))
	}
	l.minimum = treeTokens(l.tokens)
	return l
}

// treeTokens is the size of the token sequences' prefix tree: each
// sequence's length less its longest common prefix with its neighbour in
// sorted order.
func treeTokens(seqs [][]int) int {
	s := slices.Clone(seqs)
	slices.SortFunc(s, slices.Compare)
	n := 0
	for i, t := range s {
		n += len(t)
		if i > 0 {
			n -= commonPrefix(s[i-1], t)
		}
	}
	return n
}

func commonPrefix(a, b []int) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// words is deterministic text of n words, different for each seed.
func words(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 0x70726566))
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "w%d", r.IntN(5000))
	}
	return b.String()
}

// docsLoad: docs documents of size words, q questions each, the file
// interleaved by question (every document's first question, then every
// document's second...).
func docsLoad(docs, q, size int) load {
	texts := make([]string, docs)
	for d := range texts {
		texts[d] = words(uint64(d), size)
	}
	var prompts []string
	for i := range q {
		for d := range docs {
			prompts = append(prompts, fmt.Sprintf("Read the document and answer.\n%s\nQuestion %d about document %d: what does it say?", texts[d], i, d))
		}
	}
	return newLoad(fmt.Sprintf("%d docs × %d questions", docs, q), prompts)
}

// niahLoad: one haystack cut to each length, a needle put at each of depths
// evenly spaced depths from 0 to 100%.
func niahLoad(lengths []int, depths int) load {
	hay := strings.Fields(words(99, slices.Max(lengths)))
	var prompts []string
	for _, l := range lengths {
		for d := range depths {
			at := l * d / (depths - 1)
			prompts = append(prompts, fmt.Sprintf("Find the magic number in the text.\n%s the magic number is 7341 %s\nWhat is the magic number?",
				strings.Join(hay[:at], " "), strings.Join(hay[at:l], " ")))
		}
	}
	return newLoad(fmt.Sprintf("NIAH %d lengths × %d depths", len(lengths), depths), prompts)
}

type result struct {
	computed int64
	wall     float64
}

// outputTokens is every answer's length by default.
const outputTokens = 8

// simulate sends l's prompts in policy's order, at most inFlight at once,
// to an engine with a cache of cache tokens, in simulated time. With
// firstToken the window learns of each prompt's prefill when its first
// token is out, else only from its answer.
func simulate(l load, policy string, inFlight, cache int, firstToken bool) (result, error) {
	const block = 16
	e := openaitest.NewEngine(openaitest.EngineConfig{BlockSize: block, NumBlocks: (cache + block - 1) / block})
	tokensOf := func(s string) int { return len(openaitest.Tokens(s)) }
	w := sendorder.New[int](policy, sendorder.Options{CacheTokens: e.CacheTokens(), TokensOf: tokensOf})
	next, running, finished := 0, 0, 0
	var prefilled, answered []sendorder.Item[int]
	for finished < len(l.prompts) {
		for _, it := range prefilled {
			w.Prefilled(it)
		}
		for _, it := range answered {
			w.Done(it)
		}
		prefilled, answered = prefilled[:0], answered[:0]
		for next < len(l.prompts) && !w.Full() {
			w.Push(next, l.prompts[next], next)
			next++
		}
		for running < inFlight {
			it, st := w.Pop()
			if st != sendorder.Popped {
				break
			}
			running++
			r := &openaitest.EngineRequest{ID: fmt.Sprint(it.Seq), Tokens: l.tokens[it.Value], Output: l.output,
				OnFinish: func(*openaitest.EngineRequest) {
					answered = append(answered, it)
					running--
					finished++
				}}
			if firstToken {
				r.OnPrefill = func(*openaitest.EngineRequest) { prefilled = append(prefilled, it) }
			}
			e.Add(r)
		}
		if !e.Step() && len(answered) == 0 && len(prefilled) == 0 {
			return result{}, fmt.Errorf("stuck: %d of %d answered, nothing in flight", finished, len(l.prompts))
		}
	}
	return result{computed: e.Computed, wall: e.Now}, nil
}
