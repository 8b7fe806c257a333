package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/hayloft/hayloft/kernel/pluginhost"
	"github.com/hayloft/hayloft/kernel/runner"
	"github.com/hayloft/hayloft/kernel/scoreio"
	"github.com/hayloft/hayloft/plugins/builtin"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
	"github.com/hayloft/hayloft/sdk/tokenizer"
)

func (e *cliEnv) cmdPlugins(ctx context.Context, args []string) error {
	fs := e.newFlagSet("plugins")
	var cf commonFlags
	cf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	// KIND NAME at the end asks for one component's options.
	var describe []string
	if n := len(pos); n >= 2 && slices.Contains(sdk.Kinds, sdk.Kind(pos[n-2])) {
		describe, pos = pos[n-2:], pos[:n-2]
	}
	var s *session
	switch len(pos) {
	case 0:
		log := hclog.New(&hclog.LoggerOptions{Name: "hayloft", Level: hclog.Warn, Output: e.stderr})
		dir := cf.pluginDir
		if dir == "" {
			dir = os.Getenv("HAYLOFT_PLUGIN_DIR")
		}
		host, err := newHost(dir, log, cf.inProcess, false)
		if err != nil {
			return err
		}
		s = &session{host: host, log: log}
	case 1:
		if s, err = e.openSession(pos[0], &cf); err != nil {
			return err
		}
	default:
		return &exitError{code: 2, err: errors.New("usage: hayloft plugins [CONFIG] [KIND NAME]")}
	}
	defer s.host.Close()
	entries, err := s.host.Describe(ctx)
	if err != nil {
		return err
	}
	if describe != nil {
		return e.describeComponent(ctx, entries, sdk.Kind(describe[0]), describe[1], *asJSON)
	}
	// The judge scorer is the kernel's own: it needs a model, which only the
	// kernel brokers.
	entries = append(entries, pluginhost.ComponentEntry{Plugin: "kernel", Version: version, Protocol: "-", Kind: sdk.KindScorer, Name: runner.JudgeScorer})
	sort.SliceStable(entries, func(i, j int) bool {
		ki, kj := slices.Index(sdk.Kinds, entries[i].Kind), slices.Index(sdk.Kinds, entries[j].Kind)
		if ki != kj {
			return ki < kj
		}
		return entries[i].Name < entries[j].Name
	})
	if *asJSON {
		return json.NewEncoder(e.stdout).Encode(entries)
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tPLUGIN\tVERSION\tPROTOCOL")
	for _, en := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", en.Kind, en.Name, en.Plugin, en.Version, en.Protocol)
	}
	return tw.Flush()
}

// describeComponent prints one component's options, read from the struct
// the component decodes them into (sdk.Set.Describe).
func (e *cliEnv) describeComponent(ctx context.Context, entries []pluginhost.ComponentEntry, kind sdk.Kind, name string, asJSON bool) error {
	var names []string
	var entry *pluginhost.ComponentEntry
	for i, en := range entries {
		if en.Kind == kind {
			names = append(names, en.Name)
			if en.Name == name && entry == nil {
				entry = &entries[i]
			}
		}
	}
	if entry == nil {
		msg := fmt.Sprintf("no plugin serves %s %q", kind, name)
		if s := sdk.Suggest(name, names); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return &exitError{code: 2, err: errors.New(msg)}
	}
	out := struct {
		Kind      sdk.Kind         `json:"kind"`
		Name      string           `json:"name"`
		Plugin    string           `json:"plugin"`
		Described bool             `json:"described"`
		Options   []sdk.OptionInfo `json:"options"`
	}{Kind: kind, Name: name, Plugin: entry.Plugin}
	if entry.Plugin == builtin.Name {
		opts, ok, err := builtin.Set(version).Describe(ctx, kind, name)
		if err != nil {
			return err
		}
		out.Described, out.Options = ok, opts
	}
	if asJSON {
		return json.NewEncoder(e.stdout).Encode(out)
	}
	fmt.Fprintf(e.stdout, "%s %q (plugin %s)\n", kind, name, entry.Plugin)
	switch {
	case !out.Described && entry.Plugin != builtin.Name:
		fmt.Fprintln(e.stdout, "\nAn external plugin's options are not described yet: see its documentation.")
		return nil
	case !out.Described:
		fmt.Fprintln(e.stdout, "\nIts options could not be described: see its package documentation.")
		return nil
	case len(out.Options) == 0:
		fmt.Fprintln(e.stdout, "\nIt takes no options.")
		return nil
	}
	fmt.Fprintln(e.stdout, "\nOptions (type, and the default when the component sets one before reading the config):")
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tTYPE\tDEFAULT")
	for _, o := range out.Options {
		def := "-"
		if o.Default != nil {
			b, _ := json.Marshal(o.Default)
			def = string(b)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", o.Name, o.Type, def)
	}
	return tw.Flush()
}

// cmdPlugin is how the kernel runs its own built-ins out of process: it
// re-executes this binary as `hayloft plugin start <kind> <name>`.
func (e *cliEnv) cmdPlugin(_ context.Context, args []string) error {
	set := builtin.Set(version)
	switch {
	case len(args) == 1 && args[0] == "describe":
		return json.NewEncoder(e.stdout).Encode(plugin.Describe(set))
	case len(args) == 3 && args[0] == "start":
		return plugin.ServeComponent(set, sdk.Kind(args[1]), args[2])
	}
	return &exitError{code: 2, err: errors.New("usage: hayloft plugin describe | hayloft plugin start <kind> <name> (started by hayloft itself)")}
}

func (e *cliEnv) cmdScore(ctx context.Context, args []string) error {
	fs := e.newFlagSet("score")
	name := fs.String("scorer", "", "scorer name (e.g. exact, rougel, bleu, countingstars, wasm)")
	aggregate := fs.Bool("aggregate", false, "print one JSON object with the aggregate instead of per-line scores")
	onError := fs.String("on-error", scoreio.OnErrorStop, "a bad line: stop (end with its error) or skip (record it with its error and go on)")
	inProcess := fs.Bool("in-process", false, "run the scorer inside this process (debugging only)")
	pluginName := fs.String("plugin", "", "plugin that serves the scorer (default: resolve by name)")
	var options multiFlag
	fs.Var(&options, "option", "scorer option key=value (repeatable; values parse as JSON when they can)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := stdinOnly("score", pos, "hayloft score --scorer NAME < in.jsonl"); err != nil {
		return err
	}
	if *name == "" {
		return &exitError{code: 2, err: errors.New("usage: hayloft score --scorer NAME [--option key=value ...] [--aggregate] [--on-error stop|skip] < in.jsonl")}
	}
	if *onError != scoreio.OnErrorStop && *onError != scoreio.OnErrorSkip {
		return &exitError{code: 2, err: fmt.Errorf("--on-error %q: want stop or skip", *onError)}
	}
	opts, err := scoreio.ParseOptions(options)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	scoreGC()
	stopProfile, err := startKernelProfile("score")
	if err != nil {
		return err
	}
	defer stopProfile()
	log := hclog.New(&hclog.LoggerOptions{Name: "hayloft", Level: hclog.Warn, Output: e.stderr})
	host, err := newHost(os.Getenv("HAYLOFT_PLUGIN_DIR"), log, *inProcess, false)
	if err != nil {
		return err
	}
	defer host.Close()
	v, err := host.Open(ctx, sdk.KindScorer, *name, *pluginName, opts)
	if err != nil {
		return fmt.Errorf("scorer %q: %w", *name, err)
	}
	defer closeIfCloser(v)
	out := bufio.NewWriter(e.stdout)
	defer out.Flush()
	return scoreio.Score(ctx, v.(sdk.Scorer), e.stdin, out, scoreio.Options{Aggregate: *aggregate, OnError: *onError})
}

// scoreGC lets the garbage collector of `hayloft score` and of the plugin
// it starts run a quarter as often (GOGC=400; the plugin inherits the
// environment): both allocate per line and keep little, so collection was
// about a tenth of their CPU. A soft limit of 1 GiB keeps a large aggregate
// run (which holds every line's score) from growing to four times its live
// heap. Settings the user gave (GOGC, GOMEMLIMIT) are left alone.
func scoreGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
		os.Setenv("GOGC", "400")
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(1 << 30)
	}
}

