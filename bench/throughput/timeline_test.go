package main

import (
	"testing"
	"time"
)

// summary on a made-up timeline: two allowed, each answer 50 ms after its
// request, the next request 2 ms after each answer.
func TestTimelineSummary(t *testing.T) {
	var tl timeline
	t0 := time.Unix(1000, 0)
	ms := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Millisecond))) }
	for _, r := range [][2]float64{{0, 50}, {1, 51}, {52, 102}, {53, 103}} {
		tl.observe(chatPath, ms(r[0]), ms(r[1]))
	}
	tl.observe("/v1/models", ms(0), ms(200)) // not a chat request: not counted
	want := "first 2 requests reached the server over 1.0 ms; at the server 1.9 held on average, 50.0 ms each; client turn from an answer to the next request 2.0 ms mean (p50 2.0, p90 2.0, p99 2.0)"
	if got := tl.summary(2); got != want {
		t.Errorf("summary:\n%s\nwant\n%s", got, want)
	}
	if got := tl.summary(4); got != "" {
		t.Errorf("summary with as many allowed as requests = %q, want none", got)
	}
}
