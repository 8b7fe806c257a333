// Command throughput measures how fast hayloft's full kernel path drives an
// OpenAI-compatible server, next to the ceiling a plain load generator (wrk)
// reaches on the same loopback server in the same run, and how many requests
// the kernel keeps in flight against a server that takes 50 ms per answer.
//
//	go run ./bench/throughput [-hayloft PATH] [-n 5000] [-wrk PATH]
//
// See README.md beside this file for what each row means.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
	"github.com/hayloft/hayloft/sdk/gctune"
	"github.com/hayloft/hayloft/sdk/plugin"
)

const chatPath = "/v1/chat/completions"

// serverHeapFloor is the heap this process may reach before it is
// collected (gctune.SetGoalFloor). The fake server stands for a machine of
// its own, yet shares the client's cores here: with Go's default goal (5 MB
// live, 10 MB goal) it was collected 17 times in the 50 ms row, some 10 ms
// of CPU and 1.5-2 ms of stopped world each (GODEBUG=gctrace=1), CPU the
// client then lacked and pauses every answer due then waited out.
const serverHeapFloor = 64 << 20

func main() {
	gctune.Start()
	gctune.SetGoalFloor(serverHeapFloor)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var usage usageError
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, &usage):
		os.Exit(2) // the flag package has printed the error and the usage
	default:
		fmt.Fprintln(os.Stderr, "throughput:", err)
		os.Exit(1)
	}
}

// usageError is a bad command line, already reported by the flag package.
type usageError struct{ error }

// settings are the command's flags.
type settings struct {
	hayloft     string          // hayloft binary; empty: build ./cmd/hayloft
	wrk         string          // wrk binary; empty: look it up on PATH
	n           int             // samples of the zero-latency kernel run
	conc        int             // max_concurrency there, and wrk's connections
	wrkDuration time.Duration   // how long wrk runs
	slowN       int             // samples of the in-flight run
	slowConc    int             // max_concurrency of the in-flight run
	latency     time.Duration   // server latency of the in-flight run
	rows        map[string]bool // which rows to take: ceiling, fast, slow, niah
	haystack    string          // its haystack; empty: Go's Opticks
	niahConc    int             // its max_concurrency
	niahLatency time.Duration   // its server latency: long enough that every request is held at once
	timeout     time.Duration   // limit on each hayloft subprocess
	profile     string          // directory for CPU profiles of each hayloft run; empty: none
}

