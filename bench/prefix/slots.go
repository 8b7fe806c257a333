package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/hayloft/hayloft/kernel/sendorder"
	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
)

// llama-server's slots: each slot computes one request at a time and keeps
// the last prompt it computed, which only that slot can reuse. Without
// id_slot, llama-server picks the slot (openaitest.LlamaPick: the most
// similar idle slot, else the one used longest ago) and a request waits
// while every slot is busy; with id_slot it waits for its slot. Time: a
// slot computes llamaPrefillTPS prompt tokens and llamaDecodeTPS answer
// tokens a second, the slots in parallel (as if the GPU were never
// shared), so wall time is only a rough comparison.
const (
	llamaSlots       = 4
	llamaPrefillTPS  = 10000
	llamaDecodeTPS   = 100
	llamaSimilarity  = 0.5
	llamaOutputToken = outputTokens
)

type slotRun struct {
	req  int // prompt index
	item sendorder.Item[int]
}

// simulateSlots sends l's prompts in policy's order, at most inFlight at
// once, to slots slots each holding the longest prompt; pin sends each
// request to the slot the order chose.
func simulateSlots(l load, policy string, pin bool, slots, inFlight int) (result, error) {
	slotCtx := l.longest + llamaOutputToken
	opts := sendorder.Options{CacheTokens: slotCtx, TokensOf: func(s string) int { return len(openaitest.Tokens(s)) }}
	if pin {
		opts.Slots = slots
	}
	w := sendorder.New[int](policy, opts)
	state := make([]openaitest.LlamaSlot, slots)
	running := make([]*slotRun, slots)
	doneAt := make([]float64, slots)
	queues := make([][]slotRun, slots) // pinned requests, per slot
	var global []slotRun               // the others, first come first served
	var res result
	var clock int64
	next, inFlightNow, finished := 0, 0, 0
	start := func(s int, r slotRun) {
		toks := l.tokens[r.req]
		cacheN := min(commonPrefix(state[s].Tokens, toks), len(toks)-1)
		computed := len(toks) - cacheN
		res.computed += int64(computed)
		clock++
		state[s] = openaitest.LlamaSlot{Tokens: toks, Busy: true, Used: clock}
		running[s] = &r
		doneAt[s] = res.wall + float64(computed)/llamaPrefillTPS + float64(llamaOutputToken)/llamaDecodeTPS
	}
	for finished < len(l.prompts) {
		for next < len(l.prompts) && !w.Full() {
			w.Push(next, l.prompts[next], next)
			next++
		}
		for inFlightNow < inFlight {
			it, st := w.Pop()
			if st != sendorder.Popped {
				break
			}
			inFlightNow++
			if pin {
				queues[it.Slot] = append(queues[it.Slot], slotRun{it.Value, it})
			} else {
				global = append(global, slotRun{it.Value, it})
			}
		}
		for s := range state {
			if !state[s].Busy && len(queues[s]) > 0 {
				start(s, queues[s][0])
				queues[s] = queues[s][1:]
			}
		}
		for len(global) > 0 {
			s := openaitest.LlamaPick(state, l.tokens[global[0].req], llamaSimilarity)
			if s < 0 {
				break
			}
			start(s, global[0])
			global = global[1:]
		}
		first := -1
		for s := range state {
			if state[s].Busy && (first < 0 || doneAt[s] < doneAt[first]) {
				first = s
			}
		}
		if first < 0 {
			return res, fmt.Errorf("stuck: %d of %d answered, nothing running", finished, len(l.prompts))
		}
		res.wall = doneAt[first]
		state[first].Busy = false
		w.Done(running[first].item)
		running[first] = nil
		inFlightNow--
		finished++
	}
	return res, nil
}

// slotsTable prints computed prefill ÷ minimum on llama-server's slots:
// the dataset's order and the tree order with llama-server choosing the
// slot, and the tree order pinning each request to its slot (id_slot).
func slotsTable(out io.Writer, loads []load) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "llama-server, %d slots\tin flight\tdataset order\ttree order\ttree order, pinned\twall: dataset\twall: tree\twall: pinned\t\n", llamaSlots)
	for _, l := range loads {
		for _, inFlight := range []int{8, 16, 64} {
			var ratio, wall []string
			for _, c := range []struct {
				policy string
				pin    bool
			}{{sendorder.Task, false}, {sendorder.Prefix, false}, {sendorder.Prefix, true}} {
				res, err := simulateSlots(l, c.policy, c.pin, llamaSlots, inFlight)
				if err != nil {
					return fmt.Errorf("%s, llama-server, %s order (pinned %v), %d in flight: %w", l.name, c.policy, c.pin, inFlight, err)
				}
				ratio = append(ratio, fmt.Sprintf("%.2f×", float64(res.computed)/float64(l.minimum)))
				wall = append(wall, fmt.Sprintf("%.0f s", res.wall))
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", l.name, inFlight, ratio[0], ratio[1], ratio[2], wall[0], wall[1], wall[2])
		}
	}
	return tw.Flush()
}
