package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/hayloft/hayloft/kernel/report"
	"github.com/hayloft/hayloft/kernel/report/html"
	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/kernel/store"
)

// journalCommands read the journal only: they take no config, just the
// journal file (--store) and which run.
var journalCommands = map[string]func(*cliEnv, context.Context, []string) error{
	"report":  (*cliEnv).cmdReport,
	"view":    (*cliEnv).cmdView,
	"compare": (*cliEnv).cmdCompare,
	"export":  (*cliEnv).cmdExport,
}

// journalFlags are the flags of the journal commands.
type journalFlags struct {
	store string
	run   string
	evals multiFlag
	// index: load the run without its sample scores' details
	// (journal.LoadIndex), for commands that read them from the journal
	// as they need them, or not at all.
	index bool
	// scoreDetails: with index, keep the scores' details up to this many
	// bytes per eval (journal.LoadIndexDetails).
	scoreDetails int
	// loading, when set, is told the run's ID before the run is loaded,
	// to read what else it needs meanwhile.
	loading func(ctx context.Context, st *store.Store, runID string)
}

func (j *journalFlags) register(fs *flag.FlagSet, withRun bool) {
	fs.StringVar(&j.store, "store", "", "journal file (default $HAYLOFT_STORE, else .hayloft/hayloft.db)")
	if withRun {
		fs.StringVar(&j.run, "run", "", "run ID (default: the newest run)")
		fs.Var(&j.evals, "eval", "only this eval (repeatable; the config's name or the journal's eval/model/retriever)")
	}
}

// openJournal opens an existing journal: a report of a journal that is not
// there is a mistake in the path, not an empty report.
func (j *journalFlags) open(ctx context.Context) (*store.Store, error) {
	path := j.store
	if path == "" {
		path = os.Getenv("HAYLOFT_STORE")
	}
	if path == "" {
		path = ".hayloft/hayloft.db"
	}
	if _, err := os.Stat(path); err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("journal %s: %w (run a config first, or pass --store)", path, err)}
	}
	return store.Open(ctx, path)
}

// load reads the chosen run (the newest by default).
func (j *journalFlags) load(ctx context.Context, st *store.Store) (*journal.Run, error) {
	id := j.run
	if id == "" {
		var err error
		if id, err = journal.Latest(ctx, st); err != nil {
			return nil, err
		}
	}
	if j.loading != nil {
		j.loading(ctx, st, id)
	}
	if j.index && j.scoreDetails > 0 {
		return journal.LoadIndexDetails(ctx, st, id, j.evals, j.scoreDetails)
	}
	if j.index {
		return journal.LoadIndex(ctx, st, id, j.evals)
	}
	return journal.Load(ctx, st, id, j.evals)
}

// writeRun opens the journal, loads the chosen run and hands it to write
// with the output path opened.
func (e *cliEnv) writeRun(ctx context.Context, jf *journalFlags, out string, write func(io.Writer, *store.Store, *journal.Run) error) error {
	st, err := jf.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	run, err := jf.load(ctx, st)
	if err != nil {
		return err
	}
	w, done, err := e.createOutput(out)
	if err != nil {
		return err
	}
	if err := write(w, st, run); err != nil {
		done()
		return fmt.Errorf("run %s: %w", run.ID, err)
	}
	return done()
}

// width is the terminal's width when stdout is one, else the summary's
// default.
func (e *cliEnv) width() int {
	if f, ok := e.stdout.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w >= 40 {
			return w
		}
	}
	return report.DefaultWidth
}

// createOutput opens path for writing; "-" is stdout.
func (e *cliEnv) createOutput(path string) (io.Writer, func() error, error) {
	if path == "-" {
		return e.stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

func (e *cliEnv) cmdReport(ctx context.Context, args []string) error {
	fs := e.newFlagSet("report")
	jf := journalFlags{index: true, scoreDetails: html.ScoreDetailsBudget}
	jf.register(fs, true)
	out := fs.String("o", "", "write the report to this file (- for stdout)")
	maxChars := fs.Int("max-message-chars", 0, fmt.Sprintf("keep at most this many characters of each message sent, head and tail (default %d, less for large runs)", html.DefaultMaxMessageChars))
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *out == "" {
		fs.Usage()
		return &exitError{code: 2, err: errors.New("usage: hayloft report [--run ID] [--eval NAME] -o report.html"), printed: true}
	}
	stopProfile, err := startKernelProfile("report")
	if err != nil {
		return err
	}
	defer stopProfile()
	// The run's tries at its requests are read while its index loads.
	var attempts *html.Attempts
	jf.loading = func(ctx context.Context, st *store.Store, runID string) { attempts = html.ReadAttempts(ctx, st, runID) }
	var runID string
	err = e.writeRun(ctx, &jf, *out, func(w io.Writer, st *store.Store, run *journal.Run) error {
		runID = run.ID
		return html.Write(ctx, w, st, run, html.Options{MaxMessageChars: *maxChars, Attempts: attempts})
	})
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if *out != "-" {
		fmt.Fprintf(e.stderr, "hayloft: report of run %s written to %s\n", runID, *out)
	}
	return nil
}
