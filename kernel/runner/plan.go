package runner

import (
	"context"
	"fmt"

	"github.com/hayloft/hayloft/kernel/calibrate"
	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/sendorder"
	"github.com/hayloft/hayloft/sdk"
)

// PlanOptions are `hayloft plan`'s throughput assumptions; 0 means unknown,
// and the times that need it are left out.
type PlanOptions struct {
	PrefillTPS float64 // prompt tokens computed per second
	DecodeTPS  float64 // tokens generated per second
	// Calibrate measures both rates against each model's live server
	// (kernel/calibrate), instead of PrefillTPS and DecodeTPS: the one
	// thing the plan asks of a server.
	Calibrate bool
}

// PlanRow is what one eval asks of one model (through one retriever),
// estimated without calling it.
type PlanRow struct {
	Eval      string `json:"eval"`
	Model     string `json:"model"`
	Retriever string `json:"retriever,omitempty"`
	Tokenizer string `json:"tokenizer"`
	Samples   int    `json:"samples"`
	Truncated int    `json:"truncated,omitempty"`
	// PromptTokens are the fitted prompts' tokens, all computed without a
	// cache; TreeTokens is their shared-prefix tree, the least prefill
	// (at the cache model's block granularity: sendorder.PlanFigures).
	PromptTokens int `json:"prompt_tokens"`
	TreeTokens   int `json:"tree_tokens"`
	// CacheTokens is the prefix cache assumed, CacheSource why.
	CacheTokens int    `json:"cache_tokens"`
	CacheSource string `json:"cache_source"`
	// Order is the eval's send order; OrderPrefill and DatasetPrefill are
	// the prefill computed with it and with the task's order
	// (sendorder.ComputedPrefill's cache model, one request at a time).
	Order          string `json:"order"`
	OrderPrefill   int    `json:"order_prefill"`
	DatasetPrefill int    `json:"dataset_prefill"`
	// DecodeTokens is the generation budget (max_tokens) summed over the
	// samples that have one; NoBudget counts those that do not.
	DecodeTokens int `json:"decode_tokens"`
	NoBudget     int `json:"no_budget,omitempty"`
	// PrefillTPS and DecodeTPS are the rates the times are at, Rates where
	// they come from (the flags, or measured against the server).
	PrefillTPS float64 `json:"prefill_tps,omitempty"`
	DecodeTPS  float64 `json:"decode_tps,omitempty"`
	Rates      string  `json:"rates,omitempty"`
	// Seconds is OrderPrefill at PrefillTPS plus DecodeTokens at DecodeTPS,
	// each where its rate is given; DatasetSeconds the same with
	// DatasetPrefill.
	Seconds        float64 `json:"seconds,omitempty"`
	DatasetSeconds float64 `json:"dataset_seconds,omitempty"`
	// Cost is every prompt token at the model's price_prompt_per_mtok and
	// the whole decode budget at its price_completion_per_mtok: an upper
	// bound, as cached prompt tokens' discounts are not modelled. Priced
	// says whether the config gives either price.
	Cost   float64 `json:"cost,omitempty"`
	Priced bool    `json:"priced,omitempty"`
}

