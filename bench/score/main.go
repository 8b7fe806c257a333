// Command score prints each speed figure of issue 16 beside its target, so
// the gap shows in one command:
//
//	go run ./bench/score [-hayloft PATH] [-runs 3] [-wasm] [-throughput]
//
// The `hayloft score` and `hayloft tokens` rows run the real CLI on the fixed
// inputs of ../shared/bench; -wasm adds the WASM scorer benchmark (it builds
// the test modules: slow the first time); -throughput runs bench/throughput
// (about a minute) and prints its table under the targets of its rows. The
// machines are shared, so each row gives the median wall time of -runs runs
// and the CPU time of hayloft with the plugin processes it started.
//
// A "one core" target is judged twice. The first row runs on every core and
// compares its CPU time with the target: a proxy, and a pessimistic one, as
// it also counts what spreading the work over cores costs (the scheduler's
// spinning, hand-offs between cores). The row under it ("pinned") runs
// hayloft and its plugin on a single core (taskset -c 0, which the Go
// runtime of both processes sees as GOMAXPROCS=1) and compares its wall
// time, end to end: the condition itself. Without taskset on PATH
// the pinned rows say so.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "score:", err)
		}
		os.Exit(1)
	}
}

type settings struct {
	hayloft    string
	shared     string
	runs       int
	wasm       bool
	throughput bool
}

