package wasm

import (
	"strings"
	"testing"
)

// A module written for version 1 of the ABI, JSON both ways, is still
// scored, and the host frees its buffers as version 1 says.
func TestABIVersion1(t *testing.T) {
	h := open(t, "jsonabi", nil)
	if h.s.version != 1 {
		t.Fatalf("version %d, want 1", h.s.version)
	}
	for i, tc := range []struct {
		prediction string
		targets    []string
		want       float64
	}{
		{"ok", []string{"no", "ok"}, 1},
		{"tulip", []string{"rose"}, 0},
		{"quote \" and \\ and 宝玉", []string{"quote \" and \\ and 宝玉"}, 1},
	} {
		got, err := h.score(tc.prediction, tc.targets...)
		if err != nil {
			t.Fatal(err)
		}
		if got.Value != tc.want || got.Details["length"] != float64(len(tc.prediction)) {
			t.Errorf("%q: %+v, want value %v and length %d", tc.prediction, got, tc.want, len(tc.prediction))
		}
		// Earlier calls' inputs and outputs were freed: while a call
		// runs only its own input is allocated.
		if got.Details["pinned"] != 1.0 {
			t.Errorf("call %d: %v buffers allocated in the guest during the call, want 1 (its input)", i, got.Details["pinned"])
		}
	}
}

// A version 2 module that returns malformed binary output costs only its
// sample: a length or count past its output, a number that is not finite,
// nesting past wire.MaxDepth, an output outside its memory or over
// max_output_bytes. The host neither panics nor allocates what the lengths
// claim, and the next sample is scored.
func TestMalformedWireOutput(t *testing.T) {
	cases := []struct {
		trigger string
		code    string
		msg     string
		discard bool
	}{
		{"truncated", CodeBadOutput, "truncated", false},
		{"wrong type", CodeBadOutput, "tag 4, want 3", false},
		{"nan", CodeBadOutput, "not a finite number", false},
		{"huge count", CodeBadOutput, "exceeds", false},
		{"huge string", CodeBadOutput, "exceeds", false},
		{"deep", CodeBadOutput, "nested more than", false},
		{"no value", CodeBadOutput, "has no value", false},
		{"outside memory", CodeBadOutput, "outside its memory", true},
		{"over the cap", CodeOutputTooLarge, "max_output_bytes", true},
	}
	for _, tc := range cases {
		t.Run(tc.trigger, func(t *testing.T) {
			h := open(t, "badwire", nil)
			if h.s.version != 2 {
				t.Fatalf("version %d, want 2", h.s.version)
			}
			_, err := h.score(tc.trigger)
			if requestCode(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want code %s mentioning %q", err, tc.code, tc.msg)
			}
			requireDiscardedThenRecovers(t, h, tc.discard)
		})
	}
}

// A version 2 instance keeps its input buffer from call to call and
// replaces it with a larger one when an input does not fit.
func TestInputBufferGrows(t *testing.T) {
	h := open(t, "hostile", nil)
	for _, n := range []int{10, 100_000, 10, 300_000, 5} {
		p := strings.Repeat("p", n)
		got, err := h.score(p, p)
		if err != nil || got.Value != 1 {
			t.Fatalf("%d bytes: %+v, %v", n, got, err)
		}
	}
	in := h.s.idle[0]
	if in.bufCap < 300_000 || len(h.s.idle) != 1 {
		t.Errorf("buffer of %d bytes in %d idle instances, want one of at least 300000", in.bufCap, len(h.s.idle))
	}
}
