// Package bridge is the "bridge" model: an "openai" model that owns its
// server. It starts the command (vLLM, llama-server, SGLang, …) on a free
// loopback port in a process group of its own, streams the server's output
// through go-hclog, waits until the server answers, and then talks to it
// with the openai client. If the server dies during a run it is restarted
// once; a second death fails the run with the server's last words. Close
// stops the whole process group: SIGTERM, then SIGKILL after a grace
// period. A bridge never leaves a server running.
package bridge

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hayloft/hayloft/plugins/models/openai"
	"github.com/hayloft/hayloft/sdk"
)

// Name is the model's registered name.
const Name = "bridge"

// tailLines is how much of the server's output an error quotes.
const tailLines = 30

// Model is the "bridge" model. Safe for concurrent use.
type Model struct {
	s   *settings
	log hclog.Logger

	mu       sync.Mutex
	cur      *server
	restarts int
	failed   error // set when the bridge gave up; every later call returns it
	closed   bool
}

var (
	_ sdk.Model       = (*Model)(nil)
	_ sdk.Tokenizer   = (*Model)(nil)
	_ sdk.Provisioner = (*Model)(nil)
	_ sdk.Validator   = (*Model)(nil)
	_ io.Closer       = (*Model)(nil)
)

// New is the sdk.ModelFactory of "bridge". The server's output goes to
// hclog's default logger, named after the command.
func New(ctx context.Context, opts sdk.Options) (sdk.Model, error) {
	return NewWithLogger(ctx, opts, nil)
}

// NewWithLogger is New with the logger the server's output goes to; nil
// means hclog's default. The logger is named after the command.
func NewWithLogger(ctx context.Context, opts sdk.Options, log hclog.Logger) (*Model, error) {
	s, err := parseOptions(opts)
	if err != nil {
		return nil, err
	}
	// Check the openai options now, so a typo fails before a server is
	// started for minutes.
	if _, err := openai.NewClient(ctx, s.clientOptions("http://127.0.0.1:1/v1")); err != nil {
		return nil, err
	}
	if log == nil {
		log = hclog.Default()
	}
	return &Model{s: s, log: log.Named(filepath.Base(s.command[0]))}, nil
}

// Provision starts the server and waits until it is ready.
func (m *Model) Provision(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur != nil {
		return nil
	}
	if m.closed {
		return errors.New("bridge: provision after close")
	}
	srv, err := m.start(ctx)
	if err != nil {
		return err
	}
	m.cur = srv
	return nil
}

// Generate delegates to the server, restarting it once if it died.
func (m *Model) Generate(ctx context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	var resp *sdk.GenerateResponse
	err := m.with(ctx, func(ctx context.Context, c *openai.Client) error {
		var err error
		resp, err = c.Generate(ctx, req)
		return err
	})
	return resp, err
}

// Tokenize delegates to the server's /tokenize (see openai.Client.Tokenize).
func (m *Model) Tokenize(ctx context.Context, req *sdk.TokenizeRequest) (*sdk.TokenizeResponse, error) {
	var resp *sdk.TokenizeResponse
	err := m.with(ctx, func(ctx context.Context, c *openai.Client) error {
		var err error
		resp, err = c.Tokenize(ctx, req)
		return err
	})
	return resp, err
}

// Validate checks that the server serves the configured model.
func (m *Model) Validate(ctx context.Context) error {
	return m.with(ctx, func(ctx context.Context, c *openai.Client) error { return c.Validate(ctx) })
}

// with runs fn against the live server. A call cut short because the server
// died is run once more against its replacement.
func (m *Model) with(ctx context.Context, fn func(ctx context.Context, c *openai.Client) error) error {
	srv, err := m.current()
	if err != nil {
		return err
	}
	if srv.dead() {
		if srv, err = m.restart(ctx, srv); err != nil {
			return err
		}
	}
	err = srv.call(ctx, fn)
	if err == nil || !srv.dead() || ctx.Err() != nil {
		return err
	}
	if srv, err = m.restart(ctx, srv); err != nil {
		return err
	}
	return srv.call(ctx, fn)
}

func (m *Model) current() (*server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.failed != nil:
		return nil, m.failed
	case m.closed:
		return nil, errors.New("bridge: model is closed")
	case m.cur == nil:
		return nil, errors.New("bridge: model used before Provision")
	}
	return m.cur, nil
}

// restart replaces the dead server, once per model. Concurrent callers that
// saw the same death share one restart.
func (m *Model) restart(ctx context.Context, dead *server) (*server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failed != nil {
		return nil, m.failed
	}
	if m.closed {
		return nil, errors.New("bridge: model is closed")
	}
	if m.cur != dead {
		return m.cur, nil
	}
	dead.stop(m.s.stopGrace) // its children may outlive it
	if m.restarts >= 1 {
		m.failed = fmt.Errorf("bridge: %s died again after a restart (%s); giving up%s", m.name(), dead.exitStatus(), dead.logs.quote())
		return nil, m.failed
	}
	m.restarts++
	m.log.Warn("server died; restarting it once", "exit", dead.exitStatus())
	srv, err := m.start(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.failed = fmt.Errorf("bridge: restart after the server died (%s): %w", dead.exitStatus(), err)
		}
		return nil, err
	}
	m.cur = srv
	return srv, nil
}

// Close stops the server and its process group.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	if m.cur != nil {
		m.cur.stop(m.s.stopGrace)
	}
	return nil
}

func (m *Model) name() string { return filepath.Base(m.s.command[0]) }

