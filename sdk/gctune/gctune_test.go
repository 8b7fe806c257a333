package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		live, scan uint64
		want       int
	}{
		{0, 0, 400},            // nothing live: the cap (a 16 MB goal)
		{2 * mb, 1 * mb, 400},  // the cap: the runtime's floor makes the goal 16 MB
		{4 * mb, 4 * mb, 300},  // a 16 MB goal, pointers or not
		{6 * mb, 1 * mb, 166},  // a 16 MB goal
		{8 * mb, 1 * mb, 100},  // half MinHeadroom: the default reaches it
		{12 * mb, 1 * mb, 100}, // the default
		{MinHeadroom, 0, 100},
		{20 * mb, 2 * mb, 80},    // MinHeadroom
		{20 * mb, 20 * mb, 100},  // all pointers: the default
		{48 * mb, 4 * mb, 33},    // 40 MB of prompts in flight: MinHeadroom
		{400 * mb, 8 * mb, 26},   // 8 MB scanned + 98 MB
		{400 * mb, 300 * mb, 81}, // 300 MB scanned + 25 MB
		{30 * mb, 40 * mb, 100},  // scan above live (metrics read apart) counts as live
	} {
		if got := Percent(tc.live, tc.scan); got != tc.want {
			t.Errorf("Percent(%d MB live, %d MB scannable) = %d, want %d", tc.live/mb, tc.scan/mb, got, tc.want)
		}
	}
}

// After a collection that finds a large heap live, the tuner lowers GOGC;
// once the heap is small again, it lets it grow to MinHeadroom, above the
// default.
func TestTunerFollowsLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tuned := make(chan int, 16)
	tu := newTuner()
	tu.tuned = tuned
	defer tu.stop.Store(true)

	held := make([]byte, 4*MinHeadroom)
	for i := range held {
		held[i] = byte(i)
	}
	arm(tu)
	runtime.GC()
	// 64 MB of bytes, which are not scanned: MinHeadroom, about GOGC 25.
	p := <-tuned
	if p >= 50 {
		t.Fatalf("with %d MB of bytes live: GOGC %d, want about 25", len(held)>>20, p)
	}
	if got := gogc(); got != p {
		t.Errorf("runtime's GOGC is %d, want %d", got, p)
	}
	runtime.KeepAlive(held)
	held = nil
	runtime.GC()
	if p := <-tuned; p <= 100 {
		t.Fatalf("with the heap released: GOGC %d, want above the default 100", p)
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

func TestWithFloor(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		p           int
		live, floor uint64
		want        int
	}{
		{100, 10 * mb, 0, 100},       // no floor
		{100, 10 * mb, 32 * mb, 220}, // goal 32 MB
		{100, 16 * mb, 32 * mb, 100}, // the default reaches the floor
		{80, 48 * mb, 32 * mb, 80},   // a live heap above the floor keeps its rule
		{400, 2 * mb, 32 * mb, 800},  // capped: the runtime's least goal (4 MB × 8) is the floor
		{400, 4 * mb, 32 * mb, 700},  // goal 32 MB
		{100, 0, 32 * mb, 100},       // nothing read yet
	} {
		if got := WithFloor(tc.p, tc.live, tc.floor); got != tc.want {
			t.Errorf("WithFloor(%d, %d MB live, %d MB floor) = %d, want %d", tc.p, tc.live/mb, tc.floor/mb, got, tc.want)
		}
	}
}

// With a floor set, a small live heap gets GOGC high enough to reach it.
func TestTunerFloor(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer SetGoalFloor(0)
	SetGoalFloor(64 << 20)
	tuned := make(chan int, 16)
	tu := newTuner()
	tu.tuned = tuned
	defer tu.stop.Store(true)
	arm(tu)
	runtime.GC()
	// The test binary's heap is a few MB: GOGC well above the 400 of the
	// rule alone.
	if p := <-tuned; p <= maxSmallPercent {
		t.Fatalf("with a 64 MB floor: GOGC %d, want above %d", p, maxSmallPercent)
	}
}
