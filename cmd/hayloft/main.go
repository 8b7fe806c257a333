// Command hayloft is the evaluation kernel's command line: it runs configs,
// validates them, lists plugins, scores JSONL, counts tokens, and — re-executed
// as `hayloft plugin start <kind> <name>` — serves its own built-in components
// as out-of-process plugins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hayloft/hayloft/sdk/gctune"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

const usage = `hayloft — a plugin-based evaluation kernel for long-context LLMs

Usage:
  hayloft run CONFIG [--json] [--store PATH] [--limit N] [--eval NAME] [--shard I/N]
  hayloft status CONFIG [--store PATH]
  hayloft merge A.db B.db ... -o ALL.db
  hayloft validate CONFIG
  hayloft plugins [CONFIG]
  hayloft gen CONFIG [--eval NAME] [--limit N]
  hayloft plan CONFIG [--eval NAME] [--limit N] [--prefill-tps N] [--decode-tps N] [--json]
  hayloft score --scorer NAME [--option key=value ...] [--aggregate]
  hayloft plugins [CONFIG] KIND NAME
  hayloft tokens [--encoding NAME] [--count] [--allowed-special all|TOKEN,…]
  hayloft transform CONFIG --model REF --in DATA --out OUT [--variant fiction_t|fiction_r]
  hayloft report [--run ID] [--eval NAME] -o report.html
  hayloft view [--addr 127.0.0.1:8080]
  hayloft compare RUN_A RUN_B | [--run ID] --models A,B | --retrievers X,Y  [--json] [--html FILE]
  hayloft export --format csv|jsonl [--run ID] [--eval NAME] [-o FILE]
  hayloft version

Run 'hayloft help COMMAND' (or 'hayloft COMMAND -h') for what a command does
and its flags, 'hayloft plugins KIND NAME' for a component's options.
`

// exitError carries a process exit code through the command functions.
type exitError struct {
	code int
	err  error
	// printed: the message is already on stderr (the flag package prints
	// its own parse errors with the command's usage).
	printed bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	// Every hayloft process, plugin processes included (they are this
	// binary): long contexts in flight are most of their heap.
	gctune.Start()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal stops the run cleanly; a second one, should the
		// clean stop take too long, kills at once. Finished work is
		// journaled either way, and plugins exit when their parent dies.
		<-ctx.Done()
		stop()
	}()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err == nil {
		return
	}
	if errors.Is(err, flag.ErrHelp) {
		return // -h asked for the usage, which the flag package printed
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if ee == nil || !ee.printed {
		fmt.Fprintln(os.Stderr, "hayloft:", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{code: 2, err: errors.New("no command")}
	}
	env := &cliEnv{stdin: stdin, stdout: stdout, stderr: stderr}
	return env.dispatch(ctx, args[0], args[1:])
}

func (env *cliEnv) dispatch(ctx context.Context, cmd string, rest []string) error {
	stdout, stderr := env.stdout, env.stderr
	if f := journalCommands[cmd]; f != nil {
		return f(env, ctx, rest)
	}
	switch cmd {
	case "run":
		return env.cmdRun(ctx, rest)
	case "status":
		return env.cmdStatus(ctx, rest)
	case "merge":
		return env.cmdMerge(ctx, rest)
	case "validate":
		return env.cmdValidate(ctx, rest)
	case "plugins":
		return env.cmdPlugins(ctx, rest)
	case "plugin":
		return env.cmdPlugin(ctx, rest)
	case "gen":
		return env.cmdGen(ctx, rest)
	case "plan":
		return env.cmdPlan(ctx, rest)
	case "score":
		return env.cmdScore(ctx, rest)
	case "tokens":
		return env.cmdTokens(ctx, rest)
	case "transform":
		return env.cmdTransform(ctx, rest)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "hayloft", version)
		return nil
	case "help", "-h", "--help":
		return env.cmdHelp(ctx, rest)
	default:
		fmt.Fprint(stderr, usage)
		return &exitError{code: 2, err: fmt.Errorf("unknown command %q", cmd)}
	}
}

type cliEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// parseInterspersed lets flags follow positional arguments
// (`hayloft run CONFIG --json`), which the flag package alone does not.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &exitError{code: 2, err: err, printed: true}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// multiFlag collects a repeated string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return fmt.Sprint(*m) }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