func (e *cliEnv) cmdTokens(_ context.Context, args []string) error {
	fs := e.newFlagSet("tokens")
	encName := fs.String("encoding", "cl100k_base", "tiktoken encoding: "+strings.Join(tokenizer.Names(), ", "))
	countOnly := fs.Bool("count", false, "print the count alone")
	allowed := fs.String("allowed-special", "", `special tokens to encode as their ids: "all", or a comma-separated list such as "<|endoftext|>" (default none: special-token text is ordinary text)`)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := stdinOnly("tokens", pos, "hayloft tokens < text.txt"); err != nil {
		return err
	}
	if !slices.Contains(tokenizer.Names(), *encName) {
		_, err := tokenizer.Get(*encName) // the error names the known encodings
		return &exitError{code: 2, err: fmt.Errorf("--encoding: %w", err)}
	}
	b, err := io.ReadAll(e.stdin)
	if err != nil {
		return err
	}
	if !utf8.Valid(b) {
		return fmt.Errorf("stdin is not valid UTF-8 (first bad byte at offset %d)", sdk.FirstInvalidUTF8(b))
	}
	if len(b) == 0 && *allowed == "" {
		// Nothing to encode: answer without loading the encoder's tables,
		// the only slow part of this command.
		if *countOnly {
			_, err := fmt.Fprintln(e.stdout, 0)
			return err
		}
		return json.NewEncoder(e.stdout).Encode(map[string]any{"ids": []int{}, "count": 0})
	}
	enc, err := tokenizer.Get(*encName)
	if err != nil {
		return fmt.Errorf("--encoding: %w", err)
	}
	var specials []string
	switch *allowed {
	case "":
	case "all":
		specials = enc.Specials()
	default:
		specials = strings.Split(*allowed, ",")
	}
	if _, err := enc.EncodeAllowed("", specials); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--allowed-special: %w", err)}
	}
	if *countOnly && specials == nil {
		_, err := fmt.Fprintln(e.stdout, enc.Count(string(b)))
		return err
	}
	ids, err := enc.EncodeAllowed(string(b), specials)
	if err != nil {
		return err
	}
	if *countOnly {
		_, err := fmt.Fprintln(e.stdout, len(ids))
		return err
	}
	if ids == nil {
		ids = []int{}
	}
	return json.NewEncoder(e.stdout).Encode(map[string]any{"ids": ids, "count": len(ids)})
}

// stdinOnly refuses the arguments left after a command's flags when the
// command reads its input from standard input alone: a file named there
// was otherwise ignored, and the command scored or counted an empty input
// (or waited on a terminal) without a word.
func stdinOnly(cmd string, pos []string, example string) error {
	if len(pos) == 0 {
		return nil
	}
	return &exitError{code: 2, err: fmt.Errorf("hayloft %s: unexpected argument %q: the input is read from standard input (%s)", cmd, pos[0], example)}
}