// server is one run of the command.
type server struct {
	cmd    *exec.Cmd
	client *openai.Client
	logs   *tail
	pumps  sync.WaitGroup

	ctx     context.Context // done when the process has exited
	exited  chan struct{}
	exitErr error // valid once exited is closed
}

func (s *server) dead() bool { return s.ctx.Err() != nil }

func (s *server) exitStatus() string {
	select {
	case <-s.exited:
		if s.exitErr == nil {
			return "exit status 0"
		}
		return s.exitErr.Error()
	default:
		return "still running"
	}
}

// call runs fn with a context that also ends when the process exits, so a
// dead server fails requests at once instead of after every retry.
func (s *server) call(ctx context.Context, fn func(ctx context.Context, c *openai.Client) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	return fn(ctx, s.client)
}

// start runs the command on a free port and waits for it to be ready.
func (m *Model) start(ctx context.Context) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("bridge: pick a port: %w", err)
	}
	args := make([]string, len(m.s.command))
	for i, a := range m.s.command {
		args[i] = strings.ReplaceAll(a, "{port}", strconv.Itoa(port))
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), m.s.env...)
	ownGroup(cmd)
	// Plain pipes rather than cmd.StdoutPipe: Wait must report the exit as
	// soon as the server exits, even if a child it left still holds them.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("bridge: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	srv := &server{cmd: cmd, logs: &tail{}, exited: make(chan struct{})}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("bridge: start %s: %w", args[0], err)
	}
	m.log.Info("server starting", "command", strings.Join(args, " "), "pid", cmd.Process.Pid)
	srv.pumps.Add(2)
	go srv.pump(outR, m.log, "stdout")
	go srv.pump(errR, m.log, "stderr")
	pctx, pcancel := context.WithCancel(context.Background())
	srv.ctx = pctx
	go func() {
		srv.exitErr = cmd.Wait()
		close(srv.exited)
		pcancel()
	}()

	root := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := m.waitReady(ctx, srv, root); err != nil {
		srv.stop(m.s.stopGrace)
		return nil, err
	}
	c, err := openai.NewClient(ctx, m.s.clientOptions(root+"/v1"))
	if err == nil {
		err = c.Provision(ctx)
	}
	if err != nil {
		srv.stop(m.s.stopGrace)
		return nil, fmt.Errorf("bridge: %w", err)
	}
	srv.client = c
	m.log.Info("server ready", "url", root+"/v1", "model", c.Model())
	return srv, nil
}

// waitReady polls the health paths until one answers 200, the process
// exits, ready_timeout passes or ctx ends.
func (m *Model) waitReady(ctx context.Context, srv *server, root string) error {
	deadline := time.NewTimer(m.s.readyTimeout)
	defer deadline.Stop()
	poll := &http.Client{Timeout: 2 * time.Second}
	delay := 50 * time.Millisecond
	for {
		for _, p := range m.s.healthPaths {
			req, err := http.NewRequestWithContext(ctx, "GET", root+p, nil)
			if err != nil {
				return fmt.Errorf("bridge: health check %s: %w", p, err)
			}
			if resp, err := poll.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		}
		select {
		case <-srv.exited:
			srv.pumps.Wait() // the last lines explain the exit
			return fmt.Errorf("bridge: %s exited before it was ready (%s)%s", m.name(), srv.exitStatus(), srv.logs.quote())
		case <-deadline.C:
			return fmt.Errorf("bridge: %s not ready within ready_timeout %s (polled %s on %s)%s",
				m.name(), m.s.readyTimeout, strings.Join(m.s.healthPaths, ", "), root, srv.logs.quote())
		case <-ctx.Done():
			return fmt.Errorf("bridge: waiting for %s: %w", m.name(), ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// stop ends the process group: SIGTERM, then SIGKILL to whatever is left
// after grace (the server, or children it left behind). It is safe to call
// more than once and on a server that already exited.
func (s *server) stop(grace time.Duration) {
	if s.client != nil {
		s.client.Close()
	}
	finished := func() bool {
		select {
		case <-s.exited:
			return !groupAlive(s.cmd)
		default:
			return false
		}
	}
	if !finished() {
		signalGroup(s.cmd, false)
		deadline := time.Now().Add(grace)
		for !finished() && time.Now().Before(deadline) {
			select {
			case <-s.exited:
				// The leader obeyed; give the rest of the group the
				// remaining grace too.
				time.Sleep(20 * time.Millisecond)
			case <-time.After(time.Until(deadline)):
			}
		}
		if !finished() {
			signalGroup(s.cmd, true)
		}
		<-s.exited
	}
	// Output pumps end when the last holder of the pipes is gone; do not
	// hang on a descendant that escaped the group.
	done := make(chan struct{})
	go func() { s.pumps.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}

// pump logs each line of r and keeps the last ones for error messages.
func (s *server) pump(r io.ReadCloser, log hclog.Logger, stream string) {
	defer s.pumps.Done()
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		s.logs.add(line)
		log.Info(line, "stream", stream)
	}
	// A line over 1 MiB stops the scanner; drain the rest so the server
	// never blocks writing to a full pipe.
	io.Copy(io.Discard, r)
}

// tail keeps the last lines of output.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == tailLines {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:tailLines-1]
	}
	t.lines = append(t.lines, line)
}

// quote formats the lines for the end of an error message.
func (t *tail) quote() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return "; it printed nothing"
	}
	return "; its last output:\n  " + strings.Join(t.lines, "\n  ")
}

// freePort asks the kernel for an unused loopback port. Another process
// could take it before the server binds; the server then fails to start,
// which the readiness wait reports.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