// Plan renders and fits every request of cfg's evals as Gen does and
// estimates, per eval, model and retriever, the prefill and time they
// take. No model is called and no server asked: the prefix cache is the
// model's prefix_cache_tokens, else sendorder.DefaultCacheTokens.
func (r *Runner) Plan(ctx context.Context, cfg *config.Config, opts PlanOptions) ([]PlanRow, error) {
	comps := newComponents(r.opts.Opener)
	defer comps.closeAll()
	var rows []PlanRow
	measured := map[*modelHandle]calibrate.Result{}
	for _, ev := range cfg.Evals {
		if !r.selected(ev.Name) {
			continue
		}
		type acc struct {
			row PlanRow
			// planner takes each prompt as it is fitted and keeps only
			// what the estimates need, not the prompts.
			planner                      *sendorder.Planner
			pricePrompt, priceCompletion float64 // per million tokens
		}
		var accs []*acc
		at := map[[2]string]*acc{}
		err := r.render(ctx, ev, comps, func(h *modelHandle, smp *sdk.Sample, out *Rendered) error {
			key := [2]string{out.Model, out.Retriever}
			a := at[key]
			if a == nil {
				a = &acc{row: PlanRow{Eval: ev.Name, Model: out.Model, Retriever: out.Retriever, Tokenizer: out.Tokenizer, Order: ev.Order}}
				a.row.CacheTokens, a.row.CacheSource = sendorder.DefaultCacheTokens, "default (set prefix_cache_tokens)"
				if n := h.settings.PrefixCacheTokens; n > 0 {
					a.row.CacheTokens, a.row.CacheSource = n, "prefix_cache_tokens in config"
				}
				a.row.PrefillTPS, a.row.DecodeTPS = opts.PrefillTPS, opts.DecodeTPS
				if opts.PrefillTPS > 0 || opts.DecodeTPS > 0 {
					a.row.Rates = "given (--prefill-tps, --decode-tps)"
				}
				if opts.Calibrate {
					res, ok := measured[h]
					if !ok {
						var err error
						if res, err = r.calibrate(ctx, h); err != nil {
							return err
						}
						measured[h] = res
					}
					a.row.PrefillTPS, a.row.DecodeTPS = res.PrefillTPS, res.DecodeTPS
					a.row.Rates = fmt.Sprintf("measured against %s with %d streamed requests, instead of --prefill-tps/--decode-tps (%s)", h.identity.Endpoint, res.Requests, res.Note)
				}
				if pp, pc := h.settings.PricePromptPerMTok, h.settings.PriceCompletionPerMTok; pp > 0 || pc > 0 {
					a.row.Priced = true
					a.pricePrompt, a.priceCompletion = pp, pc
				}
				a.planner = sendorder.NewPlanner(planPolicy(a.row.Order), sendorder.Options{CacheTokens: a.row.CacheTokens, Assumed: h.settings.PrefixCacheTokens <= 0})
				at[key] = a
				accs = append(accs, a)
			}
			a.row.Samples++
			a.row.PromptTokens += out.Length
			if out.Truncated {
				a.row.Truncated++
			}
			if mt := h.params(smp).MaxTokens; mt > 0 {
				a.row.DecodeTokens += mt
			} else {
				a.row.NoBudget++
			}
			return a.planner.Add(sendorder.Prompt{Text: messagesText(out.Messages), Tokens: out.Length})
		})
		if err != nil {
			return rows, fmt.Errorf("eval %q: %w", ev.Name, err)
		}
		for _, a := range accs {
			if err := a.row.estimate(a.planner); err != nil {
				return rows, fmt.Errorf("eval %q: model %s: %w", ev.Name, a.row.Model, err)
			}
			if a.row.Priced {
				a.row.Cost = (float64(a.row.PromptTokens)*a.pricePrompt + float64(a.row.DecodeTokens)*a.priceCompletion) / 1e6
			}
			rows = append(rows, a.row)
		}
	}
	return rows, nil
}

// planPolicy is the send order an eval's order setting means.
func planPolicy(order string) string {
	if order == "" {
		return sendorder.Prefix
	}
	return order
}

// estimate fills the row's prefill and time figures from its planner.
func (row *PlanRow) estimate(pl *sendorder.Planner) error {
	f, err := pl.Finish()
	if err != nil {
		return err
	}
	row.TreeTokens, row.OrderPrefill, row.DatasetPrefill = f.TreeTokens, f.OrderPrefill, f.DatasetPrefill
	if row.PrefillTPS > 0 {
		row.Seconds = float64(row.OrderPrefill) / row.PrefillTPS
		row.DatasetSeconds = float64(row.DatasetPrefill) / row.PrefillTPS
	}
	if row.DecodeTPS > 0 {
		row.Seconds += float64(row.DecodeTokens) / row.DecodeTPS
		row.DatasetSeconds += float64(row.DecodeTokens) / row.DecodeTPS
	}
	return nil
}

// calibrate measures h's server (plan --calibrate). A server behind an API
// key is not calibrated: the key never leaves the model plugin.
func (r *Runner) calibrate(ctx context.Context, h *modelHandle) (calibrate.Result, error) {
	ref := h.comp.Ref()
	switch {
	case h.keyed:
		return calibrate.Result{}, fmt.Errorf("--calibrate: model %s uses an API key, which stays in its plugin: give --prefill-tps and --decode-tps instead", ref)
	case h.identity.Endpoint == "":
		return calibrate.Result{}, fmt.Errorf("--calibrate: model %s has no base_url to measure against", ref)
	}
	endpoint, _ := h.identity.Extra["endpoint"].(string)
	// The long prompt stays within half the model's window, about a token
	// a word.
	long := 2048
	if cw := h.settings.ContextWindow; cw > 0 {
		long = min(long, cw/2)
	}
	res, err := calibrate.Measure(ctx, h.identity.Endpoint, calibrate.Options{Model: h.identity.Model, Completions: endpoint == "completions",
		ShortWords: max(long/32, 8), LongWords: long})
	if err != nil {
		return res, fmt.Errorf("--calibrate: model %s: %w", ref, err)
	}
	r.log.Info("calibrated", "model", ref, "prefill_tps", res.PrefillTPS, "decode_tps", res.DecodeTPS, "how", res.Note)
	return res, nil
}
