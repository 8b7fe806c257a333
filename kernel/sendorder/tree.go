package sendorder

import (
	"slices"
	"strings"
)

// treeWindow orders by the shared-prefix tree of the prompts read ahead.
//
// The prompts are kept sorted, with the length of the common prefix of each
// adjacent pair (adj): the LCP of any two is the least adj between them, and
// the sorted order is a depth-first walk of the tree.
//
// The walk is heavy first: at each branch the child holding the deepest
// shared path goes first, so a subtree's first request (its leader) covers
// the prefix that most of the others need. A pending prompt is sent when
// what it shares with the others is already computed (within slack bytes);
// it waits while a prompt in flight will compute more of it; otherwise it
// leads its own subtree. With one request in flight this is
// exactly the depth-first walk, which computes every edge of the tree once
// when the cache holds the longest request.
//
// Working set (occupancy): the prompts in flight and the computed prefixes
// that pending prompts will reuse stay within the cache. The walk is over
// the whole window and the first prompt in it that may go and fits goes:
// the siblings of a begun document (next in the walk) go before another
// document, which begins only if it fits with room for those siblings'
// tails. With nothing in flight the next prompt in the walk always goes
// (one document larger than the cache).
//
// The server evicts by age (LRU), not by what the window still needs: a
// sibling waiting for room keeps it (no prompt passes it into the cache),
// and while the look-ahead is full of pending prompts a new document
// begins only with room beside the shared prefixes of answered prompts,
// whose siblings may not be read yet (siblings already read go as before).
//
// Prompts already answered stay as hints of what is cached; they count
// toward the look-ahead bounds and the oldest are dropped first when the
// window is full.
type treeWindow[T any] struct {
	opts    Options
	list    []*entry[T] // sorted by prompt
	adj     []int       // adj[i] = LCP(list[i], list[i+1]) in bytes
	bytes   int
	pending int
	nextID  int
	// lastPopped is the entry sent last: the walk goes on from there.
	lastPopped int
	// saturated: the look-ahead is full of pending prompts, so siblings
	// of those answered may still be unread (see occupancy).
	saturated bool
	byID      map[int]*entry[T]
	memo      map[[2]int]int // (entry id, prefix bytes) -> tokens; nil: the estimate is cheaper than the memo
	// slots: see slots.go; nil unless Options.Slots.
	slots []slotState
	clock int
	// Scratch reused by every Pop: a window of 256 prompts is walked for
	// each sample sent, thousands of times a second.
	order           []int
	kids            []child
	covered, coming []int
	// walkAlways turns popFlat and Full's counts off, for the tests that
	// check they decide as the walk and a scan of the window do.
	walkAlways bool
	// Counts kept as entries change state, so that Full and popFlat need
	// not look at every entry for each sample: prompts in flight, and the
	// answered ones with their bytes.
	inFlight, doneN, doneBytes int
	// answered is the answered entries in the order they were answered,
	// with the stamp each got (entry.done), oldest first; an entry since
	// removed or answered again is skipped when reached.
	answered []stamped[T]
}

// stamped is an entry as it was answered.
type stamped[T any] struct {
	e    *entry[T]
	done int
}

// child is a subtree of the walk: list[lo:hi].
type child struct {
	lo, hi, depth, seq int
	begun              bool
}

type state int

const (
	statePending   state = iota
	statePrefill         // sent, prompt not yet computed
	statePrefilled       // sent, prompt computed, not answered
	stateDone
)

type entry[T any] struct {
	it    Item[T]
	text  string
	state state
	done  int // order in which it was done, for dropping the oldest
}

const (
	// minShare: prompts sharing less than this are not worth ordering
	// for (a common instruction).
	minShare = 512
	// slack: a sibling sharing this much more with another pending
	// prompt than with what is computed still goes (a question's first
	// words), rather than waiting for a chain of leaders.
	slack = 256
	// flatShare: less than a cache block of text (16 tokens, some 64 bytes
	// of English).
	flatShare = 64
	// perRequest is charged to each request in flight beyond its tail:
	// its answer and the partly filled blocks at either end.
	perRequest = 64
)

