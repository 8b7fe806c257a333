package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/term"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/pluginhost"
	"github.com/hayloft/hayloft/kernel/report"
	"github.com/hayloft/hayloft/kernel/runner"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/plugins/builtin"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/gctune"
)

// commonFlags are the settings flags every config-reading command takes; they
// override the config file and HAYLOFT_* variables (koanf layering).
type commonFlags struct {
	store, logLevel, pluginDir string
	inProcess                  bool
	// checkOnly: configure components without provisioning them.
	checkOnly bool
	// shards: --shards, which only run registers (shardFlags).
	shards int
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.store, "store", "", "journal file (default .hayloft/hayloft.db; env HAYLOFT_STORE)")
	fs.StringVar(&c.logLevel, "log-level", "", "trace, debug, info, warn, error (env HAYLOFT_LOG_LEVEL)")
	fs.StringVar(&c.pluginDir, "plugin-dir", "", "directory of external plugin binaries (env HAYLOFT_PLUGIN_DIR)")
	fs.BoolVar(&c.inProcess, "in-process", false, "run built-in components inside this process (debugging only)")
}

func (c *commonFlags) overrides() map[string]any {
	m := map[string]any{}
	if c.store != "" {
		m["store"] = c.store
	}
	if c.logLevel != "" {
		m["log_level"] = c.logLevel
	}
	if c.pluginDir != "" {
		m["plugin_dir"] = c.pluginDir
	}
	if c.shards != 0 {
		m["shards"] = c.shards
	}
	return m
}

// evalFlags are the flags of commands that run evals: the settings, and
// which evals and how many samples.
type evalFlags struct {
	commonFlags
	limit int
	evals multiFlag
}

// openEvalSession parses an eval command's flags and its one CONFIG
// argument, opens the session, and checks the --eval names.
func (e *cliEnv) openEvalSession(fs *flag.FlagSet, ef *evalFlags, args []string, usage string) (*session, error) {
	fs.SetOutput(e.stderr)
	ef.register(fs)
	fs.IntVar(&ef.limit, "limit", 0, "at most N samples per eval")
	fs.Var(&ef.evals, "eval", "only this eval (repeatable)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != 1 {
		return nil, &exitError{code: 2, err: errors.New(usage)}
	}
	if ef.limit < 0 {
		return nil, &exitError{code: 2, err: fmt.Errorf("--limit %d: must not be negative", ef.limit)}
	}
	s, err := e.openSession(pos[0], &ef.commonFlags)
	if err != nil {
		return nil, err
	}
	if err := checkEvals(s.cfg, ef.evals); err != nil {
		s.host.Close()
		return nil, &exitError{code: 2, err: err}
	}
	return s, nil
}

// session is what a config-reading command sets up: the config, a logger and
// a plugin host that knows the config's external plugins.
type session struct {
	cfg  *config.Config
	log  hclog.Logger
	host *pluginhost.Host
}

func (e *cliEnv) openSession(path string, cf *commonFlags) (*session, error) {
	cfg, err := config.Load(path, config.LoadOptions{Env: os.Environ(), Flags: cf.overrides()})
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	return e.sessionOf(cfg, cf)
}

// sessionOf is openSession for a config already loaded.
func (e *cliEnv) sessionOf(cfg *config.Config, cf *commonFlags) (*session, error) {
	log := hclog.New(&hclog.LoggerOptions{
		Name:   "hayloft",
		Level:  hclog.LevelFromString(cfg.Settings.LogLevel),
		Output: e.stderr,
	})
	host, err := newHost(cfg.Settings.PluginDir, log, cf.inProcess, cf.checkOnly)
	if err != nil {
		return nil, err
	}
	for _, p := range cfg.Plugins {
		if err := host.AddPlugin(pluginhost.Spec{Name: p.Name, Source: p.Source, SHA256: p.SHA256}); err != nil {
			host.Close()
			return nil, fmt.Errorf("%s: %w", p.Range, err)
		}
	}
	// Describing every plugin up front checks that each binary exists, is
	// executable, matches its sha256 and speaks our protocol, before any
	// eval starts rather than halfway through a run.
	if _, err := host.Describe(context.Background()); err != nil {
		host.Close()
		return nil, &exitError{code: 2, err: pluginPositions(cfg, err)}
	}
	return &session{cfg: cfg, log: log, host: host}, nil
}

func newHost(pluginDir string, log hclog.Logger, inProcess, checkOnly bool) (*pluginhost.Host, error) {
	return pluginhost.New(pluginhost.Options{Logger: log, PluginDir: pluginDir, Builtin: builtin.Set(version),
		InProcess: inProcess, CheckOnly: checkOnly})
}

