package acmepy_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hayloft/hayloft/kernel/pluginhost"
	"github.com/hayloft/hayloft/sdk"
)

// TestServedModelAndTransportOptions: a Python model's served_model and
// transport_options attributes (the "served" model of the SDK's test
// plugin, sdk/python/tests/demo.py, which learns what it serves from a
// file standing for a server) reach the kernel as a Go model's
// sdk.ServedModeler and sdk.TransportOptioner do, and key its journaled
// answers: a changed timeout keeps them, another served model does not.
func TestServedModelAndTransportOptions(t *testing.T) {
	pyz, sum := packOnce(t, filepath.Join("..", "..", "sdk", "python", "tests"), "demo")
	dir := t.TempDir()
	server := filepath.Join(dir, "server.txt")
	serve := func(model string) { writeFile(t, server, model+"\n") }
	serve("model-a")

	v, err := open(t, host(t, "demo", pyz, sum, 0), sdk.KindModel, "served", map[string]any{"server": server})
	if err != nil {
		t.Fatal(err)
	}
	m := v.(*pluginhost.Model)
	var _ sdk.ServedModeler = m
	var _ sdk.TransportOptioner = m
	if got, want := m.TransportOptions(), []string{"timeout", "max_retries"}; m.ServedModel() != "model-a" || !slices.Equal(got, want) {
		t.Fatalf("served model %q, transport options %q; want %q and %q", m.ServedModel(), got, "model-a", want)
	}

	if testing.Short() {
		t.Skip("builds hayloft")
	}
	acme, acmeSum := packOnce(t, ".", "acme")
	hayloft := build(t)
	store := filepath.Join(dir, "journal.db")
	const config = `plugin "acme" {
  source = %q
  sha256 = %q
}

plugin "demo" {
  source = %q
  sha256 = %q
}

task "arith" "small" {
  count = 10
}

model "served" "m" {
  server = "server.txt"
  %s
}

eval "served" {
  task    = task.arith.small
  models  = [model.served.m]
  scorers = ["numeric"]
}
`
	for _, tc := range []struct {
		name, served, attrs string
		cached              int
	}{
		{"first run", "model-a", `timeout = 30`, 0},
		{"only transport options changed", "model-a", "timeout = 90\n  max_retries = 5", 10},
		// The config names no model: the served one is the key's.
		{"the server serves another model", "model-b", `timeout = 30`, 0},
		{"and the first again", "model-a", `timeout = 30`, 10},
	} {
		serve(tc.served)
		cfg := writeFile(t, filepath.Join(dir, "served.hcl"), fmt.Sprintf(config, acme, acmeSum, pyz, sum, tc.attrs))
		ev := parseRun(t, runBin(t, dir, hayloft, "run", cfg, "--json", "--store", store)).Evals[0]
		if ev.Error != "" || ev.Samples != 10 || ev.Errors != 0 || ev.Cached != tc.cached {
			t.Errorf("%s: eval %+v; want 10 samples, %d of them from the journal", tc.name, ev, tc.cached)
		}
	}
}
