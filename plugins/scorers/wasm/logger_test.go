package wasm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

func TestGuestLoggerRateLimit(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	g := newGuestLogger(hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Trace}), func() time.Time { return now })
	lines := func(from, to int) []byte {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		return []byte(b.String())
	}
	steps := []struct {
		advance   time.Duration
		msg       []byte
		wantLines int
		wantDrop  string // a dropped-lines report expected in this step's output
	}{
		{0, lines(0, 250), 100, ""},                                // the burst
		{500 * time.Millisecond, lines(250, 300), 50, "lines=150"}, // half a second refills 50
		{10 * time.Second, lines(300, 350), 50, ""},                // the bucket holds at most one burst
		{0, lines(350, 500), 50, ""},                               // 50 left of the burst
		{time.Second, lines(500, 501), 1, "lines=100"},
	}
	for i, st := range steps {
		buf.Reset()
		now = now.Add(st.advance)
		g.write(hclog.Info, st.msg)
		out := buf.String()
		if got := strings.Count(out, "line "); got != st.wantLines {
			t.Errorf("step %d: %d lines logged, want %d\n%s", i, got, st.wantLines, out)
		}
		if st.wantDrop != "" && !strings.Contains(out, st.wantDrop) {
			t.Errorf("step %d: no report of %s dropped lines in\n%.500s", i, st.wantDrop, out)
		}
	}
}

func TestGuestLoggerCutsLongCalls(t *testing.T) {
	var buf bytes.Buffer
	g := newGuestLogger(hclog.New(&hclog.LoggerOptions{Output: &buf}), time.Now)
	g.write(hclog.Info, bytes.Repeat([]byte("x"), 3*logMaxCallBytes))
	if n := bytes.Count(buf.Bytes(), []byte("x")); n != logMaxCallBytes {
		t.Errorf("%d bytes logged, want %d", n, logMaxCallBytes)
	}
	if !strings.Contains(buf.String(), "guest log call cut") {
		t.Error("the cut was not reported")
	}
}

func TestOutputWriterKeepsTheStart(t *testing.T) {
	var buf bytes.Buffer
	w := &outputWriter{log: newGuestLogger(hclog.New(&hclog.LoggerOptions{Output: &buf}), time.Now), level: hclog.Warn}
	for _, piece := range []string{"pan", "ic: boom\n", "\n", "goroutine 1", " [running]\nmain.main()\n"} {
		fmt.Fprint(w, piece)
	}
	fmt.Fprint(w, strings.Repeat("goroutine dump\n", 1000))
	w.flush()
	if !strings.Contains(buf.String(), "panic: boom") || !strings.Contains(buf.String(), "goroutine 1 [running]") {
		t.Errorf("pieces of a line were logged apart:\n%.300s", buf.String())
	}
	if got := w.String(); !strings.HasPrefix(got, "panic: boom") || len(got) > headBytes {
		t.Errorf("kept %d bytes starting %.20q", len(got), got)
	}
	w.reset()
	if w.String() != "" {
		t.Error("reset kept output")
	}
}
