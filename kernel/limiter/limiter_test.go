package limiter

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func mustAcquire(t *testing.T, l *Limiter) func(Outcome) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rel, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return rel
}

func TestNewClamps(t *testing.T) {
	tests := []struct {
		opts      Options
		wantLimit int
	}{
		{Options{}, 1},
		{Options{Initial: 10, Min: 2, Max: 5}, 5},
		{Options{Initial: 1, Min: 3, Max: 8}, 3},
		{Options{Min: 4, Max: 2}, 4},
		{Options{Initial: 7, Max: 64}, 7},
	}
	for _, tt := range tests {
		if got := New(tt.opts).Limit(); got != tt.wantLimit {
			t.Errorf("New(%+v).Limit() = %d, want %d", tt.opts, got, tt.wantLimit)
		}
	}
}

func TestHalvesOnOverload(t *testing.T) {
	l := New(Options{Initial: 40, Min: 3, Max: 100})
	old := mustAcquire(t, l) // sent before the first decrease
	mustAcquire(t, l)(Outcome{Latency: time.Millisecond, Overloaded: true})
	if got := l.Limit(); got != 20 {
		t.Fatalf("after overload: limit %d, want 20", got)
	}
	old(Outcome{Overloaded: true})
	if got := l.Limit(); got != 20 {
		t.Errorf("an overload sent before the decrease cut again: limit %d", got)
	}
	for _, want := range []int{10, 5, 3, 3} {
		mustAcquire(t, l)(Outcome{Overloaded: true})
		if got := l.Limit(); got != want {
			t.Errorf("limit %d, want %d", got, want)
		}
	}
	if s := l.Stats(); s.Decreases != 5 || s.Overloaded != 6 || s.InFlight != 0 {
		t.Errorf("stats %+v", s)
	}
}

// saturate holds every slot, then releases them all with lat: one round
// trip at the current limit.
func saturate(t *testing.T, l *Limiter, lat time.Duration) {
	t.Helper()
	n := l.Limit()
	rels := make([]func(Outcome), n)
	for i := range rels {
		rels[i] = mustAcquire(t, l)
	}
	for _, r := range rels {
		r(Outcome{Latency: lat})
	}
}

func TestGrowth(t *testing.T) {
	t.Run("slow start grows multiplicatively", func(t *testing.T) {
		l := New(Options{Initial: 4, Max: 1000})
		prev := l.Limit()
		for range 4 {
			saturate(t, l, 10*time.Millisecond)
			got := l.Limit()
			if float64(got) < 1.3*float64(prev) {
				t.Fatalf("limit %d -> %d in one round trip, want at least x1.3 (additive growth would be +1)", prev, got)
			}
			prev = got
		}
	})
	t.Run("additive after an overload, and grows back", func(t *testing.T) {
		l := New(Options{Initial: 16, Max: 1000})
		mustAcquire(t, l)(Outcome{Overloaded: true})
		if l.Limit() != 8 {
			t.Fatalf("limit %d, want 8", l.Limit())
		}
		rounds := 0
		for prev := l.Limit(); l.Limit() < 12; rounds++ {
			if rounds > 20 {
				t.Fatalf("stuck at %d", l.Limit())
			}
			saturate(t, l, 10*time.Millisecond)
			if got := l.Limit(); got > prev+1 {
				t.Fatalf("limit %d -> %d in one round trip, want at most +1", prev, got)
			}
			prev = l.Limit()
		}
		t.Logf("8 -> 12 in %d round trips", rounds)
	})
	t.Run("capped at Max", func(t *testing.T) {
		l := New(Options{Initial: 2, Max: 5})
		for range 5 {
			saturate(t, l, 10*time.Millisecond)
		}
		if got := l.Limit(); got != 5 {
			t.Errorf("limit %d, want 5", got)
		}
	})
	t.Run("holds when latency degrades", func(t *testing.T) {
		l := New(Options{Initial: 4, Max: 1000})
		saturate(t, l, 10*time.Millisecond) // sets the 10ms baseline
		before := l.Limit()
		for range 3 {
			saturate(t, l, 50*time.Millisecond)
		}
		if got := l.Limit(); got != before {
			t.Errorf("limit %d -> %d at 5x the baseline latency, want no growth", before, got)
		}
	})
	t.Run("no growth when not saturated", func(t *testing.T) {
		l := New(Options{Initial: 4, Max: 1000})
		for range 50 { // one request at a time: a quarter of the limit
			mustAcquire(t, l)(Outcome{Latency: time.Millisecond})
		}
		if got := l.Limit(); got != 4 {
			t.Errorf("limit %d, want 4", got)
		}
	})
	t.Run("errors are neutral", func(t *testing.T) {
		l := New(Options{Initial: 4, Max: 1000})
		rels := []func(Outcome){mustAcquire(t, l), mustAcquire(t, l), mustAcquire(t, l), mustAcquire(t, l)}
		for _, r := range rels {
			r(Outcome{Err: errors.New("bad request")})
		}
		if got := l.Limit(); got != 4 {
			t.Errorf("limit %d, want 4", got)
		}
	})
}

