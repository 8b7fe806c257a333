// Command xlbench measures the XLBench task's load-and-render cost on the
// issue's workload: 500 questions over 10 documents of 200K words each,
// against the targets: load and render in < 3 s, peak RSS < 3× the
// documents' size.
//
// It writes the data set (from Go's Opticks, repeated) in each layout a
// data file may use: documents in context_file beside the JSONL, inline on
// each document's first question, and inline on every question as many
// exports do. Each layout is measured in fresh child processes, so the
// generator's memory is not counted: wall and CPU time from opening the
// file to the last rendered prompt, and peak RSS (VmHWM) against the
// documents' total size (the bytes of their text, once each).
//
// Rendering writes each prompt into one reused buffer (sdk.Sample.Template
// and AppendContent), as a consumer that sends prompts one after another
// can. For comparison the child then renders every prompt again with
// sdk.Sample.Render, which allocates each prompt afresh, as the kernel's
// prompt fitting does today: that row has no target; it shows the cost of
// a fresh prompt string per sample, which the collector lets pile up to
// about the size of the live heap before it runs.
//
// Each row with a target says PASS or FAIL on its worst run; the command
// exits with status 1 when a target is missed.
//
//	go run ./bench/xlbench [-layout all|context_file|inline|repeat] [-runs 5]
//	    [-words 200000] [-docs 10] [-questions 500] [-dir DIR] [-memprofile PREFIX]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hayloft/hayloft/plugins/tasks/xlbench"
	"github.com/hayloft/hayloft/plugins/tasks/xlbench/xlbenchgen"
	"github.com/hayloft/hayloft/sdk"
)

// The targets.
const (
	targetSeconds = 3.0 // load and render
	targetRSS     = 3.0 // peak RSS after render, × the documents' size
)

// layouts are the ways a data file may hold its documents.
var layouts = []struct{ name, desc string }{
	{"context_file", "documents in context_file beside the JSONL"},
	{"inline", "documents inline on each document's first question"},
	{"repeat", "documents inline on every question"},
}

func main() {
	layout := flag.String("layout", "all", "all, or one of context_file, inline, repeat")
	runs := flag.Int("runs", 5, "fresh processes per layout (at least 3)")
	words := flag.Int("words", 200_000, "words per document")
	docs := flag.Int("docs", 10, "documents")
	questions := flag.Int("questions", 500, "questions (a multiple of 10 × -docs)")
	dir := flag.String("dir", "", "write the data sets under this directory and keep them (default: a temporary one, removed)")
	memprofile := flag.String("memprofile", "", "each child writes a heap profile (allocations sampled every 64 KiB) to PREFIX-<layout>-<run>.pprof")
	measure := flag.String("measure", "", "internal: measure this data file in this process")
	flag.Parse()
	var err error
	if *measure != "" {
		err = run(*measure, *memprofile)
	} else {
		err = bench(*layout, *runs, *words, *docs, *questions, *dir, *memprofile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "xlbench:", err)
		os.Exit(1)
	}
}

// errMissed is bench's error when a target was missed: the rows said which.
var errMissed = errors.New("a target was missed (see FAIL above)")

