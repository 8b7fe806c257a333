package html

import (
	"context"
	"fmt"
	"hash/maphash"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// The run's tries read into an attemptIndex are each request's, oldest
// first, as the journal gives them one request at a time; two keys of one
// hash keep theirs apart; a journal with more tries than the limit gives
// no index.
func TestAttemptIndex(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hayloft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Tries journaled interleaved: k0 at three times, k1 twice, k2 once.
	for _, tc := range []struct {
		key   string
		tries []sdk.Attempt
	}{
		{"k0", []sdk.Attempt{{Status: 429, Error: "429 Too Many Requests", LatencyMS: 1}}},
		{"k1", []sdk.Attempt{{Error: "timeout", LatencyMS: 30}, {Status: 200, LatencyMS: 2}}},
		{"k0", []sdk.Attempt{{Status: 500, Error: "boom", LatencyMS: 3}}},
		{"k2", []sdk.Attempt{{Status: 200, LatencyMS: 4}}},
		{"k0", []sdk.Attempt{{Status: 200, LatencyMS: 5}}},
	} {
		if err := st.PutAttempts(ctx, tc.key, tc.tries); err != nil {
			t.Fatal(err)
		}
	}
	if x, err := readAttemptIndex(ctx, st, 5, 3); err != nil || x != nil {
		t.Errorf("6 tries over a limit of 5: index %v, %v; want none", x, err)
	}
	x, err := readAttemptIndex(ctx, st, 6, 3)
	if err != nil || x == nil {
		t.Fatalf("index: %v, %v", x, err)
	}
	// Two keys of one hash: k2's entry leads to k1's tries too.
	collided := *x
	collided.last = map[uint64]int32{}
	for h, i := range x.last {
		collided.last[h] = i
	}
	k1, k2 := maphash.String(x.seed, "k1"), maphash.String(x.seed, "k2")
	collided.recs = slices.Clone(x.recs)
	collided.recs[x.last[k2]].prev = x.last[k1]
	collided.last[k1] = x.last[k2]

	show := func(tries []store.AttemptRecord) []string {
		var out []string
		for _, a := range tries {
			out = append(out, fmt.Sprintf("%d %s %v %q", a.Attempt, a.Status, a.Latency, a.Error))
		}
		return out
	}
	var buf []store.AttemptRecord
	for _, idx := range []*attemptIndex{x, &collided} {
		for _, key := range []string{"k0", "k1", "k2", "none"} {
			want, err := st.Attempts(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				want[i].CreatedAt = time.Time{}
			}
			buf = idx.of(key, buf)
			if got, want := show(buf), show(want); !slices.Equal(got, want) {
				t.Errorf("tries at %s:\n got %q\nwant %q", key, got, want)
			}
		}
	}
}
