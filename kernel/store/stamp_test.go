package store

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The feed's stamper writes what formatTime writes, whatever the order of
// the times it is given.
func TestStamperMatchesFormatTime(t *testing.T) {
	base := time.Date(2026, 11, 24, 23, 59, 59, 999_999_000, time.UTC).UnixNano()
	for _, tc := range []struct {
		name string
		ns   []int64
	}{
		{"one", []int64{base}},
		{"same microsecond", []int64{base, base + 999}},
		{"next microsecond", []int64{base, base + 1000}},
		{"across midnight and a year", []int64{time.Date(2026, 12, 31, 23, 59, 59, 999_999_999, time.UTC).UnixNano(), time.Date(2027, 1, 1, 0, 0, 0, 1000, time.UTC).UnixNano()}},
		{"backwards", []int64{base + 5e9, base, base - 1}},
		{"epoch", []int64{0, 1, 999, 1000}},
		{"before 1970", []int64{-1, -1000, -1001, -1e9, -1e9 - 1}},
		{"zero fraction", []int64{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st stamper
			for _, ns := range tc.ns {
				if got, want := st.format(ns), formatTime(time.Unix(0, ns)); got != want {
					t.Errorf("format(%d) = %q, want %q", ns, got, want)
				}
			}
		})
	}
	// Times in the order a feed sees them: mostly increasing, a few
	// microseconds apart, now and then one from a goroutine that lagged.
	var st stamper
	r := rand.New(rand.NewPCG(1, 2))
	ns := base
	for range 100_000 {
		ns += r.Int64N(3_000_000)
		at := ns
		if r.IntN(10) == 0 {
			at -= r.Int64N(2e9)
		}
		if got, want := st.format(at), formatTime(time.Unix(0, at)); got != want {
			t.Fatalf("format(%d) = %q, want %q", at, got, want)
		}
	}
}

func BenchmarkStamper(b *testing.B) {
	var st stamper
	ns := time.Now().UnixNano()
	for b.Loop() {
		ns += 173_000
		st.format(ns)
	}
}

func BenchmarkFormatTime(b *testing.B) {
	ns := time.Now().UnixNano()
	for b.Loop() {
		ns += 173_000
		formatTime(time.Unix(0, ns))
	}
}
