package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/kernel/sendorder"
)

// segment is n words no other segment uses, so prompts built of segments
// branch exactly at segment boundaries.
func segment(k, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("s%dw%d", k, i)
	}
	return strings.Join(w, " ")
}

// With a cache that holds the longest request (and its answer) and one
// request in flight, the tree order computes exactly the tree: every
// shared prefix once. Branches fall on block boundaries (16 words, one
// token each) so that block-granular caching can reach the minimum.
func TestOneInFlightComputesTheTree(t *testing.T) {
	seg := func(k, blocks int) string { return segment(k, 16*blocks) }
	doc, sub := seg(1, 4), seg(2, 2)
	hay := strings.Fields(seg(3, 8))
	var niah []string
	for _, at := range []int{0, 16, 64, 128} {
		for _, l := range []int{64, 128} {
			if at <= l {
				niah = append(niah, strings.Join(hay[:at], " ")+" "+seg(4, 1)+" "+strings.Join(hay[at:l], " ")+" "+seg(100+at+l, 1))
			}
		}
	}
	for _, tc := range []struct {
		name    string
		prompts []string
	}{
		{"questions about documents, interleaved", []string{doc + " " + seg(10, 1), seg(5, 3) + " " + seg(11, 1), doc + " " + seg(12, 1), seg(5, 3) + " " + seg(13, 1)}},
		{"nested prefixes", []string{doc + " " + seg(20, 1), doc + " " + sub + " " + seg(21, 1), doc + " " + sub + " " + seg(22, 2), doc + " " + seg(23, 3)}},
		{"a needle in a haystack", niah},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLoad(tc.name, tc.prompts)
			for _, firstToken := range []bool{false, true} {
				res, err := simulate(l, sendorder.Prefix, 1, l.longest+32, firstToken)
				if err != nil {
					t.Fatal(err)
				}
				if res.computed != int64(l.minimum) {
					t.Errorf("release at first token %v: computed %d prompt tokens, the tree has %d", firstToken, res.computed, l.minimum)
				}
			}
		})
	}
}

func TestTable(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-scale", "0.02"}, &out); err != nil {
		t.Fatal(err)
	}
	tables := strings.Split(strings.TrimSpace(out.String()), "\n\n")
	if len(tables) != 2 {
		t.Fatalf("want the engine's table and the slots' table:\n%s", out.String())
	}
	for i, want := range []struct {
		lines  int
		header string
	}{{1 + 2*3*3, "tree order"}, {1 + 2*3, "tree order, pinned"}} {
		lines := strings.Split(tables[i], "\n")
		if len(lines) != want.lines || !strings.Contains(lines[0], want.header) {
			t.Errorf("table %d of %d lines:\n%s", i, len(lines), tables[i])
		}
	}
	if err := run([]string{"-workload", "nope"}, &out); err == nil {
		t.Error("an unknown workload is accepted")
	}
}

// On llama-server's slots, with every question in the look-ahead, pinning
// computes each document once however many are in flight, where the
// dataset's order with llama-server choosing the slots computes far more.
func TestSlotsPinned(t *testing.T) {
	l := docsLoad(16, 4, 2000)
	for _, inFlight := range []int{1, 8, 64} {
		pinned, err := simulateSlots(l, sendorder.Prefix, true, 4, inFlight)
		if err != nil {
			t.Fatal(err)
		}
		dataset, err := simulateSlots(l, sendorder.Task, false, 4, inFlight)
		if err != nil {
			t.Fatal(err)
		}
		if r := float64(pinned.computed) / float64(l.minimum); r > 1.001 {
			t.Errorf("%d in flight: pinned computed %.3f× the minimum, want 1×", inFlight, r)
		}
		if dataset.computed <= pinned.computed {
			t.Errorf("%d in flight: dataset order computed %d, pinned %d", inFlight, dataset.computed, pinned.computed)
		}
	}
}
