package chunk

import (
	"context"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// bruteTopK is the reference: sort everything.
func bruteTopK(scores []float32, k int) []Hit {
	all := make([]Hit, len(scores))
	for i, s := range scores {
		all[i] = Hit{i, s}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Score > all[j].Score })
	return all[:min(k, len(all))]
}

func TestTopKMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := rng.IntN(300)
		scores := make([]float32, n)
		for i := range scores {
			// Few distinct values in some trials, to exercise ties.
			if trial%3 == 0 {
				scores[i] = float32(rng.IntN(5))
			} else {
				scores[i] = rng.Float32()*2 - 1
			}
		}
		k := rng.IntN(12)
		got, want := TopK(scores, k), bruteTopK(scores, k)
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d hits, want %d", trial, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("trial %d (n=%d k=%d): hit %d = %+v, want %+v", trial, n, k, i, got[i], want[i])
			}
		}
	}
}

func TestAssemble(t *testing.T) {
	chunks := []Chunk{{0, 0, "a"}, {1, 1, "b"}, {2, 2, "c"}, {3, 3, "d"}}
	hits := []Hit{{2, 0.9}, {0, 0.5}, {3, 0.1}}
	empty := ""
	for _, tc := range []struct {
		sel  Selection
		want string
		ids  []int
	}{
		{Selection{}, "a\n\nc\n\nd", []int{0, 2, 3}},
		{Selection{Order: OrderScore}, "c\n\na\n\nd", []int{2, 0, 3}},
		{Selection{Separator: &empty}, "acd", []int{0, 2, 3}},
	} {
		ctx, kept := tc.sel.Assemble(chunks, hits)
		if ctx != tc.want || len(kept) != len(tc.ids) {
			t.Fatalf("%+v: Assemble = %q %+v, want %q", tc.sel, ctx, kept, tc.want)
		}
		for i, k := range kept {
			if k.ID != tc.ids[i] || k.Offset != chunks[k.ID].Offset {
				t.Errorf("%+v: kept[%d] = %+v, want chunk %d", tc.sel, i, k, tc.ids[i])
			}
		}
	}
	if kept := hits; kept[0].ID != 2 {
		t.Error("Assemble reordered the caller's hits")
	}
	for _, tc := range []struct {
		sel   Selection
		field string
	}{{Selection{TopK: -1}, "top_k"}, {Selection{Order: "random"}, "order"}} {
		var ce *sdk.ConfigError
		if err := tc.sel.Check(); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("Check(%+v) = %v, want ConfigError on %s", tc.sel, err, tc.field)
		}
	}
}

func TestDocCache(t *testing.T) {
	ctx := context.Background()
	c := NewDocCache[int](2)
	var builds atomic.Int32
	build := func(v int) func() (int, error) {
		return func() (int, error) {
			builds.Add(1)
			time.Sleep(10 * time.Millisecond) // let concurrent callers pile up
			return v, nil
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := c.Get(ctx, "doc one", build(1)); v != 1 || err != nil {
				t.Errorf("Get = %d, %v", v, err)
			}
		}()
	}
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Fatalf("8 concurrent Gets built %d times, want 1", n)
	}
	c.Get(ctx, "doc two", build(2))
	c.Get(ctx, "doc one", build(1)) // doc one is now the most recent
	c.Get(ctx, "doc three", build(3))
	if n := builds.Load(); n != 3 {
		t.Fatalf("%d builds, want 3", n)
	}
	if v, _ := c.Get(ctx, "doc one", build(-1)); v != 1 {
		t.Errorf("recently used doc one was evicted")
	}
	if v, _ := c.Get(ctx, "doc two", build(22)); v != 22 {
		t.Errorf("least recently used doc two was kept")
	}
	if c.Len() != 2 {
		t.Errorf("Len = %d, want 2", c.Len())
	}

	boom := errors.New("boom")
	if _, err := c.Get(ctx, "bad", func() (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if v, err := c.Get(ctx, "bad", build(4)); v != 4 || err != nil {
		t.Errorf("a failed build was cached: %d, %v", v, err)
	}

	// A caller waiting on someone else's slow build gives up with its ctx.
	started, release := make(chan struct{}), make(chan struct{})
	go c.Get(ctx, "slow", func() (int, error) { close(started); <-release; return 5, nil })
	<-started
	short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel()
	if _, err := c.Get(short, "slow", build(6)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting caller: err = %v, want deadline exceeded", err)
	}
	close(release)
}

func TestDocKey(t *testing.T) {
	for _, n := range []int{0, 1, 32 << 10, 32<<10 + 1, 100_000} {
		text := strings.Repeat("x", n)
		if docKey(text) != sha256.Sum256([]byte(text)) {
			t.Errorf("docKey of %d bytes is not its SHA-256", n)
		}
	}
}
