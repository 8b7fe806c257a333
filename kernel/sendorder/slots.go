package sendorder

// Slot pinning, for servers whose prefix cache is per slot.
//
// llama-server runs -np slots, each with its own context, and reuses a
// prompt's prefix only within the slot that computed it: sent to another
// slot, a document is computed again (and evicts what that slot held).
// Left to itself it picks among idle slots only, so a document's second
// question, arriving while its first is still being answered, lands on
// another slot and misses. With Options.Slots the tree window therefore
// decides the slot of every request (Item.Slot, sent as id_slot):
//
//   - a prompt that shares at least minShare bytes with what a slot holds
//     (the last prompt sent to it) goes to that slot, queueing behind the
//     requests there; at most perSlot requests wait on one slot, so that
//     one group cannot take every request the kernel may have in flight;
//   - a prompt that shares with no slot opens a group, only on an idle
//     slot, the one used longest ago, and only when no prompt can go to the
//     slot holding its prefix: a slot whose group has more to send is not
//     idle long enough to be taken over. So no more groups are open at
//     once than there are slots;
//   - a group's requests never spread to a second slot to use an idle one:
//     prefill, which a slot's long prompt already keeps the GPU busy with,
//     is the cost that matters, and a second slot would compute the whole
//     document again.
//
// The per-request cache budget (CacheTokens) is one slot's context, which a
// slot holds alone, so the occupancy model of the shared cache is not used.

// perSlot is how many requests may be in flight on one slot: one being
// computed and one waiting, so the slot never idles between them.
const perSlot = 2

type slotState struct {
	last     int // id of the entry sent to it last; 0 while it holds nothing
	inFlight int
	used     int // when it was last given a request, for least recently used
}

// slotHolds reports whether entry id is the prompt some slot holds.
func (w *treeWindow[T]) slotHolds(id int) bool {
	for _, s := range w.slots {
		if s.last == id {
			return true
		}
	}
	return false
}

// position is e's index in the sorted list, or -1.
func (w *treeWindow[T]) position(e *entry[T]) int {
	lo, hi := 0, len(w.list)
	for lo < hi { // the first entry not below e.text
		m := (lo + hi) / 2
		if w.list[m].text < e.text {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for i := lo; i < len(w.list) && w.list[i].text == e.text; i++ {
		if w.list[i] == e {
			return i
		}
	}
	return -1
}

// sharesWith is the LCP, in bytes, of every listed prompt with list[p]: the
// least adj between them.
func (w *treeWindow[T]) sharesWith(p int) []int {
	out := make([]int, len(w.list))
	out[p] = len(w.list[p].text)
	run := out[p]
	for i := p + 1; i < len(w.list); i++ {
		run = min(run, w.adj[i-1])
		out[i] = run
	}
	run = out[p]
	for i := p - 1; i >= 0; i-- {
		run = min(run, w.adj[i])
		out[i] = run
	}
	return out
}

// popSlot is Pop with slots: the first prompt of the walk that may go, and
// its slot. Prompts that go to the slot holding their prefix come first,
// so a slot whose group has more to send is never taken over.
func (w *treeWindow[T]) popSlot() (Item[T], Status) {
	held := make([][]int, len(w.slots)) // per slot: every prompt's LCP with what it holds
	for s, st := range w.slots {
		if e, ok := w.byID[st.last]; ok {
			if p := w.position(e); p >= 0 {
				held[s] = w.sharesWith(p)
			}
		}
	}
	walk := w.heavyFirst(0, len(w.list), nil)
	var open []int // prompts that share with no slot
	for _, i := range walk {
		if w.list[i].state != statePending {
			continue
		}
		// The slot holding most of it, the least busy among equals.
		best, share := -1, 0
		for s := range w.slots {
			if held[s] == nil {
				continue
			}
			if h := held[s][i]; best < 0 || h > share || h == share && w.slots[s].inFlight < w.slots[best].inFlight {
				best, share = s, h
			}
		}
		switch {
		case share < minShare:
			open = append(open, i)
		case w.slots[best].inFlight < perSlot:
			return w.sendTo(i, best), Popped
		}
		// Else its slot is busy: it waits.
	}
	if len(open) == 0 {
		return Item[T]{}, Waiting
	}
	// A new group: on an idle slot, the one used longest ago. An idle slot
	// is one no pending prompt needs, or that prompt would have gone above.
	pick := -1
	for s, st := range w.slots {
		if st.inFlight == 0 && (pick < 0 || st.used < w.slots[pick].used) {
			pick = s
		}
	}
	if pick < 0 {
		return Item[T]{}, Waiting
	}
	return w.sendTo(open[0], pick), Popped
}

// sendTo marks list[i] sent on slot s.
func (w *treeWindow[T]) sendTo(i, s int) Item[T] {
	e := w.list[i]
	e.state = statePrefill
	e.it.Slot = s
	e.it.Leads = w.leads(i)
	w.lastPopped = e.it.id
	w.pending--
	w.inFlight++
	w.clock++
	w.slots[s].last = e.it.id
	w.slots[s].inFlight++
	w.slots[s].used = w.clock
	return e.it
}