func newTree[T any](opts Options) *treeWindow[T] {
	if opts.CacheTokens <= 0 {
		opts.CacheTokens = DefaultCacheTokens
	}
	w := &treeWindow[T]{opts: opts, byID: map[int]*entry[T]{}}
	if opts.TokensOf != nil {
		w.memo = map[[2]int]int{}
	}
	if opts.Slots > 0 {
		w.slots = make([]slotState, opts.Slots)
	}
	return w
}

func (w *treeWindow[T]) tokens(e *entry[T], n int) int {
	if n <= 0 {
		return 0
	}
	if w.memo == nil {
		return (n + BytesPerToken - 1) / BytesPerToken
	}
	k := [2]int{e.it.id, n}
	if t, ok := w.memo[k]; ok {
		return t
	}
	if len(w.memo) > 1<<16 {
		clear(w.memo)
	}
	t := w.opts.TokensOf(e.text[:n])
	w.memo[k] = t
	return t
}

// Full counts answered prompts kept as hints with the pending ones, so the
// look-ahead holds no more than the bounds; up to a quarter of them may be
// hints, the oldest dropped first beyond that.
func (w *treeWindow[T]) Full() bool {
	if w.slots != nil || w.walkAlways {
		return w.fullScan()
	}
	for {
		if len(w.list) < LookaheadSamples && w.bytes < LookaheadBytes {
			w.saturated = false
			return false
		}
		oldest := w.oldestAnswered()
		if oldest == nil || w.doneN <= LookaheadSamples/4 && w.doneBytes <= LookaheadBytes/4 {
			w.saturated = w.pending > 0
			return w.pending > 0 || oldest == nil && w.inFlight > 0
		}
		w.remove(w.position(oldest))
	}
}

// oldestAnswered is the answered entry answered first, or nil.
func (w *treeWindow[T]) oldestAnswered() *entry[T] {
	for len(w.answered) > 0 {
		a := w.answered[0]
		if a.e.state == stateDone && a.e.done == a.done && w.byID[a.e.it.id] == a.e {
			return a.e
		}
		w.answered[0] = stamped[T]{}
		w.answered = w.answered[1:]
	}
	w.answered = w.answered[:0:0] // let the drained array go
	return nil
}

// fullScan is Full by a look at every entry: where slots hold answered
// prompts (which stay), and for the test of the counts.
func (w *treeWindow[T]) fullScan() bool {
	for {
		done, doneBytes, oldest, inFlight := 0, 0, -1, 0
		for i, e := range w.list {
			if e.state == statePrefill || e.state == statePrefilled {
				inFlight++
			}
			// The prompt a slot holds is what tells its siblings where
			// to go: it stays (at most one per slot).
			if e.state == stateDone && !w.slotHolds(e.it.id) {
				done++
				doneBytes += len(e.text)
				if oldest < 0 || e.done < w.list[oldest].done {
					oldest = i
				}
			}
		}
		over := len(w.list) >= LookaheadSamples || w.bytes >= LookaheadBytes
		if !over {
			w.saturated = false
			return false
		}
		if oldest < 0 || done <= LookaheadSamples/4 && doneBytes <= LookaheadBytes/4 {
			w.saturated = w.pending > 0
			return w.pending > 0 || oldest < 0 && inFlight > 0
		}
		w.remove(oldest)
	}
}