// Targets of issue 16, each printed beside its row.
const (
	targetSamplesPerSec = 5000
	targetCPUPerReqUS   = 200
	targetShareOfIdeal  = 0.90
	targetPeakRSS       = 300 << 20
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var s settings
	fs := flag.NewFlagSet("throughput", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&s.hayloft, "hayloft", "", "hayloft binary (default: go build ./cmd/hayloft into a temp dir)")
	fs.StringVar(&s.wrk, "wrk", "", "wrk binary (default: wrk on PATH; the ceiling row is skipped without it)")
	fs.IntVar(&s.n, "n", 20000, "samples in the zero-latency kernel run")
	fs.IntVar(&s.conc, "c", 64, "max_concurrency of the zero-latency run and wrk's connections")
	fs.DurationVar(&s.wrkDuration, "d", 5*time.Second, "duration of the wrk run")
	fs.IntVar(&s.slowN, "slow-n", 5000, "samples in the in-flight run")
	fs.IntVar(&s.slowConc, "slow-c", 256, "max_concurrency of the in-flight run")
	fs.DurationVar(&s.latency, "latency", 50*time.Millisecond, "server latency of the in-flight run")
	rowList := fs.String("rows", "ceiling,fast,slow,niah", "rows to take: ceiling (wrk), fast (zero latency), slow (-latency), niah (memory)")
	fs.StringVar(&s.haystack, "haystack", "", "haystack of the NIAH row (default: Go's Isaac.Newton-Opticks.txt)")
	fs.IntVar(&s.niahConc, "niah-c", 64, "max_concurrency of the NIAH memory row")
	fs.DurationVar(&s.niahLatency, "niah-latency", 5*time.Second, "server latency of the NIAH memory row")
	fs.DurationVar(&s.timeout, "timeout", 10*time.Minute, "limit on each hayloft run")
	fs.StringVar(&s.profile, "profile", "", "write CPU profiles of hayloft and its plugin processes under this directory, one subdirectory per row")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	s.rows = map[string]bool{}
	for _, r := range strings.Split(*rowList, ",") {
		switch r = strings.TrimSpace(r); r {
		case "ceiling", "fast", "slow", "niah":
			s.rows[r] = true
		default:
			return fmt.Errorf("-rows: unknown row %q (ceiling, fast, slow, niah)", r)
		}
	}
	if s.n <= 0 || s.slowN <= 0 || s.conc <= 0 || s.slowConc <= 0 || s.niahConc <= 0 {
		return errors.New("-n, -slow-n, -c, -slow-c and -niah-c must be positive")
	}

	dir, err := os.MkdirTemp("", "hayloft-throughput-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if s.hayloft == "" {
		fmt.Fprintln(stderr, "building hayloft ...")
		if s.hayloft, err = buildHayloft(ctx, dir); err != nil {
			return err
		}
	}
	if s.wrk == "" && s.rows["ceiling"] {
		if p, err := exec.LookPath("wrk"); err == nil {
			s.wrk = p
		} else {
			fmt.Fprintln(stderr, "wrk is not on PATH (Debian: apt-get install wrk): skipping the ceiling row")
		}
	}
	if s.rows["niah"] && s.haystack == "" {
		out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
		if err != nil {
			return fmt.Errorf("go env GOROOT, for the NIAH row's haystack (or pass -haystack): %w", err)
		}
		s.haystack = filepath.Join(strings.TrimSpace(string(out)), "src", "testdata", "Isaac.Newton-Opticks.txt")
	}

	// Other work on the machine moves every figure; the load average before
	// and after says how much there was.
	before := loadavg()
	rows, err := measure(ctx, s, dir, stderr)
	if len(rows) > 0 {
		fmt.Fprintf(stdout, "cpus %d, load average before %s, after %s\n", runtime.NumCPU(), before, loadavg())
		printTable(stdout, rows)
	}
	return err
}

// loadavg is the 1, 5 and 15 minute load averages, or "n/a" off Linux.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "n/a"
}

// row is one measurement of the table.
type row struct {
	name       string
	conc       int // concurrency allowed: wrk connections or max_concurrency
	requests   int // chat requests: wrk's completed count, or what the server saw
	wall       time.Duration
	samples    int     // 0 for wrk
	overheadUS float64 // hayloft's own CPU per sample; 0 for wrk
	// clientCPU is the CPU time of the client's whole process tree: wrk, or
	// hayloft with the plugin processes it started and waited for.
	clientCPU time.Duration
	// serverCPU is this process's CPU over a hayloft run: the fake server
	// (and the benchmark's own memory sampling), which shares the cores
	// with the client; 0 when unmeasured.
	serverCPU   time.Duration
	maxInFlight int // the server's peak of requests held at once
	// peakRSS is the sum of the peak resident memory of hayloft and each
	// of its plugin processes (rssWatch), in bytes; 0 when not measured.
	peakRSS   int64
	processes int // how many processes peakRSS sums
	// before and after: the wall clock from exec to the server's first
	// chat request, and from its last answer to exit (hayloft rows; 0 for
	// wrk). wall less both is the time the server was being asked.
	before, after time.Duration
	checks        []check
	note          string
}

// check is one target of a row and whether the row met it.
type check struct {
	target string
	ok     bool
}

func (r row) rps() float64 {
	if r.wall <= 0 {
		return 0
	}
	return float64(r.requests) / r.wall.Seconds()
}

func (r row) samplesPerSec() float64 {
	if r.wall <= 0 {
		return 0
	}
	return float64(r.samples) / r.wall.Seconds()
}

// serveRPS is requests per second over the time the server was being
// asked, without the client's start and end; 0 when unmeasured.
func (r row) serveRPS() float64 {
	serve := r.wall - r.before - r.after
	if serve <= 0 || r.before <= 0 {
		return 0
	}
	return float64(r.requests) / serve.Seconds()
}