// runHeapFloor is the heap a run's kernel may reach before it is collected
// (gctune.GoalFloor). At 32 MB the zero-latency row of bench/throughput
// collected the kernel 11 times instead of 27, its collections' CPU 130 ms
// instead of 380 ms (GODEBUG=gctrace=1), for 10 MB more resident memory;
// 64 MB saved 40 ms more for 40 MB more. The NIAH row's kernel, whose
// live heap is above it, is unchanged.
const runHeapFloor = 32 << 20

func (e *cliEnv) cmdRun(ctx context.Context, args []string) error {
	fs := e.newFlagSet("run")
	var ef evalFlags
	asJSON := fs.Bool("json", false, "print the result as one JSON document on stdout")
	var sf shardFlags
	sf.register(fs, &ef.commonFlags)
	s, err := e.openEvalSession(fs, &ef, args, "usage: hayloft run CONFIG [--json] [--limit N] [--eval NAME]")
	if err != nil {
		return err
	}
	defer s.host.Close()
	gctune.SetGoalFloor(runHeapFloor)
	stopProfile, err := startKernelProfile("run")
	if err != nil {
		return err
	}
	defer stopProfile()
	sh, err := sf.resolve(os.Getenv, s.cfg.Settings.Shards)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if sh.Sharded() {
		fmt.Fprintf(e.stderr, "hayloft: shard %s (from %s): this run takes only its shard's samples; `hayloft status %s` shows every shard\n", sh, sh.Source, s.cfg.Path)
	}
	if len(s.cfg.Evals) == 0 {
		return &exitError{code: 2, err: fmt.Errorf("%s has no eval block: nothing to run", s.cfg.Path)}
	}
	if err := e.precheck(ctx, s.cfg, ef.commonFlags, ef.evals); err != nil {
		return err
	}
	opts := runner.Options{Opener: s.host, Logger: s.log, Version: version, Limit: ef.limit, Evals: ef.evals}
	opts.Shard = sh
	// The first eval's plugin processes start while the journal opens.
	pre := runner.Prefetch(ctx, opts, s.cfg)
	st, err := openJournal(ctx, s.cfg.Settings, s.log)
	if err != nil {
		pre.Close()
		return err
	}
	defer closeJournal(e.stderr, st)
	// Retrievers keep their embedding cache in the journal, through the
	// host: plugins never open it themselves.
	s.host.UseEmbeddingCache(st)
	opts.Store, opts.Prefetched = st, pre

	if f, ok := e.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		opts.Progress = f
	}
	res, runErr := runner.New(opts).Run(ctx, s.cfg)
	summarized := false // the summary, FAILED lines included, is on stdout
	if res != nil {
		// The report reads what the run journaled, as `hayloft report`
		// would later; an interrupted run's finished rows are there too.
		rep, err := report.Load(context.WithoutCancel(ctx), st, res.RunID)
		switch {
		case err != nil && runErr == nil:
			return err
		case err != nil:
			fmt.Fprintf(e.stderr, "hayloft: %v\n", err)
		case *asJSON:
			if err := report.WriteJSON(e.stdout, rep); err != nil {
				return err
			}
		default:
			if summarized = hasRows(res); summarized {
				report.WriteSummaryWidth(e.stdout, rep, e.width())
			}
		}
	}
	if sh.Sharded() && runErr == nil {
		// Say how far the whole job is, so the last shard to end tells
		// that the result over all of them can be had.
		if v, err := loadShards(ctx, st, s.cfg); err == nil {
			fmt.Fprintf(e.stderr, "hayloft: shard %s finished; %s\n", sh, v.summary(s.cfg.Path))
		}
	}
	switch {
	case runErr != nil && ctx.Err() != nil:
		fmt.Fprintf(e.stderr, "hayloft: interrupted; finished samples are journaled in %s — run the same command again to resume\n", st.Path())
		return &exitError{code: 130, err: runErr}
	case runErr != nil:
		return runErr
	case res.Failed():
		return &exitError{code: 1, err: failedEvals(res, summarized)}
	}
	return nil
}

// hasRows reports whether a summary would show anything: an eval that
// scored or replayed a sample. When every eval failed before its first
// sample, the error alone says it.
func hasRows(res *runner.Result) bool {
	for _, ev := range res.Evals {
		if ev.Samples > 0 || ev.Cached > 0 {
			return true
		}
	}
	return false
}

// failedEvals is the final error of a run with failed evals, saying each
// message once: after a printed summary, whose FAILED lines carry the
// messages, only how many failed; otherwise each distinct message once,
// with the evals it ended.
func failedEvals(res *runner.Result, summarized bool) error {
	var order []string
	byMsg := map[string][]string{}
	failed := 0
	for _, ev := range res.Evals {
		if ev.Error == "" {
			continue
		}
		failed++
		if byMsg[ev.Error] == nil {
			order = append(order, ev.Error)
		}
		byMsg[ev.Error] = append(byMsg[ev.Error], fmt.Sprintf("eval %q (%s)", ev.Name, ev.Model))
	}
	if summarized {
		return fmt.Errorf("%d of %d evals failed (see the FAILED lines above)", failed, len(res.Evals))
	}
	msgs := make([]string, len(order))
	for i, m := range order {
		msgs[i] = strings.Join(byMsg[m], ", ") + ": " + m
	}
	return errors.New(strings.Join(msgs, "\n"))
}

