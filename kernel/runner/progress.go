package runner

import (
	"io"
	"sync"

	"github.com/schollz/progressbar/v3"
)

// progress is a live counter of finished samples. It shows a total (and so
// an ETA) when every eval's task can count its samples up front; otherwise
// a count and a rate.
type progress struct {
	bar *progressbar.ProgressBar

	mu      sync.Mutex
	total   int
	unknown bool
}

func newProgress(w io.Writer) *progress {
	if w == nil {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("samples"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("samples"),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionClearOnFinish(),
	)}
}

// expect adds n samples to the total, or, with known false, gives up on a
// total for the rest of the run.
func (p *progress) expect(n int, known bool) {
	if p.bar == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !known {
		p.unknown = true
		p.bar.ChangeMax(-1)
		return
	}
	if p.unknown {
		return
	}
	p.total += n
	p.bar.ChangeMax(p.total)
}

func (p *progress) add() {
	if p.bar != nil {
		p.bar.Add(1)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