// row is one line of the table: a measured path and its target.
type row struct {
	path     string
	measured string
	target   string
	gap      string // "pass", or "FAIL" and how far from the target
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var s settings
	fs := flag.NewFlagSet("score", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&s.hayloft, "hayloft", "", "hayloft binary (default: go build ./cmd/hayloft into a temp dir)")
	fs.StringVar(&s.shared, "shared", "../shared/bench", "directory of bleu_pairs.jsonl and rouge_pairs.jsonl")
	fs.IntVar(&s.runs, "runs", 3, "runs per row; the median is reported")
	fs.BoolVar(&s.wasm, "wasm", false, "also run BenchmarkKeywordCoverage (builds WASM modules)")
	fs.BoolVar(&s.throughput, "throughput", false, "also run bench/throughput (about a minute)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if s.runs < 1 {
		return errors.New("-runs must be at least 1")
	}
	dir, err := os.MkdirTemp("", "hayloft-bench-score-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if s.hayloft == "" {
		fmt.Fprintln(stderr, "building hayloft ...")
		s.hayloft = filepath.Join(dir, "hayloft")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", s.hayloft, "./cmd/hayloft")
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build hayloft: %w", err)
		}
	}

	// util-linux's taskset, in every Debian install; the pinned rows need it.
	taskset, _ := exec.LookPath("taskset")
	var rows []row
	bleu := filepath.Join(s.shared, "bleu_pairs.jsonl")
	rouge := filepath.Join(s.shared, "rouge_pairs.jsonl")
	for _, c := range []struct {
		path, input string
		args        []string
		target      time.Duration
		pairsTarget float64 // pairs/s, when the target is a rate
		// withoutCI, when set, is the pinned row again with these
		// options added: the aggregate without its bootstrap CI's
		// resamples, which sacreBLEU's corpus_bleu (the target's
		// reference) does not compute.
		withoutCI []string
	}{
		{"hayloft score --scorer bleu", bleu, []string{"score", "--scorer", "bleu"}, 0, 66000, nil},
		{"hayloft score --scorer bleu --aggregate", bleu, []string{"score", "--scorer", "bleu", "--aggregate"}, 140 * time.Millisecond, 0,
			[]string{"--option", "bootstrap_resamples=1"}},
		{"hayloft score --scorer rougel", rouge, []string{"score", "--scorer", "rougel"}, 500 * time.Millisecond, 0, nil},
	} {
		fmt.Fprintf(stderr, "%s ...\n", c.path)
		in, err := os.ReadFile(c.input)
		if err != nil {
			return fmt.Errorf("%s: %w (give -shared)", c.path, err)
		}
		m, err := measure(ctx, s, in, "", c.args...)
		if err != nil {
			return fmt.Errorf("%s: %w", c.path, err)
		}
		pairs := bytes.Count(in, []byte("\n"))
		judge := func(r row, took time.Duration) row {
			if c.pairsTarget > 0 {
				r.target = fmt.Sprintf(">= %s pairs/s, one core", thousands(c.pairsTarget))
				r.gap = gap(c.pairsTarget, float64(pairs)/took.Seconds())
			} else {
				r.target = fmt.Sprintf("<= %s, one core", ms(c.target))
				r.gap = gap(took.Seconds(), c.target.Seconds())
			}
			return r
		}
		rows = append(rows, judge(row{path: c.path + " (all cores: CPU)", measured: fmt.Sprintf("%s wall, %s CPU; %s pairs/s, %s pairs/CPU-s", ms(m.wall), ms(m.cpu),
			thousands(float64(pairs)/m.wall.Seconds()), thousands(float64(pairs)/m.cpu.Seconds()))}, m.cpu))
		pinned := "  pinned to one core (taskset -c 0): wall"
		if taskset == "" {
			rows = append(rows, row{path: pinned, measured: "not measured: no taskset on PATH", target: "-", gap: "-"})
			continue
		}
		fmt.Fprintf(stderr, "%s, pinned to one core ...\n", c.path)
		if m, err = measure(ctx, s, in, taskset, c.args...); err != nil {
			return fmt.Errorf("%s, pinned: %w", c.path, err)
		}
		rows = append(rows, judge(row{path: pinned, measured: fmt.Sprintf("%s wall, %s CPU; %s pairs/s", ms(m.wall), ms(m.cpu),
			thousands(float64(pairs)/m.wall.Seconds()))}, m.wall))
		if c.withoutCI != nil {
			fmt.Fprintf(stderr, "%s %s, pinned to one core ...\n", c.path, strings.Join(c.withoutCI, " "))
			bare, err := measure(ctx, s, in, taskset, append(slices.Clone(c.args), c.withoutCI...)...)
			if err != nil {
				return fmt.Errorf("%s %s, pinned: %w", c.path, strings.Join(c.withoutCI, " "), err)
			}
			rows = append(rows, row{path: "    of which: the CI's resamples",
				measured: fmt.Sprintf("%s (pinned with %s: %s wall)", ms(m.wall-bare.wall), strings.Join(c.withoutCI, " "), ms(bare.wall)), target: "-", gap: "-"})
		}
	}
	// Where the score rows' CPU goes, without targets of their own: the
	// fixed start (two processes and their handshake, paid by every run)
	// and the protocol alone (exact does next to nothing per line).
	one := []byte(`{"prediction": "a b c", "references": ["a b c"]}` + "\n")
	for _, c := range []struct {
		path  string
		input []byte
		args  []string
	}{
		{"  of which: start (one-line input, --scorer bleu)", one, []string{"score", "--scorer", "bleu"}},
		{"  of which: protocol (--scorer exact, bleu_pairs.jsonl)", nil, []string{"score", "--scorer", "exact"}},
	} {
		fmt.Fprintf(stderr, "%s ...\n", strings.TrimSpace(c.path))
		in := c.input
		if in == nil {
			if in, err = os.ReadFile(bleu); err != nil {
				return fmt.Errorf("%s: %w (give -shared)", c.path, err)
			}
		}
		m, err := measure(ctx, s, in, "", c.args...)
		if err != nil {
			return fmt.Errorf("%s: %w", c.path, err)
		}
		rows = append(rows, row{path: c.path, measured: fmt.Sprintf("%s wall, %s CPU", ms(m.wall), ms(m.cpu)), target: "-", gap: "-"})
	}
	for _, enc := range []string{"cl100k_base", "o200k_base"} {
		for _, c := range []struct{ what, in string }{{"empty input", ""}, {"one word", "hello"}} {
			path := fmt.Sprintf("hayloft tokens --encoding %s, %s", enc, c.what)
			fmt.Fprintf(stderr, "%s ...\n", path)
			m, err := measure(ctx, s, []byte(c.in), "", "tokens", "--count", "--encoding", enc)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			rows = append(rows, row{path: path, measured: fmt.Sprintf("%s wall, %s CPU (process start included)", ms(m.wall), ms(m.cpu)),
				target: "encoder load <= 20 ms", gap: gap(m.cpu.Seconds(), 0.020)})
		}
	}
	if s.wasm {
		fmt.Fprintln(stderr, "BenchmarkKeywordCoverage/serial ...")
		r, err := wasmRow(ctx)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	rows = append(rows, row{path: "NIAH 120K-128K, 64 in flight, peak RSS", measured: "not measured here", target: "<= 300 MB", gap: "-"})

	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "path\tmeasured (median of %d)\ttarget\tresult\n", s.runs)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.path, r.measured, r.target, r.gap)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if s.throughput {
		fmt.Fprintln(stderr, "bench/throughput ...")
		fmt.Fprintln(stdout, "\nbench/throughput; targets: zero latency >= 5,000 samples/s and <= 200 µs client CPU per request; 50 ms latency >= 90% of ideal")
		cmd := exec.CommandContext(ctx, "go", "run", "./bench/throughput", "-hayloft", s.hayloft)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		return cmd.Run()
	}
	return nil
}