func checkEvals(cfg *config.Config, names []string) error {
	have := make([]string, len(cfg.Evals))
	for i, ev := range cfg.Evals {
		have[i] = ev.Name
	}
	for _, n := range names {
		found := false
		for _, h := range have {
			found = found || h == n
		}
		if !found {
			msg := fmt.Sprintf("--eval %q: no such eval in %s", n, cfg.Path)
			if s := config.Suggest(n, have); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			return errors.New(msg)
		}
	}
	return nil
}

func (e *cliEnv) cmdValidate(ctx context.Context, args []string) error {
	fs := e.newFlagSet("validate")
	var cf commonFlags
	cf.register(fs)
	deep := fs.Bool("deep", false, "also provision every component and run its own checks: starts local servers, contacts model servers")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &exitError{code: 2, err: errors.New("usage: hayloft validate CONFIG")}
	}
	cf.checkOnly = !*deep
	s, err := e.openSession(pos[0], &cf)
	if err != nil {
		return err
	}
	defer s.host.Close()
	// Each component decodes its own options strictly, so the only complete
	// check is to configure every one; its errors point at the config line.
	if err := checkComponents(ctx, s.host, configComponents(s.cfg), cf.checkOnly); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s: %d components, %d evals: ok\n", s.cfg.Path, len(s.cfg.Components), len(s.cfg.Evals))
	return nil
}

// configComponents is every component a run of cfg would open: the blocks,
// then the scorers evals name by a bare string ("niah"), which have no
// block, each once.
func configComponents(cfg *config.Config) []*config.Component {
	out := slices.Clone(cfg.Components)
	for _, ev := range cfg.Evals {
		for _, sc := range ev.Scorers {
			if !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
	}
	return out
}

func validateComponent(ctx context.Context, host *pluginhost.Host, c *config.Component, checkOnly bool) error {
	v, err := host.Open(ctx, c.Kind, c.Type, c.Plugin, c.OpenOptions())
	if err != nil {
		return c.Diag(err)
	}
	defer closeIfCloser(v)
	if val, ok := v.(sdk.Validator); ok && !checkOnly {
		if err := val.Validate(ctx); err != nil && !errors.Is(err, sdk.ErrUnsupported) {
			return c.Diag(err)
		}
	}
	return nil
}

func closeIfCloser(v any) {
	if c, ok := v.(interface{ Close() error }); ok {
		c.Close()
	}
}

func (e *cliEnv) cmdGen(ctx context.Context, args []string) error {
	fs := e.newFlagSet("gen")
	var ef evalFlags
	s, err := e.openEvalSession(fs, &ef, args, "usage: hayloft gen CONFIG [--eval NAME] [--limit N]")
	if err != nil {
		return err
	}
	defer s.host.Close()
	out := bufio.NewWriterSize(e.stdout, 1<<20)
	defer out.Flush()
	return runner.New(runner.Options{Opener: s.host, Logger: s.log, Limit: ef.limit, Evals: ef.evals}).Gen(ctx, s.cfg, out)
}

// pluginPositions prefixes each line of a plugin error with the position of
// the config block that declared the plugin.
func pluginPositions(cfg *config.Config, err error) error {
	lines := strings.Split(err.Error(), "\n")
	for i, line := range lines {
		for _, p := range cfg.Plugins {
			if strings.Contains(line, fmt.Sprintf("plugin %q", p.Name)) {
				lines[i] = fmt.Sprintf("%s:%d:%d: %s", p.Range.Filename, p.Range.Start.Line, p.Range.Start.Column, line)
				break
			}
		}
	}
	return errors.New(strings.Join(lines, "\n"))
}

// openJournal opens the settings' journal with their journal_sync: every
// command that journals responses or results counts them the same way.
// What the journal recovers from (a dead process's damaged log) is said
// through log, the command's own (nil: hclog's default, on stderr).
func openJournal(ctx context.Context, set config.Settings, log hclog.Logger) (*store.Store, error) {
	return store.OpenWith(ctx, set.Store, store.Options{Sync: store.Sync(set.JournalSync), Logger: log})
}

// closeJournal closes a run's journal and says on w when that failed. What
// the run journaled is kept either way (in the database, or in the log the
// next open feeds, as the error says), but a journal that did not close
// cleanly should not pass unnoticed.
func closeJournal(w io.Writer, st *store.Store) {
	if err := st.Close(); err != nil {
		fmt.Fprintf(w, "hayloft: warning: %v\n", err)
	}
}
