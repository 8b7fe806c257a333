package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/pluginhost"
	"github.com/hayloft/hayloft/kernel/runner"
	"github.com/hayloft/hayloft/sdk"
)

// precheck configures, without provisioning, every component the selected
// evals use, as `hayloft validate` does, and reports every config error of
// every eval at once before any eval starts: an unknown option in the last
// eval should not wait for the first ones to finish, nor hide behind the
// first error found.
//
// Built-in components are checked in this process: checking builds a
// component from its options (sdk.Set.Build, the code a plugin process
// runs for a check-only Configure) and provisions nothing, so a process per
// component bought no isolation and cost a start-up each, about 15 ms of
// CPU and of wall clock before the run's own processes start. The run's
// components still run in their own processes; external plugins are
// checked in theirs.
//
// It checks the config the run loaded rather than loading it again: the
// same file, environment and flags give the same config, and a second
// load re-evaluated the file's functions (goroot() runs `go env GOROOT`,
// some 40 ms of the quickstart's start).
func (e *cliEnv) precheck(ctx context.Context, cfg *config.Config, cf commonFlags, evals []string) error {
	cf.checkOnly = true
	cf.inProcess = true
	s, err := e.sessionOf(cfg, &cf)
	if err != nil {
		return err
	}
	defer s.host.Close()
	return checkComponents(ctx, s.host, evalComponents(s.cfg, evals), true)
}

// checkComponents configures each component (provisioning it too unless
// checkOnly) and returns every error at once, in the components' order, as
// a config error (exit 2). The components are checked at once: each is a
// plugin process to start and stop, which in series cost `hayloft run` a
// start-up per component before its journal was even opened. At most
// checkAtOnce run together, so that a config of dozens of models does not
// start dozens of processes at once.
func checkComponents(ctx context.Context, host *pluginhost.Host, comps []*config.Component, checkOnly bool) error {
	found := make([]error, len(comps))
	slots := make(chan struct{}, checkAtOnce)
	var wg sync.WaitGroup
	for i, c := range comps {
		if c.Kind == sdk.KindScorer && c.Type == runner.JudgeScorer {
			continue // the kernel's own; the runner checks it when it starts
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			found[i] = validateComponent(ctx, host, c, checkOnly)
		})
	}
	wg.Wait()
	var errs []string
	for _, err := range found {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return &exitError{code: 2, err: errors.New(strings.Join(errs, "\n"))}
	}
	return nil
}

// checkAtOnce bounds the components checkComponents checks at once.
const checkAtOnce = 8

// evalComponents lists, each once, the components of the named evals (all
// when names is empty).
func evalComponents(cfg *config.Config, names []string) []*config.Component {
	var out []*config.Component
	add := func(c *config.Component) {
		if c != nil && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	for _, ev := range cfg.Evals {
		if len(names) > 0 && !slices.Contains(names, ev.Name) {
			continue
		}
		add(ev.Task)
		for _, list := range [][]*config.Component{ev.Models, ev.Retrievers, ev.Scorers} {
			for _, c := range list {
				add(c)
			}
		}
	}
	return out
}
