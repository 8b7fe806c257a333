package runner

import (
	"io"

	"github.com/schollz/progressbar/v3"
)

// progress is a live counter of finished samples. The total is unknown:
// tasks stream, and counting them first would read every dataset twice.
type progress struct {
	bar *progressbar.ProgressBar
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