func TestLoadProbeHoldsGrowth(t *testing.T) {
	l := New(Options{Initial: 4, Max: 1000, ProbeInterval: time.Millisecond})
	var queue atomic.Int64
	queue.Store(3)
	l.SetLoadProbe(func(ctx context.Context) (int, error) { return int(queue.Load()), nil })
	mustAcquire(t, l)(Outcome{Latency: time.Millisecond}) // starts the first probe
	deadline := time.Now().Add(2 * time.Second)
	for l.Stats().ServerQueue != 3 {
		if time.Now().After(deadline) {
			t.Fatal("probe never ran")
		}
		time.Sleep(time.Millisecond)
	}
	for range 3 {
		saturate(t, l, time.Millisecond)
	}
	if got := l.Limit(); got != 4 {
		t.Fatalf("limit grew to %d while the server queued", got)
	}
	queue.Store(0)
	for l.Stats().ServerQueue != 0 {
		if time.Now().After(deadline) {
			t.Fatal("probe never cleared")
		}
		time.Sleep(2 * time.Millisecond)
		mustAcquire(t, l)(Outcome{Latency: time.Millisecond})
	}
	saturate(t, l, time.Millisecond)
	if got := l.Limit(); got <= 4 {
		t.Errorf("limit %d: no growth after the queue drained", got)
	}
}

func TestAcquireCancel(t *testing.T) {
	l := New(Options{Initial: 1, Max: 1})
	rel := mustAcquire(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	rel(Outcome{})
	rel(Outcome{}) // a second release does nothing
	if s := l.Stats(); s.InFlight != 0 || s.Waiting != 0 {
		t.Fatalf("stats %+v after cancel and release", s)
	}
	mustAcquire(t, l)(Outcome{})
}

// 500 goroutines with random outcomes: the in-flight count never passes
// Max nor the limit in force when the slot was granted, and nothing leaks.
func TestHammer(t *testing.T) {
	const maxLimit = 24
	l := New(Options{Initial: 4, Min: 2, Max: maxLimit})
	var cur, peak atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	for g := range 500 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 40 {
				c, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(5000))*time.Microsecond)
				rel, err := l.Acquire(c)
				cancel()
				if err != nil {
					continue
				}
				n := cur.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				if n > maxLimit {
					t.Errorf("%d in flight, Max %d", n, maxLimit)
				}
				time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
				cur.Add(-1)
				rel(Outcome{Latency: time.Duration(1+rng.IntN(3)) * time.Millisecond, Overloaded: rng.IntN(50) == 0})
			}
		}()
	}
	wg.Wait()
	s := l.Stats()
	if s.InFlight != 0 || s.Waiting != 0 {
		t.Errorf("leaked: %+v", s)
	}
	if s.MaxInFlight > maxLimit || int(peak.Load()) > maxLimit {
		t.Errorf("peak %d / %d over Max %d", s.MaxInFlight, peak.Load(), maxLimit)
	}
	if s.Decreases == 0 {
		t.Errorf("no decrease despite overloads: %+v", s)
	}
	t.Logf("peak in flight %d, final limit %d, %d decreases", peak.Load(), s.Limit, s.Decreases)
}

// capacityServer is a loopback server serving capacity requests at once in
// latency each, queueing up to queue more and refusing the rest with 429:
// the shape of a vLLM server with a bounded waiting queue.
func capacityServer(capacity, queue int, latency time.Duration) *httptest.Server {
	slots := make(chan struct{}, capacity)
	var waiting atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
		default:
			if waiting.Add(1) > int64(queue) {
				waiting.Add(-1)
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			slots <- struct{}{}
			waiting.Add(-1)
		}
		time.Sleep(latency)
		<-slots
		w.WriteHeader(http.StatusOK)
	}))
}

// Against a real server with 8 slots and 50 ms per request, 64 workers
// driven by the limiter keep the server busy without flooding it.
func TestAgainstCapacityServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 2s")
	}
	const capacity = 8
	srv := capacityServer(capacity, 4, 50*time.Millisecond)
	defer srv.Close()
	l := New(Options{Initial: 2, Min: 1, Max: 64})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				rel, err := l.Acquire(ctx)
				if err != nil {
					return
				}
				start := time.Now()
				req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
				resp, err := srv.Client().Do(req)
				if err != nil {
					rel(Outcome{Err: err})
					continue
				}
				resp.Body.Close()
				over := resp.StatusCode == http.StatusTooManyRequests
				if over {
					refused.Add(1)
				} else {
					ok.Add(1)
				}
				rel(Outcome{Latency: time.Since(start), Overloaded: over})
			}
		}()
	}
	wg.Wait()
	s := l.Stats()
	ideal := 2 * float64(capacity) / 0.05 // requests in 2s at full use
	t.Logf("ok %d (ideal %.0f), refused %d, final limit %d, max in flight %d, %d decreases",
		ok.Load(), ideal, refused.Load(), s.Limit, s.MaxInFlight, s.Decreases)
	if float64(ok.Load()) < 0.6*ideal {
		t.Errorf("served %d of an ideal %.0f: the limiter starved the server", ok.Load(), ideal)
	}
	if refused.Load() > ok.Load()/4 {
		t.Errorf("%d refused for %d served: the limiter flooded the server", refused.Load(), ok.Load())
	}
	if s.Limit > 4*capacity {
		t.Errorf("limit settled at %d for a server of %d slots", s.Limit, capacity)
	}
}