// measurement is the median wall time and CPU time of a command's runs.
type measurement struct{ wall, cpu time.Duration }

// measure runs hayloft with args and stdin in, s.runs times; with taskset
// (its path) through it, on core 0 only. The CPU time is the child's
// rusage, which counts the plugin processes it waited for (and taskset's
// own, which execs hayloft in its place).
func measure(ctx context.Context, s settings, in []byte, taskset string, args ...string) (measurement, error) {
	var walls, cpus []time.Duration
	for range s.runs {
		cmd := exec.CommandContext(ctx, s.hayloft, args...)
		if taskset != "" {
			cmd = exec.CommandContext(ctx, taskset, append([]string{"-c", "0", s.hayloft}, args...)...)
		}
		cmd.Stdin = bytes.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return measurement{}, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
		}
		walls = append(walls, time.Since(start))
		cpus = append(cpus, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	return measurement{median(walls), median(cpus)}, nil
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

var nsPerOp = regexp.MustCompile(`BenchmarkKeywordCoverage/serial\S*\s+\d+\s+([\d.]+) ns/op`)

// wasmRow runs the WASM scorer's serial benchmark.
func wasmRow(ctx context.Context) (row, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "KeywordCoverage/serial", "-benchtime", "2000x", "./plugins/scorers/wasm/")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return row{}, fmt.Errorf("wasm benchmark: %w\n%s", err, out)
	}
	m := nsPerOp.FindSubmatch(out)
	if m == nil {
		return row{}, fmt.Errorf("wasm benchmark: no ns/op in\n%s", out)
	}
	ns, _ := strconv.ParseFloat(string(m[1]), 64)
	return row{path: "WASM scorer call (BenchmarkKeywordCoverage, serial)", measured: fmt.Sprintf("%.0f µs per call (wall)", ns/1000),
		target: "<= 50 µs", gap: gap(ns/1000, 50)}, nil
}

// gap says whether have meets want, where smaller is better for have/want
// as given: "pass", or "FAIL" and how far off.
func gap(have, want float64) string {
	if have <= want {
		return "pass"
	}
	return fmt.Sprintf("FAIL, %.2f× off", have/want)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

// thousands formats a rate with thousands separators.
func thousands(f float64) string {
	s := strconv.FormatInt(int64(f+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
