package sendorder

import (
	"fmt"
	"testing"
)

// slotServer is llama-server's slots as the window sees them: each slot
// holds the last prompt it computed and computes its requests one at a
// time, in the order they came.
type slotServer struct {
	held     []string
	queue    [][]Item[int]
	computed int
}

// step finishes the head request of every busy slot and returns them.
func (s *slotServer) step(prompts []string) []Item[int] {
	var done []Item[int]
	for k := range s.queue {
		if len(s.queue[k]) == 0 {
			continue
		}
		it := s.queue[k][0]
		s.queue[k] = s.queue[k][1:]
		p := prompts[it.Value]
		s.computed += len(p) - lcp(s.held[k], p)
		s.held[k] = p
		done = append(done, it)
	}
	return done
}

// The window pins each document's questions to one slot and opens no more
// documents than there are slots, so with a document's questions in the
// look-ahead each document is computed once; the rules hold at every step.
func TestSlots(t *testing.T) {
	for _, tc := range []struct {
		docs, questions, slots, inFlight int
	}{
		{16, 8, 4, 8},
		{16, 8, 4, 64},
		{3, 5, 8, 16}, // fewer documents than slots
		{40, 2, 2, 2},
	} {
		t.Run(fmt.Sprintf("%dx%d/%d slots/%d in flight", tc.docs, tc.questions, tc.slots, tc.inFlight), func(t *testing.T) {
			var prompts []string
			for q := range tc.questions {
				for d := range tc.docs {
					prompts = append(prompts, "Read the document. "+text(uint64(d), 6000)+fmt.Sprintf(" question %d about %d", q, d))
				}
			}
			w := New[int](Prefix, Options{CacheTokens: 4000, Slots: tc.slots})
			srv := &slotServer{held: make([]string, tc.slots), queue: make([][]Item[int], tc.slots)}
			slotOf := map[int]int{} // document -> slot
			next, sent, busy := 0, 0, 0
			for sent < len(prompts) || busy > 0 {
				for next < len(prompts) && !w.Full() {
					w.Push(next, prompts[next], next)
					next++
				}
				for busy < tc.inFlight {
					it, st := w.Pop()
					if st != Popped {
						break
					}
					if it.Slot < 0 || it.Slot >= tc.slots {
						t.Fatalf("prompt %d: slot %d of %d", it.Seq, it.Slot, tc.slots)
					}
					d := it.Seq % tc.docs
					if s, ok := slotOf[d]; ok && s != it.Slot && len(srv.queue[s]) > 0 {
						t.Fatalf("document %d sent to slot %d while its slot %d is busy with it", d, it.Slot, s)
					}
					slotOf[d] = it.Slot
					srv.queue[it.Slot] = append(srv.queue[it.Slot], it)
					if n := len(srv.queue[it.Slot]); n > perSlot {
						t.Fatalf("%d requests on slot %d", n, it.Slot)
					}
					busy++
					sent++
				}
				if busy == 0 {
					t.Fatalf("nothing in flight after %d of %d", sent, len(prompts))
				}
				for _, it := range srv.step(prompts) {
					w.Done(it)
					busy--
				}
			}
			if least := treeSize(prompts); srv.computed > least+least/20 {
				t.Errorf("computed %d bytes, the tree is %d: more than 1.05×", srv.computed, least)
			}
		})
	}
}

// Without slots every item says so.
func TestNoSlots(t *testing.T) {
	for _, policy := range []string{Prefix, Task, Groups} {
		w := New[int](policy, Options{})
		w.Push(0, "a prompt", 0)
		if it, st := w.Pop(); st != Popped || it.Slot != -1 {
			t.Errorf("%s: got %+v, %v; want slot -1", policy, it, st)
		}
	}
}
