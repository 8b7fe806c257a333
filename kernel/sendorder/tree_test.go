package sendorder

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// text is deterministic filler of n bytes, different for each seed.
func text(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 1))
	words := []string{"hay", "straw", "barn", "field", "oat", "rye", "loft", "bale"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

// treeSize is the bytes of the prompts' shared-prefix tree: every prompt's
// length less what it shares with its neighbour in sorted order.
func treeSize(prompts []string) int {
	s := slices.Clone(prompts)
	slices.Sort(s)
	n := 0
	for i, p := range s {
		n += len(p)
		if i > 0 {
			n -= lcp(s[i-1], p)
		}
	}
	return n
}

// serial sends prompts one at a time through a window and returns the
// order, and the bytes a server computes that caches only the previous
// prompt (the least cache that holds the longest request).
func serial(t *testing.T, prompts []string, opts Options) (order []int, computed int) {
	t.Helper()
	w := New[int](Prefix, opts)
	next := 0
	prev := ""
	for {
		for next < len(prompts) && !w.Full() {
			w.Push(next, prompts[next], next)
			next++
		}
		it, st := w.Pop()
		if st == Empty {
			break
		}
		if st != Popped {
			t.Fatalf("nothing in flight, yet the window waits (after %v)", order)
		}
		p := prompts[it.Value]
		computed += len(p) - lcp(prev, p)
		prev = p
		order = append(order, it.Seq)
		w.Done(it)
	}
	if len(order) != len(prompts) {
		t.Fatalf("sent %d of %d prompts", len(order), len(prompts))
	}
	return order, computed
}

// niah is one haystack cut to lengths and a needle put at depths.
func niah(lengths []int, depths []float64) []string {
	hay := text(7, slices.Max(lengths))
	var out []string
	for _, l := range lengths {
		for _, d := range depths {
			at := int(d * float64(l))
			at -= at % 16
			out = append(out, "Instructions. "+hay[:at]+" NEEDLE: the code is 42. "+hay[at:l]+" Question?")
		}
	}
	return out
}

func TestTreeOrder(t *testing.T) {
	doc := func(i int) string { return text(uint64(100+i), 4000) }
	for _, tc := range []struct {
		name    string
		prompts []string
		first   []int // the leader may be any of these
	}{
		{"interleaved documents", []string{doc(0) + "Q0", doc(1) + "Q1", doc(0) + "Q2", doc(1) + "Q3"}, []int{0, 1, 2, 3}},
		{"nested prefixes: the deepest path leads", []string{doc(0) + "short", doc(0) + text(5, 3000) + "deep", doc(0) + text(5, 1500) + "mid"}, []int{1}},
		{"ties", []string{doc(0) + "A", doc(0) + "B", doc(0) + "C"}, []int{0, 1, 2}},
		// One group; the deepest shared paths are the haystack to 8000
		// bytes with the needle at 4000 (depth 0.5 of 8000, 0.25 of 16000)
		// or at 8000 (depth 1 of 8000, 0.5 of 16000).
		{"NIAH: the deepest shared path leads", niah([]int{4000, 8000, 16000}, []float64{0.25, 0.5, 1}), []int{4, 5, 6, 7}},
		// Nothing in flight: it goes, though it cannot fit.
		{"one document larger than the cache", []string{doc(0) + text(9, 400000) + "x", doc(0) + text(9, 400000) + "y", "alone"}, []int{0, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			order, computed := serial(t, tc.prompts, Options{CacheTokens: 1000})
			if !slices.Contains(tc.first, order[0]) {
				t.Errorf("leader %d, want %d (order %v)", order[0], tc.first, order)
			}
			if want := treeSize(tc.prompts); computed != want {
				t.Errorf("one at a time, computed %d bytes, want the tree's %d (order %v)", computed, want, order)
			}
		})
	}
}

func TestThousandsOfTinyGroups(t *testing.T) {
	var prompts []string
	for i := range 5000 {
		prompts = append(prompts, fmt.Sprintf("%s question %d", text(uint64(i/3), 600), i))
	}
	_, computed := serial(t, prompts, Options{})
	// Between the whole tree and the groups' trees apart: each document
	// once, whatever the little the documents share across the look-ahead.
	apart := 0
	for g := 0; g < len(prompts); g += 3 {
		apart += treeSize(prompts[g:min(g+3, len(prompts))])
	}
	if least := treeSize(prompts); computed < least || computed > apart {
		t.Errorf("computed %d bytes, want between %d and %d", computed, least, apart)
	}
}

func TestTreeLookaheadBounds(t *testing.T) {
	w := New[int](Prefix, Options{})
	if w.Full() {
		t.Fatal("an empty window is full")
	}
	w.Push(0, strings.Repeat("x", LookaheadBytes), 0)
	if !w.Full() {
		t.Error("a window holding LookaheadBytes is not full")
	}
	it, _ := w.Pop()
	w.Done(it)
	if w.Full() {
		t.Error("prompts already answered keep the window full")
	}
	for i := range LookaheadSamples {
		w.Push(i, fmt.Sprint("c", i), i)
	}
	if !w.Full() {
		t.Error("a window holding LookaheadSamples is not full")
	}
}

// Many in flight: siblings wait for their leader, and the groups begun
// never hold more than the cache.
func TestTreeWorkingSet(t *testing.T) {
	const docs, questions, docBytes = 16, 8, 30000
	var prompts []string
	for q := range questions {
		for d := range docs {
			prompts = append(prompts, text(uint64(d), docBytes)+fmt.Sprintf(" question %d about %d", q, d))
		}
	}
	cache := 4 * docBytes / BytesPerToken
	w := New[int](Prefix, Options{CacheTokens: cache}).(*treeWindow[int])
	for i, p := range prompts {
		w.Push(i, p, i)
	}
	var inFlight []Item[int]
	leaderDone := map[int]bool{}
	sent := 0
	for sent < len(prompts) {
		for {
			it, st := w.Pop()
			if st != Popped {
				break
			}
			d := it.Seq % docs
			if len(inFlight) > 0 && !leaderDone[d] && slices.ContainsFunc(inFlight, func(x Item[int]) bool { return x.Seq%docs == d }) {
				t.Fatalf("prompt %d sent while its document's leader is in flight", it.Seq)
			}
			inFlight = append(inFlight, it)
			sent++
		}
		begun := map[int]bool{}
		for _, it := range inFlight {
			begun[it.Seq%docs] = true
		}
		if len(begun) > 4 {
			t.Fatalf("%d documents in flight, cache holds 4", len(begun))
		}
		if len(inFlight) == 0 {
			t.Fatal("waiting with nothing in flight")
		}
		// Finish the oldest request.
		it := inFlight[0]
		inFlight = inFlight[1:]
		leaderDone[it.Seq%docs] = true
		w.Done(it)
	}
}

// An assumed cache smaller than one document must not send one request at
// a time: the order follows the tree, but nothing is held back for room.
func TestTreeAssumedCacheHoldsNothingBack(t *testing.T) {
	const docs, docBytes = 8, 200000 // each document over the assumed cache
	for _, tc := range []struct {
		assumed bool
		want    int // requests sent before any answer
	}{
		{assumed: false, want: 1},
		{assumed: true, want: docs},
	} {
		w := New[int](Prefix, Options{CacheTokens: DefaultCacheTokens, Assumed: tc.assumed})
		for d := range docs {
			w.Push(d, text(uint64(d), docBytes), d)
		}
		sent := 0
		for {
			if _, st := w.Pop(); st != Popped {
				break
			}
			sent++
		}
		if sent != tc.want {
			t.Errorf("assumed=%v: %d sent at once, want %d", tc.assumed, sent, tc.want)
		}
	}
}

// A sibling whose shared prefix is computed but whose tail does not fit
// yet keeps its room: a cheaper sibling of another document does not pass
// it, since the server's LRU would evict the oldest free blocks (the
// prefix it waits for) to make room for the one passing.
func TestTreeWaitingSiblingKeepsItsRoom(t *testing.T) {
	docA, docB, docX := text(1, 15000), text(2, 15000), text(3, 15000) // 5000 tokens each
	w := New[string](Prefix, Options{CacheTokens: 20000})
	pop := func() (string, Status) {
		it, st := w.Pop()
		return it.Value, st
	}
	w.Push(0, docA+"|q", "A1")
	w.Push(1, docB+"|q", "B1")
	w.Push(2, docX, "X")
	var first []Item[string]
	for {
		it, st := w.Pop()
		if st != Popped {
			break
		}
		first = append(first, it)
	}
	if len(first) != 3 {
		t.Fatalf("%d sent at first, want all 3", len(first))
	}
	w.Done(first[0])
	w.Done(first[1])
	// A2's tail (10000 tokens) does not fit beside X and the two
	// documents; B2's does.
	w.Push(3, docA+"|"+text(9, 30000), "A2")
	w.Push(4, docB+"|r", "B2")
	if v, st := pop(); st != Waiting {
		t.Fatalf("got %q (%v), want to wait: B2 would pass A2, which waits for room", v, st)
	}
	w.Done(first[2])
	if v, st := pop(); st != Popped || v != "A2" {
		t.Fatalf("got %q (%v), want A2", v, st)
	}
}

// Leads marks a prompt others read ahead share a prefix with, and only
// such: a model streams (costing client CPU) only for those.
func TestTreeLeads(t *testing.T) {
	doc := text(7, 4000)
	w := New[int](Prefix, Options{CacheTokens: 1 << 20})
	w.Push(0, doc+" question one", 0)
	w.Push(1, doc+" question two", 1)
	w.Push(2, text(8, 4000)+" alone", 2)
	leads := map[int]bool{}
	var sent []Item[int]
	for {
		it, st := w.Pop()
		if st == Waiting && len(sent) > 0 {
			w.Done(sent[0])
			sent = sent[1:]
			continue
		}
		if st != Popped {
			break
		}
		leads[it.Seq] = it.Leads
		sent = append(sent, it)
	}
	if len(leads) != 3 {
		t.Fatalf("%d sent, want 3", len(leads))
	}
	// Of the two sharing a document, the first sent leads, the second has
	// no one left to lead; the lone prompt never leads.
	first := 0
	if !leads[0] {
		first = 1
	}
	if !leads[first] || leads[1-first] || leads[2] {
		t.Errorf("leads = %v, want exactly the first sent of 0 and 1", leads)
	}
}

// TestFlatPopPicksAsTheWalk drives two windows through the same pushes,
// prefills and answers, one with popFlat and one always walking the tree,
// and checks that every Pop gives the same sample. The prompts are short
// distinct questions, some sharing a few words (under flatShare) and, in
// the mixed cases, some sharing a document, so windows go in and out of
// flat; small caches make some prompts wait for room.
func TestFlatPopPicksAsTheWalk(t *testing.T) {
	question := func(r *rand.Rand, i int) string {
		switch r.IntN(4) {
		case 0:
			return fmt.Sprintf("Door %d? %s", i, text(uint64(i), r.IntN(300)))
		case 1:
			return fmt.Sprintf("%s %d", text(uint64(r.IntN(3)), r.IntN(flatShare)), i)
		default:
			return fmt.Sprintf("The code for door %d is %d. What is it?", i, r.IntN(1000))
		}
	}
	mixed := func(r *rand.Rand, i int) string {
		if r.IntN(3) == 0 {
			return fmt.Sprintf("%s question %d", text(uint64(r.IntN(4)), 700), i)
		}
		return question(r, i)
	}
	tokensOf := func(p string) int { return (len(p) + 3) / 4 }
	cases := []struct {
		name   string
		prompt func(*rand.Rand, int) string
		opts   Options
	}{
		{"flat assumed", question, Options{Assumed: true}},
		{"flat default cache", question, Options{}},
		{"flat small cache", question, Options{CacheTokens: 600}},
		{"flat small cache counted", question, Options{CacheTokens: 400, TokensOf: tokensOf}},
		{"mixed small cache", mixed, Options{CacheTokens: 2000}},
		{"mixed assumed", mixed, Options{CacheTokens: 2000, Assumed: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(8) {
				r := rand.New(rand.NewPCG(seed, 2))
				flat := newTree[int](tc.opts)
				walk := newTree[int](tc.opts)
				walk.walkAlways = true
				var sent []Item[int]
				next, pops := 0, 0
				for pops < 400 {
					for next < 800 {
						// Full drops the oldest answered prompts: both
						// windows are asked.
						if full := flat.Full(); full != walk.Full() {
							t.Fatalf("seed %d: Full differs", seed)
						} else if full {
							break
						}
						p := tc.prompt(r, next)
						flat.Push(next, p, next)
						walk.Push(next, p, next)
						next++
					}
					a, sa := flat.Pop()
					b, sb := walk.Pop()
					if sa != sb || a.Seq != b.Seq || a.Leads != b.Leads {
						t.Fatalf("seed %d, pop %d: popFlat gave %d (%v, leads %v), the walk %d (%v, leads %v)", seed, pops, a.Seq, sa, a.Leads, b.Seq, sb, b.Leads)
					}
					if sa == Popped {
						sent = append(sent, a)
						pops++
					}
					// Answer some of those in flight, in any order; prefill
					// others.
					for len(sent) > 0 && (sa != Popped || len(sent) > 1+r.IntN(64) || r.IntN(4) == 0) {
						k := r.IntN(len(sent))
						it := sent[k]
						if r.IntN(3) == 0 {
							flat.Prefilled(it)
							walk.Prefilled(it)
							if sa == Popped {
								break
							}
						}
						flat.Done(it)
						walk.Done(it)
						sent = slices.Delete(sent, k, k+1)
						if sa != Popped {
							break
						}
					}
					if sa == Empty {
						break
					}
				}
			}
		})
	}
}