// busy is the share of the machine's cores the client and the server used
// together over the row's wall time; 0 when unmeasured.
func (r row) busy() float64 {
	if r.serverCPU <= 0 || r.clientCPU <= 0 || r.wall <= 0 {
		return 0
	}
	return (r.serverCPU + r.clientCPU).Seconds() / (r.wall.Seconds() * float64(runtime.NumCPU()))
}

// cpuPerReqUS is the client's CPU per request in µs; 0 when unmeasured.
func (r row) cpuPerReqUS() float64 {
	if r.clientCPU <= 0 || r.requests <= 0 {
		return 0
	}
	return float64(r.clientCPU.Microseconds()) / float64(r.requests)
}

// measure takes the selected measurements in order; the rows finished
// before an error are returned with it.
func measure(ctx context.Context, s settings, dir string, log io.Writer) ([]row, error) {
	var rows []row
	profile := func(name string) string {
		if s.profile == "" {
			return ""
		}
		return filepath.Join(s.profile, name)
	}

	// Zero latency: wrk's ceiling and the kernel on the same server, so
	// both share the 2 cores with the same server code.
	var ceiling float64
	if s.rows["ceiling"] || s.rows["fast"] {
		fast, err := openaitest.Start(openaitest.Options{})
		if err != nil {
			return nil, err
		}
		defer fast.Close()
		switch {
		case !s.rows["ceiling"]:
		case s.wrk == "":
			rows = append(rows, row{name: "wrk ceiling", conc: s.conc, note: "skipped: wrk not on PATH"})
		default:
			fmt.Fprintf(log, "wrk: %d connections for %s ...\n", s.conc, s.wrkDuration)
			r, err := ceilingRow(ctx, s, dir, fast)
			if err != nil {
				return rows, err
			}
			rows = append(rows, r)
			ceiling = r.rps()
		}
		if s.rows["fast"] {
			fast.ResetCounters()
			fmt.Fprintf(log, "hayloft: %d samples, max_concurrency %d, zero latency ...\n", s.n, s.conc)
			r, err := doorsRow(ctx, s, filepath.Join(dir, "fast"), profile("fast"), fast, s.n, s.conc)
			if err != nil {
				return rows, err
			}
			r.name = "hayloft, zero latency"
			if ceiling > 0 {
				r.note = appendNote(r.note, fmt.Sprintf("%.0f%% of wrk", 100*r.rps()/ceiling))
			}
			r.checks = []check{
				{fmt.Sprintf(">= %d samples/s", targetSamplesPerSec), r.samplesPerSec() >= targetSamplesPerSec},
				{fmt.Sprintf("<= %d µs/req", targetCPUPerReqUS), r.cpuPerReqUS() <= targetCPUPerReqUS},
			}
			rows = append(rows, r)
		}
		fast.Close()
	}

	if s.rows["slow"] {
		var tl timeline
		slow, err := openaitest.Start(openaitest.Options{Latency: s.latency, Observe: tl.observe})
		if err != nil {
			return rows, err
		}
		defer slow.Close()
		fmt.Fprintf(log, "hayloft: %d samples, max_concurrency %d, %s latency ...\n", s.slowN, s.slowConc, s.latency)
		r, err := doorsRow(ctx, s, filepath.Join(dir, "slow"), profile("slow"), slow, s.slowN, s.slowConc)
		if err != nil {
			return rows, err
		}
		slow.Close()
		r.note = appendNote(r.note, tl.summary(s.slowConc))
		r.name = fmt.Sprintf("hayloft, %s latency", s.latency)
		ideal := float64(s.slowConc) / s.latency.Seconds()
		r.note = appendNote(r.note, fmt.Sprintf("%.0f%% of ideal %.0f req/s", 100*r.rps()/ideal, ideal))
		r.checks = []check{{fmt.Sprintf(">= %.0f req/s (%.0f%% of ideal)", targetShareOfIdeal*ideal, 100*targetShareOfIdeal), r.rps() >= targetShareOfIdeal*ideal}}
		rows = append(rows, r)
	}

	if s.rows["niah"] {
		r, err := niahRow(ctx, s, filepath.Join(dir, "niah"), profile("niah"), log)
		if err != nil {
			return rows, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// doorsRow runs n generated samples against srv with conc allowed.
func doorsRow(ctx context.Context, s settings, dir, profile string, srv *openaitest.Server, n, conc int) (row, error) {
	cfg, err := doorsEval(dir, srv.BaseURL(), n, conc)
	if err != nil {
		return row{}, err
	}
	return kernelRow(ctx, job{hayloft: s.hayloft, dir: dir, config: cfg, samples: n, conc: conc, timeout: s.timeout, profile: profile}, srv)
}

func appendNote(note, more string) string {
	if note == "" || more == "" {
		return note + more
	}
	return note + "; " + more
}

// ceilingRow runs wrk against srv with the request the kernel sends for the
// first sample of the data set.
func ceilingRow(ctx context.Context, s settings, dir string, srv *openaitest.Server) (row, error) {
	ctxt, question, _ := sample(0)
	body, err := json.Marshal(map[string]any{
		"model":      "fake-model",
		"messages":   []map[string]string{{"role": "user", "content": ctxt + "\n\n" + question}},
		"max_tokens": 16,
	})
	if err != nil {
		return row{}, err
	}
	srv.ResetCounters()
	res, err := runWrk(ctx, s.wrk, dir, srv.URL+chatPath, body, runtime.NumCPU(), s.conc, s.wrkDuration)
	if err != nil {
		return row{}, err
	}
	settle(ctx, srv)
	// A rejected body would make the ceiling the speed of error answers.
	for status, n := range srv.Statuses() {
		if status != 200 && n > 0 {
			return row{}, fmt.Errorf("wrk: the server answered %d requests with status %d", n, status)
		}
	}
	r := row{
		name:        "wrk ceiling",
		conc:        s.conc,
		requests:    res.Requests,
		wall:        time.Duration(float64(res.Requests) / res.RPS * float64(time.Second)),
		maxInFlight: srv.MaxInFlight(),
		clientCPU:   res.CPU,
	}
	if res.RPS == 0 {
		r.wall = 0
	}
	if e := res.socketErrors(); e > 0 {
		r.note = fmt.Sprintf("%d socket errors (connect %d, read %d, write %d, timeout %d)", e, res.Connect, res.Read, res.Write, res.Timeout)
	}
	return r, nil
}

// settle waits until srv has stopped answering wrk. Requests wrk wrote
// before it exited can still sit in socket buffers, and the server answers
// them after wrk is gone; counted in the next measurement they would credit
// hayloft with requests it never sent.
func settle(ctx context.Context, srv *openaitest.Server) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	last, quiet := -1, 0
	for quiet < 3 {
		select {
		case <-ctx.Done():
			return
		case <-deadline:
			return
		case <-tick.C:
		}
		n := srv.Requests(chatPath)
		if n == last && srv.InFlight() == 0 {
			quiet++
		} else {
			quiet = 0
		}
		last = n
	}
}

// sample is the i-th sample of the generated data set: a short context with
// one fact, the question about it and its answer.
func sample(i int) (ctxt, question, answer string) {
	answer = fmt.Sprint(1000 + i)
	ctxt = fmt.Sprintf("The barn is red. The code for door %d is %s. The hay is dry.", i, answer)
	question = fmt.Sprintf("What is the code for door %d?", i)
	return ctxt, question, answer
}

// runResult is the part of `hayloft run --json` the benchmark reads.
type runResult struct {
	Evals []struct {
		Name    string `json:"name"`
		Samples int    `json:"samples"`
		Cached  int    `json:"cached"`
		Errors  int    `json:"errors"`
		Error   string `json:"error"`
	} `json:"evals"`
	OverheadUSPerSample float64 `json:"overhead_us_per_sample"`
}

// job is one `hayloft run` of the benchmark: a config in dir run on a
// fresh journal, so no answer comes from the cache.
type job struct {
	hayloft string
	dir     string
	config  string // the config file's text
	samples int    // how many samples the run must finish
	conc    int    // the model's max_concurrency, for the row
	timeout time.Duration
	// profile, when set, is a directory where hayloft and each of its
	// plugin processes write a CPU profile (HAYLOFT_PLUGIN_CPUPROFILE).
	profile string
	log     io.Writer // where the memory by process goes; nil: nowhere
}

// kernelRow runs j against srv as a user would: the CLI, plugin processes
// launched by the kernel, gRPC to each, HTTP to the server, the journal.
// It samples the peak memory of hayloft's process tree while it runs.
func kernelRow(ctx context.Context, j job, srv *openaitest.Server) (row, error) {
	if err := os.MkdirAll(j.dir, 0o755); err != nil {
		return row{}, err
	}
	cfgPath := filepath.Join(j.dir, "throughput.hcl")
	if err := os.WriteFile(cfgPath, []byte(j.config), 0o644); err != nil {
		return row{}, fmt.Errorf("write config: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, j.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.hayloft, "run", cfgPath, "--json", "--store", filepath.Join(j.dir, "journal.db"))
	cmd.Dir = j.dir
	if j.profile != "" {
		if err := os.MkdirAll(j.profile, 0o755); err != nil {
			return row{}, err
		}
		cmd.Env = append(os.Environ(), plugin.CPUProfileEnv+"="+j.profile)
	}
	// An interrupt lets hayloft stop its plugin processes; the kill after
	// WaitDelay is for a hayloft that does not.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	srv.ResetCounters()
	if j.profile != "" {
		// The fake server's own profile, beside the client's: it shares
		// the cores with them.
		stop, err := profileSelf(filepath.Join(j.profile, fmt.Sprintf("server-%d.pprof", os.Getpid())))
		if err != nil {
			return row{}, err
		}
		defer stop()
	}
	cpu0 := selfCPU()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return row{}, fmt.Errorf("%s run %s: %w", j.hayloft, cfgPath, err)
	}
	rss := watchRSS(cmd.Process.Pid, 20*time.Millisecond)
	err := cmd.Wait()
	wall := time.Since(start)
	serverCPU := selfCPU() - cpu0
	peak, procs := rss.finish()
	if j.log != nil && peak > 0 {
		fmt.Fprintf(j.log, "peak resident memory by process:\n%s", rss.breakdown())
	}
	if err != nil {
		return row{}, fmt.Errorf("%s run %s: %w\n%s", j.hayloft, cfgPath, err, tail(stderr.Bytes(), 2000))
	}
	var res runResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return row{}, fmt.Errorf("%s run --json: decode output: %w", j.hayloft, err)
	}
	if len(res.Evals) != 1 {
		return row{}, fmt.Errorf("%s run: want 1 eval row, got %d", j.hayloft, len(res.Evals))
	}
	ev := res.Evals[0]
	switch {
	case ev.Error != "":
		return row{}, fmt.Errorf("%s run: eval %q failed: %s", j.hayloft, ev.Name, ev.Error)
	case ev.Samples != j.samples:
		return row{}, fmt.Errorf("%s run: %d samples done, want %d (%d errors)\n%s", j.hayloft, ev.Samples, j.samples, ev.Errors, tail(stderr.Bytes(), 2000))
	case ev.Cached != 0:
		return row{}, fmt.Errorf("%s run: %d answers came from the cache of a fresh journal", j.hayloft, ev.Cached)
	}
	r := row{
		conc:        j.conc,
		requests:    srv.Requests(chatPath),
		wall:        wall,
		samples:     ev.Samples,
		overheadUS:  res.OverheadUSPerSample,
		maxInFlight: srv.MaxInFlight(),
		// On Unix the rusage of a waited-for process includes the children
		// it waited for: here the plugin processes.
		clientCPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
		peakRSS:   peak,
		processes: procs,
	}
	if cpu0 > 0 {
		r.serverCPU = serverCPU
	}
	if peak > 0 {
		anon, file := rss.split()
		r.note = appendNote(r.note, fmt.Sprintf("peak RSS of which anonymous %.0f MB, the binary's pages %.0f MB (mapped by each process)",
			float64(anon)/(1<<20), float64(file)/(1<<20)))
	}
	if first, last := srv.Span(chatPath); !first.IsZero() {
		r.before, r.after = first.Sub(start), start.Add(wall).Sub(last)
		r.note = appendNote(r.note, fmt.Sprintf("start %.3fs, serve %.3fs (%.0f req/s), end %.3fs",
			r.before.Seconds(), last.Sub(first).Seconds(), r.serveRPS(), r.after.Seconds()))
	}
	if b := r.busy(); b > 0 {
		// On a machine of few cores the client and the server take turns:
		// near 100% busy, every hop of a request waits for a core.
		r.note = appendNote(r.note, fmt.Sprintf("server cpu %.0f µs/req; cores %.0f%% busy (client + server cpu / wall × %d)",
			float64(r.serverCPU.Microseconds())/float64(max(r.requests, 1)), 100*b, runtime.NumCPU()))
	}
	if ev.Errors > 0 {
		r.note = fmt.Sprintf("%d sample errors", ev.Errors)
	}
	// A faultless server needs one request per sample; more means retries
	// or requests from elsewhere, and the req/s figure is not the kernel's.
	if r.requests != ev.Samples {
		r.note = appendNote(r.note, fmt.Sprintf("%d requests for %d samples", r.requests, ev.Samples))
	}
	return r, nil
}

// doorsEval writes n samples as jsonl into dir and returns a config that
// runs them through the openai model at baseURL and the contains scorer.
func doorsEval(dir, baseURL string, n, conc int) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var data bytes.Buffer
	enc := json.NewEncoder(&data)
	for i := range n {
		ctxt, q, a := sample(i)
		rec := map[string]any{"id": fmt.Sprintf("s%d", i), "context": ctxt, "question": q, "answers": []string{a}}
		if err := enc.Encode(rec); err != nil {
			return "", err
		}
	}
	dataPath := filepath.Join(dir, "data.jsonl")
	if err := os.WriteFile(dataPath, data.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("write data set: %w", err)
	}
	return fmt.Sprintf(`model "openai" "fake" {
  base_url        = %q
  model           = "fake-model"
  max_concurrency = %d
  max_tokens      = 16
}

task "jsonl" "doors" {
  path = %q
}

eval "doors" {
  task    = task.jsonl.doors
  models  = [model.openai.fake]
  scorers = ["contains"]
}
`, baseURL, conc, dataPath), nil
}

// buildHayloft builds ./cmd/hayloft of the module in the working directory
// into dir.
func buildHayloft(ctx context.Context, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "hayloft")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/hayloft/hayloft/cmd/hayloft")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build hayloft (run from inside the hayloft module, or pass -hayloft): %w\n%s", err, out)
	}
	return bin, nil
}