func bench(layout string, runs, words, docs, questions int, dir, memprofile string) error {
	if runs < 3 {
		return fmt.Errorf("-runs %d: at least 3, the median of fewer says little", runs)
	}
	perDoc := questions / docs
	// Ten fiction subtasks, perDoc/10 questions each, per document.
	subtasks := xlbench.SubtaskNames(xlbench.Fiction)[:10]
	if questions%(docs*len(subtasks)) != 0 {
		return fmt.Errorf("-questions %d: want a multiple of %d (10 subtasks × -docs)", questions, docs*len(subtasks))
	}
	src, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		return err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "xlbench-bench"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	missed := false
	for _, l := range layouts {
		if layout != "all" && layout != l.name {
			continue
		}
		sub := filepath.Join(dir, l.name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		path := filepath.Join(sub, "xlbench.jsonl")
		n, err := xlbenchgen.Write(path, xlbenchgen.Config{
			English: string(src), Docs: docs, DocUnits: words, PerSubtask: perDoc / len(subtasks),
			Scenarios: []string{xlbench.Fiction}, Subtasks: subtasks,
			Inline: l.name != "context_file", RepeatContext: l.name == "repeat",
		})
		if err != nil {
			return err
		}
		docBytes, err := documentBytes(path)
		if err != nil {
			return err
		}
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		fmt.Printf("%s: %s\n  %d questions, %d documents × %d words, %.1f MB of documents, data file %.1f MB; %d runs, each in a fresh process\n",
			l.name, l.desc, n, docs, words, float64(docBytes)/1e6, float64(fi.Size())/1e6, runs)
		var ms []measurement
		for i := range runs {
			args := []string{"-measure", path}
			if memprofile != "" {
				args = append(args, "-memprofile", fmt.Sprintf("%s-%s-%d.pprof", memprofile, l.name, i))
			}
			out, err := exec.Command(os.Args[0], args...).Output()
			if err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return fmt.Errorf("measure %s: %w: %s", l.name, err, ee.Stderr)
				}
				return fmt.Errorf("measure %s: %w", l.name, err)
			}
			var m measurement
			if err := json.Unmarshal(out, &m); err != nil {
				return fmt.Errorf("measure %s: %w in %q", l.name, err, out)
			}
			if m.Prompts != n {
				return fmt.Errorf("measure %s: %d prompts rendered, want %d", l.name, m.Prompts, n)
			}
			ms = append(ms, m)
		}
		ratio := func(f func(measurement) int64) func(measurement) float64 {
			return func(m measurement) float64 { return float64(f(m)) / float64(docBytes) }
		}
		rows := []struct {
			label  string
			value  func(measurement) float64
			target float64
			note   string
		}{
			{"load and render, wall s", func(m measurement) float64 { return m.Seconds }, targetSeconds, ""},
			{"load and render, CPU s (user+sys)", func(m measurement) float64 { return m.CPU }, 0, "wall time on a quiet machine"},
			{"RSS before loading, × documents", ratio(func(m measurement) int64 { return m.StartRSS }), 0, "the runtime and the binary"},
			{"peak RSS after load, × documents", ratio(func(m measurement) int64 { return m.LoadRSS }), 0, ""},
			{"peak RSS after render, × documents", ratio(func(m measurement) int64 { return m.RenderRSS }), targetRSS, ""},
			{"  then Sample.Render, × documents", ratio(func(m measurement) int64 { return m.FreshRSS }), 0, "a fresh string per prompt, as the kernel's fitting"},
		}
		for _, r := range rows {
			vs := make([]float64, len(ms))
			for i, m := range ms {
				vs[i] = r.value(m)
			}
			worst := slices.Max(vs)
			line := fmt.Sprintf("  %-36s median %5.2f  max %5.2f", r.label, median(vs), worst)
			switch {
			case r.target > 0 && worst < r.target:
				line += fmt.Sprintf("  target < %g  PASS", r.target)
			case r.target > 0:
				line += fmt.Sprintf("  target < %g  FAIL", r.target)
				missed = true
			default:
				line += "  (no target: " + r.note + ")"
			}
			fmt.Println(strings.TrimSuffix(line, "  (no target: )"))
		}
	}
	if missed {
		return errMissed
	}
	fmt.Println("every target met on every run")
	return nil
}

// documentBytes is the size of the documents' text, each counted once,
// as the task loads them.
func documentBytes(path string) (int64, error) {
	ds, err := xlbench.Load(path, false)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, d := range ds.Docs {
		n += int64(len(d.Text))
	}
	return n, nil
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

// measurement is what one child reports; RSS figures are VmHWM, in bytes.
type measurement struct {
	Seconds   float64 `json:"seconds"` // opening the file to the last prompt
	CPU       float64 `json:"cpu"`     // user+sys over the same span and the start
	StartRSS  int64   `json:"start_rss"`
	LoadRSS   int64   `json:"load_rss"`
	RenderRSS int64   `json:"render_rss"`
	FreshRSS  int64   `json:"fresh_rss"` // after rendering again with Sample.Render
	Prompts   int     `json:"prompts"`
}

// run loads the file through the task, renders every prompt into one
// reused buffer, then every prompt again with Sample.Render, and prints
// a measurement as JSON.
func run(path, memprofile string) error {
	if memprofile != "" {
		runtime.MemProfileRate = 64 << 10
	}
	var m measurement
	var err error
	if m.StartRSS, err = peakRSS(); err != nil {
		return err
	}
	ctx := context.Background()
	start := time.Now()
	task, err := xlbench.New(ctx, sdk.MustOptions(map[string]any{"path": path}))
	if err != nil {
		return err
	}
	// CountSamples loads the file; the peak so far is the load's.
	if _, err := task.(sdk.SampleCounter).CountSamples(ctx, &sdk.SamplesRequest{}); err != nil {
		return err
	}
	if m.LoadRSS, err = peakRSS(); err != nil {
		return err
	}
	var buf []byte
	for s, err := range task.Samples(ctx, &sdk.SamplesRequest{}) {
		if err != nil {
			return err
		}
		size := 0
		for _, msg := range s.Template() {
			buf = s.AppendContent(buf[:0], msg.Content)
			size += len(buf)
		}
		if size < len(s.Context) {
			return fmt.Errorf("sample %s: render lost the document", s.ID)
		}
		m.Prompts++
	}
	m.Seconds = time.Since(start).Seconds()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return err
	}
	m.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	if m.RenderRSS, err = peakRSS(); err != nil {
		return err
	}
	if memprofile != "" {
		if err := writeHeapProfile(memprofile); err != nil {
			return err
		}
	}
	for s, err := range task.Samples(ctx, &sdk.SamplesRequest{}) {
		if err != nil {
			return err
		}
		if len(s.Render()[0].Content) < len(s.Context) {
			return fmt.Errorf("sample %s: render lost the document", s.ID)
		}
	}
	if m.FreshRSS, err = peakRSS(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(m)
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// The profile shows allocations as of the last collection: one now
	// makes it cover every allocation so far.
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// peakRSS reads VmHWM from /proc/self/status (Linux).
func peakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}
