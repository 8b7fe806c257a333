package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/shard"
	"github.com/hayloft/hayloft/kernel/store"
)

// shardFlags choose the shard of a run: --shard i/N, or else the job array's
// environment (kernel/shard.FromEnv), whose index-only forms take the count
// from the shards setting (--shards, HAYLOFT_SHARDS or `shards` in the
// config).
type shardFlags struct {
	spec string
}

// register adds --shard, and --shards as the settings override cf carries.
func (f *shardFlags) register(fs *flag.FlagSet, cf *commonFlags) {
	fs.StringVar(&f.spec, "shard", "", "run only shard INDEX/COUNT of the samples (default: from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX)")
	fs.IntVar(&cf.shards, "shards", 0, "the shard count that goes with JOB_COMPLETION_INDEX or a re-submitted Slurm task (env HAYLOFT_SHARDS)")
}

// resolve returns the run's shard given the shards setting; getenv is
// os.Getenv in production.
func (f *shardFlags) resolve(getenv func(string) string, count int) (shard.Spec, error) {
	if f.spec != "" {
		return shard.Parse(f.spec)
	}
	return shard.FromEnv(getenv, count)
}

// cmdStatus shows how far each shard of a config's sharded runs got, from
// the journal they share.
func (e *cliEnv) cmdStatus(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var cf commonFlags
	cf.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &exitError{code: 2, err: errors.New("usage: hayloft status CONFIG [--store PATH]")}
	}
	cfg, err := config.Load(pos[0], config.LoadOptions{Env: os.Environ(), Flags: cf.overrides()})
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	st, err := openJournal(ctx, cfg.Settings, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	v, err := loadShards(ctx, st, cfg)
	if err != nil {
		return err
	}
	if len(v.rows) == 0 {
		fmt.Fprintf(e.stdout, "%s: no sharded run in %s\n", cfg.Path, cfg.Settings.Store)
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tRUN\tSTATUS\tEVAL\tDONE\tFAILED\tRUNS")
	for i := range v.n {
		if _, ok := v.latest[i]; !ok {
			fmt.Fprintf(tw, "%d/%d\t-\tnot started\t\t\t\t0\n", i, v.n)
		}
		for _, r := range v.rows {
			if r.Shard == i && v.latest[i] == r.RunID {
				fmt.Fprintf(tw, "%d/%d\t%s\t%s\t%s\t%d\t%d\t%d\n", r.Shard, r.Shards, r.RunID, r.Status, r.Eval, r.Done, r.Failed, v.runs[i])
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, v.summary(cfg.Path))
	return nil
}

// shards is what the journal says of a config's sharded runs.
type shards struct {
	rows []store.ShardRow
	n    int
	// latest is each shard's latest run: its current attempt; earlier ones
	// were interrupted or re-submitted, and their answers are in the cache.
	latest map[int]string
	runs   map[int]int // runs per shard
	done   int         // shards whose latest run is done
}

func loadShards(ctx context.Context, st *store.Store, cfg *config.Config) (*shards, error) {
	// The hash of the text as BeginRun journals it.
	sum := sha256.Sum256(cfg.Source)
	rows, err := st.ShardProgress(ctx, hex.EncodeToString(sum[:]))
	if err != nil {
		return nil, err
	}
	v := &shards{rows: rows, latest: map[int]string{}, runs: map[int]int{}}
	if len(rows) == 0 {
		return v, nil
	}
	v.n = rows[0].Shards
	status := map[string]string{}
	for _, r := range rows {
		if v.latest[r.Shard] != r.RunID {
			v.runs[r.Shard]++
		}
		v.latest[r.Shard] = r.RunID // rows come oldest run first
		status[r.RunID] = r.Status
	}
	for _, id := range v.latest {
		if status[id] == store.StatusDone {
			v.done++
		}
	}
	return v, nil
}

func (v *shards) summary(configPath string) string {
	msg := fmt.Sprintf("%d of %d shards done", v.done, v.n)
	if v.done == v.n {
		msg += fmt.Sprintf("; `hayloft run %s` without a shard now answers every sample from the journal and reports over all of them", configPath)
	}
	return msg
}

// cmdMerge unions the journals of shards that ran without a shared database.
func (e *cliEnv) cmdMerge(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	out := fs.String("o", "", "the merged journal (created if missing)")
	srcs, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *out == "" || len(srcs) == 0 {
		return &exitError{code: 2, err: errors.New("usage: hayloft merge A.db B.db ... -o ALL.db")}
	}
	if err := store.Merge(ctx, *out, srcs...); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "merged %d journals into %s\n", len(srcs), *out)
	return nil
}
