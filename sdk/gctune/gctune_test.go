package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{4 << 20, 100},
		{MinHeadroom, 100},
		{20 << 20, 80},         // headroom MinHeadroom
		{2 * MinHeadroom, 50},  // from here half the live heap
		{64 << 20, minPercent}, // 32 MB of prompts in flight
		{1 << 30, minPercent},
	} {
		if got := Percent(tc.live); got != tc.want {
			t.Errorf("Percent(%d MB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
}

// After a collection that finds a large heap live, the tuner lowers GOGC;
// once the heap is small again, it restores the default.
func TestTunerFollowsLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tuned := make(chan int, 16)
	tu := &tuner{percent: 100, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, tuned: tuned}
	defer tu.stop.Store(true)

	held := make([]byte, 4*MinHeadroom)
	for i := range held {
		held[i] = byte(i)
	}
	arm(tu)
	runtime.GC()
	if p := <-tuned; p != minPercent {
		t.Fatalf("with %d MB live: GOGC %d, want %d", len(held)>>20, p, minPercent)
	}
	if got := gogc(); got != minPercent {
		t.Errorf("runtime's GOGC is %d, want %d", got, minPercent)
	}
	runtime.KeepAlive(held)
	held = nil
	runtime.GC()
	if p := <-tuned; p != 100 {
		t.Fatalf("with the heap released: GOGC %d, want 100", p)
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}