// profileSelf writes a CPU profile of this process to path until stop.
func profileSelf(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("profile the server: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// printTable writes the rows, each with its targets and whether it met
// them, so one command shows the gap.
func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measurement\tconc\trequests\twall\treq/s\tsamples/s\tmax in flight\toverhead µs/sample\tclient cpu µs/req\tpeak RSS MB\ttarget\tresult\tnote")
	for _, r := range rows {
		target, result := "-", "-"
		if len(r.checks) > 0 {
			var ts, failed []string
			for _, c := range r.checks {
				ts = append(ts, c.target)
				if !c.ok {
					failed = append(failed, c.target)
				}
			}
			target, result = strings.Join(ts, ", "), "pass"
			if len(failed) > 0 {
				result = "FAIL: " + strings.Join(failed, ", ")
			}
		}
		if r.requests == 0 && r.wall == 0 {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\t-\t-\t-\t-\t-\t%s\t%s\t%s\n", r.name, r.conc, target, result, r.note)
			continue
		}
		samples, overhead := "-", "-"
		if r.samples > 0 {
			samples = fmt.Sprintf("%.0f", r.samplesPerSec())
			overhead = fmt.Sprintf("%.0f", r.overheadUS)
		}
		cpu := "-"
		if c := r.cpuPerReqUS(); c > 0 {
			cpu = fmt.Sprintf("%.0f", c)
		}
		rss := "-"
		if r.peakRSS > 0 {
			rss = fmt.Sprintf("%.0f (%d procs)", float64(r.peakRSS)/(1<<20), r.processes)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2fs\t%.0f\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.name, r.conc, r.requests, r.wall.Seconds(), r.rps(), samples, r.maxInFlight, overhead, cpu, rss, target, result, r.note)
	}
	tw.Flush()
}
