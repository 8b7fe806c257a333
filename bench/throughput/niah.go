package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
)

// The NIAH memory row: needle-in-a-haystack at 120K–128K tokens with many
// requests held at once, as a long-context user runs it. Every prompt is
// some 500 KB of text, so what counts is how many copies of each the
// process tree holds (task plugin, kernel, model plugin, journal), measured
// as the peak resident memory of hayloft plus its plugin processes.
const (
	niahMinLength = 120000
	niahMaxLength = 128000
	niahStep      = 500 // 17 lengths
)

// niahDepths × the 17 lengths = 68 samples: a few more than the 64 held
// at once, so the row also covers samples waiting for a free slot.
var niahDepths = []int{0, 33, 67, 100}

func niahSamples() int {
	return ((niahMaxLength-niahMinLength)/niahStep + 1) * len(niahDepths)
}

// niahEval is the config of the NIAH row: the niah task on haystack, the
// openai model at baseURL with a 128K window (so the kernel measures and
// fits every prompt, as it would for a real 128K model) and the niah
// scorer.
func niahEval(haystack, baseURL string, conc int) string {
	return fmt.Sprintf(`task "niah" "long" {
  haystack = %q
  lengths  = range(%d, %d, %d)
  depths   = %s
}

model "openai" "fake" {
  base_url        = %q
  model           = "fake-model"
  context_window  = 131072
  max_concurrency = %d
}

eval "niah" {
  task    = task.niah.long
  models  = [model.openai.fake]
  scorers = ["niah"]
  # The task's order: the server reports no prefix cache, and the prefix
  # order would send documents larger than the cache it assumes (32K
  # tokens) one at a time, which is not the load this row is about.
  order   = "task"
}
`, haystack, niahMinLength, niahMaxLength+1, niahStep, hclInts(niahDepths), baseURL, conc)
}

func hclInts(v []int) string {
	s := "["
	for i, x := range v {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(x)
	}
	return s + "]"
}

// niahRow runs the NIAH memory row against a server that holds every
// request for s.niahLatency, long enough for all allowed to be in flight at
// once. The server answers without reading the prompt: its own cost is
// not the kernel's.
func niahRow(ctx context.Context, s settings, dir, profile string, log io.Writer) (row, error) {
	srv, err := openaitest.Start(openaitest.Options{
		Latency: s.niahLatency,
		Answer:  func(openaitest.ChatRequest) string { return "Eat a sandwich and sit in Dolores Park on a sunny day." },
	})
	if err != nil {
		return row{}, err
	}
	defer srv.Close()
	n := niahSamples()
	fmt.Fprintf(log, "hayloft: NIAH %d samples of %dK-%dK tokens, max_concurrency %d, %s latency ...\n",
		n, niahMinLength/1000, niahMaxLength/1000, s.niahConc, s.niahLatency)
	r, err := kernelRow(ctx, job{hayloft: s.hayloft, dir: dir, config: niahEval(s.haystack, srv.BaseURL(), s.niahConc),
		samples: n, conc: s.niahConc, timeout: s.timeout, profile: profile, log: log}, srv)
	if err != nil {
		return row{}, err
	}
	r.name = fmt.Sprintf("NIAH %dK-%dK memory", niahMinLength/1000, niahMaxLength/1000)
	// Fewer held at once than allowed would measure a lighter load than
	// the target is about (then raise -niah-latency).
	want := min(s.niahConc, n)
	r.checks = []check{
		{fmt.Sprintf("<= %d MB peak RSS", targetPeakRSS>>20), r.peakRSS > 0 && r.peakRSS <= targetPeakRSS},
		{fmt.Sprintf("%d in flight", want), r.maxInFlight >= want},
	}
	return r, nil
}
