package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/hayloft/hayloft/kernel/report/compare"
	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/sdk/stats"
)

const compareUsage = `usage: hayloft compare RUN_A RUN_B            (the same evals of two runs)
       hayloft compare [--run ID] --models A,B   (two models of one run)
       hayloft compare [--run ID] --retrievers X,Y  (two retrievers of one run; "none" is full context)
       [--json] [--html FILE]`

func (e *cliEnv) cmdCompare(ctx context.Context, args []string) error {
	fs := e.newFlagSet("compare")
	jf := journalFlags{index: true} // compare reads score values only
	jf.register(fs, true)
	models := fs.String("models", "", "compare two models of one run: A,B (B against A)")
	retrievers := fs.String("retrievers", "", "compare two retrievers of one run: X,Y (Y against X)")
	asJSON := fs.Bool("json", false, "print JSON")
	htmlOut := fs.String("html", "", "also write the comparison as an HTML page to this file")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	usage := &exitError{code: 2, err: errors.New(compareUsage)}
	st, err := jf.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	var pairs []*compare.Pair
	switch {
	case len(pos) == 2 && *models == "" && *retrievers == "":
		a, err := journal.LoadIndex(ctx, st, pos[0], jf.evals)
		if err != nil {
			return err
		}
		b, err := journal.LoadIndex(ctx, st, pos[1], jf.evals)
		if err != nil {
			return err
		}
		if pairs, err = compare.Runs(a, b, stats.DefaultSeed); err != nil {
			return err
		}
	case len(pos) == 0 && (*models == "") != (*retrievers == ""):
		by, list := "model", *models
		if list == "" {
			by, list = "retriever", *retrievers
		}
		xy := strings.Split(list, ",")
		if len(xy) != 2 || xy[0] == "" || xy[1] == "" {
			return &exitError{code: 2, err: errors.New("--" + by + "s wants two names separated by a comma")}
		}
		run, err := jf.load(ctx, st)
		if err != nil {
			return err
		}
		if pairs, err = compare.Within(run, by, xy[0], xy[1], stats.DefaultSeed); err != nil {
			return err
		}
	default:
		return usage
	}
	if *htmlOut != "" {
		w, done, err := e.createOutput(*htmlOut)
		if err != nil {
			return err
		}
		if err := compare.WriteHTML(w, pairs); err != nil {
			done()
			return err
		}
		if err := done(); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"pairs": pairs})
	}
	return compare.WriteText(e.stdout, pairs)
}
