package main

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// timeline collects when each chat request reached the fake server and
// when it was answered (openaitest.Options.Observe), to say where a row's
// serving time went: how many requests the server held on average, and how
// long the client took from an answer to the request that took its place.
type timeline struct {
	mu                sync.Mutex
	arrived, answered []time.Time
}

func (t *timeline) observe(path string, arrived, answered time.Time) {
	if path != chatPath {
		return
	}
	t.mu.Lock()
	t.arrived = append(t.arrived, arrived)
	t.answered = append(t.answered, answered)
	t.mu.Unlock()
}

// summary is the timeline of requests with conc allowed: how long the
// first conc took to reach the server after the first (the first round,
// which every later one inherits); the mean held at the server from the
// first arrival to the last answer; and the client's turn, the k-th answer
// to the (conc+k)-th arrival (the request a freed slot let go, answers and
// arrivals each taken in time order), as mean and percentiles; "" with too
// few requests.
func (t *timeline) summary(conc int) string {
	t.mu.Lock()
	arr, ans := slices.Clone(t.arrived), slices.Clone(t.answered)
	t.mu.Unlock()
	if len(arr) <= conc {
		return ""
	}
	var held time.Duration
	for i := range arr {
		held += ans[i].Sub(arr[i])
	}
	slices.SortFunc(arr, time.Time.Compare)
	slices.SortFunc(ans, time.Time.Compare)
	span := ans[len(ans)-1].Sub(arr[0])
	turns := make([]time.Duration, 0, len(arr)-conc)
	var sum time.Duration
	for k := 0; conc+k < len(arr); k++ {
		d := arr[conc+k].Sub(ans[k])
		turns = append(turns, d)
		sum += d
	}
	slices.Sort(turns)
	pct := func(p float64) float64 {
		return float64(turns[int(p*float64(len(turns)-1))].Microseconds()) / 1000
	}
	return fmt.Sprintf("first %d requests reached the server over %.1f ms; at the server %.1f held on average, %.1f ms each; client turn from an answer to the next request %.1f ms mean (p50 %.1f, p90 %.1f, p99 %.1f)",
		conc, float64(arr[conc-1].Sub(arr[0]).Microseconds())/1000,
		held.Seconds()/span.Seconds(), held.Seconds()*1000/float64(len(arr)),
		sum.Seconds()*1000/float64(len(turns)), pct(.5), pct(.9), pct(.99))
}