// resize returns s with length n and zeroed, reusing its array when it can.
func resize(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func lcp(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n && a[i:i+8] == b[i:i+8] {
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func (w *treeWindow[T]) Push(seq int, prompt string, v T) {
	w.nextID++
	e := &entry[T]{it: Item[T]{Seq: seq, Value: v, Slot: -1, id: w.nextID}, text: prompt}
	w.byID[e.it.id] = e
	i, _ := slices.BinarySearchFunc(w.list, prompt, func(x *entry[T], p string) int { return strings.Compare(x.text, p) })
	w.list = slices.Insert(w.list, i, e)
	// adj: the pair (i-1, i+1) becomes (i-1, i) and (i, i+1).
	var left, right []int
	if i > 0 {
		left = []int{lcp(w.list[i-1].text, prompt)}
	}
	if i+1 < len(w.list) {
		right = []int{lcp(prompt, w.list[i+1].text)}
	}
	switch {
	case i > 0 && i+1 < len(w.list):
		w.adj[i-1] = left[0]
		w.adj = slices.Insert(w.adj, i, right[0])
	case i > 0:
		w.adj = append(w.adj, left[0])
	case i+1 < len(w.list):
		w.adj = slices.Insert(w.adj, 0, right[0])
	}
	w.bytes += len(prompt)
	w.pending++
}

func (w *treeWindow[T]) remove(i int) {
	e := w.list[i]
	delete(w.byID, e.it.id)
	w.bytes -= len(e.text)
	switch e.state {
	case statePrefill, statePrefilled:
		w.inFlight--
	case stateDone:
		w.doneN--
		w.doneBytes -= len(e.text)
	}
	switch {
	case i > 0 && i+1 < len(w.list):
		w.adj[i-1] = min(w.adj[i-1], w.adj[i])
		w.adj = slices.Delete(w.adj, i, i+1)
	case i > 0:
		w.adj = w.adj[:i-1]
	case i+1 < len(w.list):
		w.adj = w.adj[1:]
	}
	w.list = slices.Delete(w.list, i, i+1)
}

// heavyFirst appends list[lo:hi] in depth-first order. At each branch a
// child already begun (something of it in flight, or sent last) goes first, so that a walk
// once started finishes its subtree while the subtree is cached; then the
// child with the deepest shared path, whose first prompt covers most of
// what its siblings need; where the children share little, the one read
// first.
func (w *treeWindow[T]) heavyFirst(lo, hi int, out []int) []int {
	if hi-lo == 1 {
		return append(out, lo)
	}
	m := slices.Min(w.adj[lo : hi-1])
	// This call's children go on the shared stack w.kids from base on; the
	// calls below push theirs after them and pop them before returning.
	base := len(w.kids)
	defer func() { w.kids = w.kids[:base] }()
	start := lo
	// Prompts sharing less than a cache block cannot share cached work:
	// below flatShare the walk takes the runs that share more as children
	// directly, whatever small tree they form.
	split := func(i int) bool { return w.adj[i] == m }
	if m < flatShare {
		split = func(i int) bool { return w.adj[i] < flatShare }
	}
	for i := lo; i < hi; i++ {
		if i == hi-1 || split(i) {
			c := child{lo: start, hi: i + 1, depth: -1}
			if i+1-start > 1 {
				c.depth = slices.Max(w.adj[start:i])
			}
			c.seq = w.list[start].it.Seq
			for _, e := range w.list[start : i+1] {
				c.begun = c.begun || e.state == statePrefill || e.state == statePrefilled || e.it.id == w.lastPopped
				c.seq = min(c.seq, e.it.Seq)
			}
			w.kids = append(w.kids, c)
			start = i + 1
		}
	}
	n := len(w.kids) - base
	// Where the children share little (different documents), the one
	// read first goes first, so the look-ahead drains from its front and
	// a document's questions are all in it when it begins.
	better := func(c, f child) bool {
		if c.begun != f.begun {
			return c.begun
		}
		if m < minShare {
			return c.seq < f.seq
		}
		return c.depth > f.depth
	}
	first := 0
	for k := 1; k < n; k++ {
		if better(w.kids[base+k], w.kids[base+first]) {
			first = k
		}
	}
	// Indices, not a slice of w.kids: the calls below may grow it.
	c := w.kids[base+first]
	out = w.heavyFirst(c.lo, c.hi, out)
	for k := range n {
		if k != first {
			c := w.kids[base+k]
			out = w.heavyFirst(c.lo, c.hi, out)
		}
	}
	return out
}

// standings reports, for every prompt, the most it shares with a prompt
// already computed (covered: prefilled or answered) and with one being
// computed (coming), in bytes. LCP(j, i) is the least adj between them, so
// one sweep each way suffices: the best from the left of i is adj[i-1]
// capped by either i-1 itself (if it counts) or the best from the left of
// i-1.
func (w *treeWindow[T]) standings() (covered, coming []int) {
	n := len(w.list)
	w.covered, w.coming = resize(w.covered, n), resize(w.coming, n)
	covered, coming = w.covered, w.coming
	const inf = int(^uint(0) >> 1)
	sweep := func(counts func(state) bool, out []int) {
		best := 0
		for i := 1; i < n; i++ {
			prev := best
			if counts(w.list[i-1].state) {
				prev = inf
			}
			best = min(w.adj[i-1], prev)
			out[i] = best
		}
		best = 0
		for i := n - 2; i >= 0; i-- {
			next := best
			if counts(w.list[i+1].state) {
				next = inf
			}
			best = min(w.adj[i], next)
			out[i] = max(out[i], best)
		}
	}
	sweep(func(s state) bool { return s == statePrefilled || s == stateDone }, covered)
	sweep(func(s state) bool { return s == statePrefill }, coming)
	return covered, coming
}

func (w *treeWindow[T]) Pop() (Item[T], Status) {
	if w.pending == 0 {
		return Item[T]{}, Empty
	}
	if w.slots != nil {
		return w.popSlot()
	}
	if !w.walkAlways && w.flat() {
		return w.popFlat()
	}
	covered, coming := w.standings()
	used, inFlight := w.occupancy(covered, false)
	// A thirty-second of the cache is left for what the estimate misses.
	free := w.opts.CacheTokens - w.opts.CacheTokens/32 - used
	// hints: with the look-ahead full, the cache that answered prompts'
	// shared prefixes hold; a new document leaves it alone.
	hints := 0
	if w.saturated {
		withHints, _ := w.occupancy(covered, true)
		hints = withHints - used
	}
	type cand struct{ i, covered, coming int }
	var cands []cand
	// A prompt that begins something new leaves room for the tails of the
	// siblings of what has begun.
	reserve := 0
	w.order = w.heavyFirst(0, len(w.list), w.order[:0])
	for _, i := range w.order {
		if w.list[i].state != statePending {
			continue
		}
		if max(covered[i], coming[i]) >= minShare {
			reserve += w.tail(i) + perRequest
		}
		if coming[i] > covered[i]+slack {
			continue // a prompt in flight will compute more of it
		}
		cands = append(cands, cand{i, covered[i], coming[i]})
	}
	pick := -1
	// held: what the prompts passed over because they did not fit will
	// need. A prompt whose shared prefix is computed and that waits for
	// room keeps that room: the server's LRU evicts the oldest free
	// blocks first, needed or not, so the prompts passing it would evict
	// the prefix it waits to reuse.
	held := 0
	for _, c := range cands {
		e := w.list[c.i]
		cost := w.tokens(e, len(e.text)) - w.tokens(e, c.covered) + perRequest
		if max(c.covered, c.coming) < minShare {
			cost += reserve + hints
		}
		// With nothing in flight the first in the walk goes, fitting or
		// not: the server must be kept busy, and one at a time the walk
		// computes the tree exactly. A cache size that is only a guess
		// holds nothing back.
		if inFlight == 0 || w.opts.Assumed || cost+held <= free {
			pick = c.i
			break
		}
		if c.covered >= minShare {
			held += cost
		}
	}
	return w.send(pick)
}

// send marks list[pick] sent and returns it; pick < 0: nothing may go.
func (w *treeWindow[T]) send(pick int) (Item[T], Status) {
	if pick < 0 {
		return Item[T]{}, Waiting
	}
	e := w.list[pick]
	e.state = statePrefill
	e.it.Leads = w.leads(pick)
	w.lastPopped = e.it.id
	w.pending--
	w.inFlight++
	return e.it, Popped
}

// flat reports whether no two prompts read ahead share flatShare bytes:
// short distinct questions, as in a throughput run, where there is no tree
// to walk.
func (w *treeWindow[T]) flat() bool {
	for _, a := range w.adj {
		if a >= flatShare {
			return false
		}
	}
	return true
}

// popFlat is Pop for a flat window, picking what the walk would without
// building it (TestFlatPopPicksAsTheWalk). Every prompt is then a child of
// the root: the walk takes the best one first (begun, then read first) and
// the rest in sorted order. Nothing shares minShare bytes with anything, so
// no prompt waits for another, reserves room for siblings, counts hints,
// holds room back or leads: the first pending prompt in that order that
// fits goes, and with nothing in flight or an assumed cache size, the first
// pending prompt in that order. That saves the walk, the standings and the
// occupancy (most of the order's cost per sample in a throughput run).
func (w *treeWindow[T]) popFlat() (Item[T], Status) {
	inFlight := w.inFlight
	// The walk's first prompt, as heavyFirst's better picks it: one begun
	// (sent, or sent last), else the one read first (the lower Seq; the
	// earlier in sorted order on a tie). One begun is never pending, so
	// it goes only when nothing is begun, and only then need it be found.
	first := -1
	if _, lastHere := w.byID[w.lastPopped]; inFlight == 0 && !lastHere {
		for i, e := range w.list {
			if first < 0 || e.it.Seq < w.list[first].it.Seq {
				first = i
			}
		}
	}
	fits := func(int) bool { return true }
	if inFlight > 0 && !w.opts.Assumed {
		covered, _ := w.standings()
		used, _ := w.occupancy(covered, false)
		free := w.opts.CacheTokens - w.opts.CacheTokens/32 - used
		fits = func(i int) bool {
			e := w.list[i]
			return w.tokens(e, len(e.text))-w.tokens(e, covered[i])+perRequest <= free
		}
	}
	goes := func(i int) bool { return w.list[i].state == statePending && fits(i) }
	if first >= 0 && goes(first) {
		return w.send(first)
	}
	for i := range w.list {
		if i != first && goes(i) {
			return w.send(i)
		}
	}
	return w.send(-1)
}

// leads reports whether a pending prompt shares at least minShare bytes
// with list[i]: its neighbours in sorted order, as far as the shared
// prefix stays that long.
func (w *treeWindow[T]) leads(i int) bool {
	for j := i + 1; j < len(w.list) && w.adj[j-1] >= minShare; j++ {
		if w.list[j].state == statePending {
			return true
		}
	}
	for j := i - 1; j >= 0 && w.adj[j] >= minShare; j-- {
		if w.list[j].state == statePending {
			return true
		}
	}
	return false
}

// occupancy estimates the cache the window's prompts hold, in tokens: the
// union of the prompts in flight (whole) and of what the pending ones will
// reuse (what of them is already computed), counted once where they share,
// plus perRequest for each request in flight. Computed prefixes no pending
// prompt needs are free to be evicted and are not counted, unless hints:
// then the prefixes answered prompts share with their neighbours count too
// (siblings of theirs may be still unread).
func (w *treeWindow[T]) occupancy(covered []int, hints bool) (used, inFlight int) {
	prev, prevC, run := -1, 0, 0
	for i, e := range w.list {
		if i > 0 {
			run = min(run, w.adj[i-1])
		}
		c := 0
		switch e.state {
		case statePrefill, statePrefilled:
			c = len(e.text)
			inFlight++
			used += perRequest
		case statePending:
			c = min(covered[i], len(e.text))
		case stateDone:
			// With the look-ahead full, an answered prompt's shared
			// prefix may serve siblings not read yet: it stays counted.
			if hints {
				if c = w.shared(i); c < minShare {
					c = 0
				}
			}
		}
		if c == 0 {
			continue
		}
		overlap := 0
		if prev >= 0 {
			overlap = min(prevC, c, run)
		}
		used += w.tokens(e, c) - w.tokens(e, overlap)
		prev, prevC, run = i, c, len(e.text)
	}
	return used, inFlight
}

// shared is the bytes list[i] shares with its nearest neighbour.
func (w *treeWindow[T]) shared(i int) int {
	best := 0
	if i > 0 {
		best = w.adj[i-1]
	}
	if i+1 < len(w.list) {
		best = max(best, w.adj[i])
	}
	return min(best, len(w.list[i].text))
}

// tail is the tokens of list[i] that it shares with no other prompt here.
func (w *treeWindow[T]) tail(i int) int {
	e := w.list[i]
	return w.tokens(e, len(e.text)) - w.tokens(e, w.shared(i))
}

func (w *treeWindow[T]) Prefilled(it Item[T]) {
	if e, ok := w.byID[it.id]; ok && e.state == statePrefill {
		e.state = statePrefilled
	}
}

func (w *treeWindow[T]) Done(it Item[T]) {
	e, ok := w.byID[it.id]
	if !ok {
		return
	}
	if e.state != stateDone && e.it.Slot >= 0 {
		w.slots[e.it.Slot].inFlight--
	}
	switch e.state {
	case statePrefill, statePrefilled:
		w.inFlight--
	}
	if e.state != stateDone {
		w.doneN++
		w.doneBytes += len(e.text)
	}
	w.nextID++
	e.state, e.done = stateDone, w.nextID
	if w.slots == nil && !w.walkAlways { // fullScan finds the oldest itself
		w.answered = append(w.answered, stamped[T]{e, e.done})
	}
}
