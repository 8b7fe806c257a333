package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/hayloft/hayloft/kernel/runner"
)

const planUsage = "plan CONFIG [--eval NAME] [--limit N] [--prefill-tps N] [--decode-tps N] [--calibrate] [--json]"

const planHelp = `Estimates, without calling any model or asking any server, what CONFIG's
evals will cost: per eval and model, the samples, their prompts' tokens as
fitted to the model (its tokenizer and context_window), the size of the
prompts' shared-prefix tree (the least prefill any order can reach), and the
prefill computed with hayloft's send order and with the dataset's order for the
model's prefix_cache_tokens (else a default of one 32K context). The cache is a
model of vLLM's prefix caching (16-token blocks, least recently used evicted
first, one request at a time). With --prefill-tps and --decode-tps, the
expected time too, with max_tokens as each sample's decode budget. Where the
model block sets price_prompt_per_mtok and price_completion_per_mtok, the cost:
every prompt token and the whole decode budget at those prices.

With --calibrate, the plan measures both rates against each model's server
instead, with three short streamed requests (a warm-up, a short and a long
prompt of random words, so no cache serves them; the time to the first token
gives the prefill rate, the tokens after it the decode rate), and says so.
That is the one thing --calibrate asks of a server; a server behind an API
key is not calibrated.`

func (e *cliEnv) cmdPlan(ctx context.Context, args []string) error {
	fs := e.newFlagSet("plan")
	var ef evalFlags
	var opts runner.PlanOptions
	var asJSON bool
	fs.Float64Var(&opts.PrefillTPS, "prefill-tps", 0, "prompt tokens the server computes per second (for the time)")
	fs.Float64Var(&opts.DecodeTPS, "decode-tps", 0, "tokens the server generates per second (for the time)")
	fs.BoolVar(&asJSON, "json", false, "print the plan as JSON")
	fs.BoolVar(&opts.Calibrate, "calibrate", false, "measure --prefill-tps and --decode-tps against each model's server")
	s, err := e.openEvalSession(fs, &ef, args, "usage: hayloft "+planUsage)
	if err != nil {
		return err
	}
	defer s.host.Close()
	for name, v := range map[string]float64{"--prefill-tps": opts.PrefillTPS, "--decode-tps": opts.DecodeTPS} {
		if v < 0 {
			return &exitError{code: 2, err: fmt.Errorf("%s %g: must not be negative", name, v)}
		}
	}
	rows, err := runner.New(runner.Options{Opener: s.host, Logger: s.log, Limit: ef.limit, Evals: ef.evals}).Plan(ctx, s.cfg, opts)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "eval\tmodel\tsamples\tprompt tok\ttree tok\tcache tok\torder prefill\tdataset prefill\tdecode tok\ttime\tdataset time\t")
	for _, r := range rows {
		model := r.Model
		if r.Retriever != "" && r.Retriever != "none" {
			model += " + " + r.Retriever
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n", r.Eval, model, r.Samples, r.PromptTokens, r.TreeTokens,
			r.CacheTokens, r.OrderPrefill, r.DatasetPrefill, r.DecodeTokens, planTime(r.Seconds, r), planTime(r.DatasetSeconds, r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		fmt.Fprintf(e.stdout, "%s / %s: tokenizer %s; cache %s; order %q", r.Eval, r.Model, r.Tokenizer, r.CacheSource, r.Order)
		if r.Truncated > 0 {
			fmt.Fprintf(e.stdout, "; %d prompts truncated to the window", r.Truncated)
		}
		if r.Rates != "" {
			fmt.Fprintf(e.stdout, "; prefill %.0f tok/s, decode %.0f tok/s %s", r.PrefillTPS, r.DecodeTPS, r.Rates)
		}
		if r.Priced {
			fmt.Fprintf(e.stdout, "; cost at most %.2f (prompts and max_tokens at the configured prices per million tokens, no cache discount)", r.Cost)
		}
		if r.NoBudget > 0 {
			fmt.Fprintf(e.stdout, "; %d samples without max_tokens (no decode counted)", r.NoBudget)
		}
		fmt.Fprintln(e.stdout)
	}
	return nil
}

// planTime shows seconds, or "-" where no rate was given.
func planTime(sec float64, r runner.PlanRow) string {
	if r.PrefillTPS <= 0 && r.DecodeTPS <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fs", sec)
}
