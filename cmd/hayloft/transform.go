package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hayloft/hayloft/kernel/runner"
	"github.com/hayloft/hayloft/plugins/tasks/xlbench"
)

// cmdTransform applies a model-driven data transform before a run, through
// any model block of the config:
//
//   - fiction_t (the default): XLBench's Fiction-T, the translation of the
//     fiction texts EN ↔ ZH; the output is XLBench data whose items record
//     the variant, which the xlbench task loads like any other file;
//   - fiction_r: a Fiction-R replacement table extracted by the model, for
//     the task's fiction_r option (review it before use).
//
// Every request goes through the kernel's journal and cache (runner.Asker),
// so running the same command again asks the model nothing.
func (e *cliEnv) cmdTransform(ctx context.Context, args []string) error {
	const use = "usage: hayloft transform CONFIG --model model.TYPE.NAME --in DATA.jsonl --out OUT [--variant fiction_t|fiction_r] [--from en --to zh] [--chunk-chars N]"
	fs := e.newFlagSet("transform")
	var cf commonFlags
	cf.register(fs)
	model := fs.String("model", "", "the model block that translates, e.g. model.openai.local")
	in := fs.String("in", "", "XLBench data file to translate")
	out := fs.String("out", "", "where to write the translated data (documents go beside it)")
	from := fs.String("from", "en", "language translated from (en or zh)")
	to := fs.String("to", "zh", "language translated to (zh or en)")
	variant := fs.String("variant", "fiction_t", "fiction_t (translate; --out is XLBench data) or fiction_r (extract a replacement table; --out is the table)")
	chunkChars := fs.Int("chunk-chars", 0, "largest piece of a document per request, in characters (default 2000 for fiction_t, 4000 for fiction_r)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *model == "" || *in == "" || *out == "" {
		return &exitError{code: 2, err: errors.New(use)}
	}
	if *chunkChars < 0 {
		return &exitError{code: 2, err: fmt.Errorf("--chunk-chars %d: must be positive", *chunkChars)}
	}
	if *variant != "fiction_t" && *variant != "fiction_r" {
		return &exitError{code: 2, err: fmt.Errorf("--variant %q: want fiction_t or fiction_r", *variant)}
	}
	s, err := e.openSession(pos[0], &cf)
	if err != nil {
		return err
	}
	defer s.host.Close()
	ds, err := xlbench.Load(*in, false)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	st, err := openJournal(ctx, s.cfg.Settings, s.log)
	if err != nil {
		return err
	}
	defer st.Close()
	asker, err := runner.New(runner.Options{Opener: s.host, Store: st, Logger: s.log, Version: version}).NewAsker(ctx, s.cfg, *model)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--model: %w", err)}
	}
	defer asker.Close()
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	if *variant == "fiction_r" {
		pairs, dropped, err := xlbench.ExtractTable(ctx, ds, xlbench.ExtractOptions{ChunkChars: *chunkChars}, asker.Ask)
		if err != nil {
			return err
		}
		if err := xlbench.WriteTable(pairs, *out); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s: %d replacements (%d entities without a usable replacement left out); %s: %d requests sent, %d answered from the journal (%s)\n",
			*out, len(pairs), dropped, asker.Model(), asker.Requests.Load(), asker.Cached.Load(), st.Path())
		return nil
	}
	opts := xlbench.TranslateOptions{From: *from, To: *to, ChunkChars: *chunkChars, Model: asker.Model()}
	translated, err := xlbench.Translate(ctx, ds, opts, asker.Ask)
	if err != nil {
		return err
	}
	if err := xlbench.WriteDataset(translated, *out); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s: %d questions written; %s: %d requests sent, %d answered from the journal (%s)\n",
		*out, len(translated.Items), opts.Variant(), asker.Requests.Load(), asker.Cached.Load(), st.Path())
	return nil
}
