package runner

import (
	"sync"
	"sync/atomic"
	"time"
)

// overhead measures the kernel's own cost per sample: this process's CPU
// time from the first sample dispatched to the end of the run, divided by
// the samples processed. Start-up (loading the config, launching plugins,
// loading a tokenizer) is left out: it is paid once, not per sample. Where
// process CPU time is not available it falls back to the wall time each
// sample spent outside the model call.
type overhead struct {
	once   sync.Once
	cpu0   time.Duration
	cpuOK  bool
	wallNS atomic.Int64
	jobs   atomic.Int64
}

func (o *overhead) start() { o.once.Do(func() { o.cpu0, o.cpuOK = processCPU() }) }

// done records one sample and the wall time it spent in the kernel.
func (o *overhead) done(kernel time.Duration) {
	o.wallNS.Add(int64(kernel))
	o.jobs.Add(1)
}

func (o *overhead) perSample() float64 {
	n := o.jobs.Load()
	if n == 0 {
		return 0
	}
	if cpu1, ok := processCPU(); ok && o.cpuOK {
		return float64(cpu1-o.cpu0) / float64(n) / 1e3
	}
	return float64(o.wallNS.Load()) / float64(n) / 1e3
}
