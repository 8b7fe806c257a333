package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// summary renders everything a config decoded to, with machine-dependent
// directories replaced, so one golden file pins the whole decoding.
func summary(t *testing.T, cfg *Config) string {
	t.Helper()
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	s := cfg.Settings
	fmt.Fprintf(&b, "settings store=%s log_level=%s plugin_dir=%s concurrency=%d\n", s.Store, s.LogLevel, s.PluginDir, s.Concurrency)
	for _, p := range cfg.Plugins {
		fmt.Fprintf(&b, "plugin %s source=%s sha256=%s at %s\n", p.Name, p.Source, p.SHA256, posString(p.Range))
	}
	comp := func(c *Component) string {
		if c == nil {
			return "<none>"
		}
		return c.Ref()
	}
	for _, c := range cfg.Components {
		fmt.Fprintf(&b, "%s plugin=%q at %s\n  options %s\n", c.Ref(), c.Plugin, posString(c.DeclRange), c.Options)
		if m := c.Model; m != nil {
			p := m.Params
			fmt.Fprintf(&b, "  model max_concurrency=%d context_window=%d truncation=%s max_tokens=%d stop=%q temperature=%s top_p=%s seed=%s\n",
				m.MaxConcurrency, m.ContextWindow, m.Truncation, p.MaxTokens, p.Stop, ptr(p.Temperature), ptr(p.TopP), ptr(p.Seed))
		}
	}
	for _, e := range cfg.Evals {
		fmt.Fprintf(&b, "eval %s at %s task=%s limit=%d order=%s\n", e.Name, posString(e.DeclRange), comp(e.Task), e.Limit, e.Order)
		for _, list := range []struct {
			name string
			cs   []*Component
		}{{"models", e.Models}, {"retrievers", e.Retrievers}, {"scorers", e.Scorers}} {
			var refs []string
			for _, c := range list.cs {
				refs = append(refs, comp(c))
			}
			fmt.Fprintf(&b, "  %s %s\n", list.name, strings.Join(refs, " "))
		}
	}
	return strings.ReplaceAll(b.String(), cwd, "$CWD")
}

func ptr[T any](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}

func TestLoadFull(t *testing.T) {
	cfg, err := Load("testdata/full.hcl", LoadOptions{Env: []string{"LANG_CODE=zh", "PATH=/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "full.golden", summary(t, cfg))

	src, err := os.ReadFile("testdata/full.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.Source) != string(src) {
		t.Error("Source is not the file's text")
	}
	if cfg.Path != "testdata/full.hcl" {
		t.Errorf("Path = %q", cfg.Path)
	}

	// Evals share the component values the file declares, and every eval
	// naming a bare scorer shares one synthetic component: the runner relies
	// on pointer identity to start each instance once.
	needles, quick := cfg.Evals[0], cfg.Evals[1]
	if needles.Task != cfg.Components[2] || quick.Task != needles.Task {
		t.Error("eval task is not the declared component")
	}
	if needles.Scorers[0] != quick.Scorers[0] {
		t.Error(`the two "contains" scorers are different components`)
	}
	contains := needles.Scorers[0]
	if contains.Kind != sdk.KindScorer || contains.Type != "contains" || contains.Name != "contains" || string(contains.Options) != "{}" {
		t.Errorf("bare scorer = %+v", contains)
	}
	if got := posString(contains.DeclRange); got != "testdata/full.hcl:47:17" {
		t.Errorf("bare scorer range = %s, want the string literal", got)
	}

	// Options decode strictly into the component's own struct.
	var opts struct {
		Haystack string         `json:"haystack"`
		Lengths  []int          `json:"lengths"`
		Depths   []int          `json:"depths"`
		Ratio    float64        `json:"ratio"`
		Big      int64          `json:"big"`
		Language string         `json:"language"`
		Extra    map[string]any `json:"extra"`
	}
	if err := cfg.Components[2].Options.Decode(&opts); err != nil {
		t.Fatal(err)
	}
	if opts.Big != 9007199254740993 || len(opts.Lengths) != 4 || opts.Language != "ZH" {
		t.Errorf("decoded options = %+v", opts)
	}
}

func TestModelDefaults(t *testing.T) {
	src := `model "baseline" "random" {}`
	for _, tc := range []struct {
		name  string
		flags map[string]any
		want  int
	}{
		{"built-in default", nil, 8},
		{"global concurrency flag", map[string]any{"concurrency": 3}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("x.hcl", []byte(src), LoadOptions{Flags: tc.flags})
			if err != nil {
				t.Fatal(err)
			}
			m := cfg.Components[0].Model
			if m.MaxConcurrency != tc.want || m.Truncation != "middle" || m.ContextWindow != 0 {
				t.Errorf("model settings = %+v", m)
			}
			p := m.Params
			if p.Temperature != nil || p.TopP != nil || p.Seed != nil || p.Stop != nil || p.MaxTokens != 0 {
				t.Errorf("params = %+v, want server defaults", p)
			}
			if string(cfg.Components[0].Options) != "{}" {
				t.Errorf("options = %s", cfg.Components[0].Options)
			}
		})
	}
}

func TestNonModelKeepsKernelNamesAsOptions(t *testing.T) {
	// Only model blocks have kernel-level generation attributes; elsewhere
	// the names belong to the component.
	cfg, err := Parse("x.hcl", []byte(`task "t" "a" {
  plugin = "p"
  max_tokens = 5
  truncation = "whatever"
}`), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Components[0]
	if c.Model != nil || c.Plugin != "p" {
		t.Errorf("component = %+v", c)
	}
	if got, want := string(c.Options), `{"max_tokens":5,"truncation":"whatever"}`; got != want {
		t.Errorf("options = %s, want %s", got, want)
	}
	if _, ok := c.AttrRanges["plugin"]; !ok {
		t.Error("no range for the plugin attribute")
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.hcl", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "testdata/does-not-exist.hcl") || !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("err = %v, want a not-exist error naming the file", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		if next := u.Unwrap(); next != nil {
			err = next
		} else {
			return err
		}
	}
}

func TestRef(t *testing.T) {
	c := &Component{Kind: sdk.KindModel, Type: "openai", Name: "local"}
	if got := c.Ref(); got != "model.openai.local" {
		t.Errorf("Ref = %q", got)
	}
}

func TestPluginSource(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, source, want string }{
		{"conf/h.hcl", "./bin/acme", filepath.Join(cwd, "conf/bin/acme")},
		{"conf/h.hcl", "../bin/acme", filepath.Join(cwd, "bin/acme")},
		{"h.hcl", "acme", filepath.Join(cwd, "acme")},
		{"conf/h.hcl", "/opt/acme/plugin", "/opt/acme/plugin"},
	} {
		cfg, err := Parse(tc.file, []byte(`plugin "acme" { source = "`+tc.source+`" }`), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p := cfg.Plugins[0]; p.Source != tc.want || p.SHA256 != "" {
			t.Errorf("%s in %s: plugin = %+v, want source %s", tc.source, tc.file, p, tc.want)
		}
	}
}

func TestLooksSecret(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true,
		"HF_TOKEN":       true,
		"DB_PASSWORD":    true,
		"my-secret":      true,
		"APIKEY":         true,
		"HAYSTACK_DIR":   false,
		"MONKEY_DATA":    false, // KEY inside a word is not the word KEY
		"LANG":           false,
	} {
		if got := looksSecret(name); got != want {
			t.Errorf("looksSecret(%q) = %v, want %v", name, got, want)
		}
	}
}

// goroot() asks `go env GOROOT` (a fake go on PATH here, counting its
// calls) once per load however often the file calls it; $GOROOT in the
// load's environment wins without asking.
func TestGorootAsksGoOnce(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho call >> " + count + "\necho /fake/goroot\n"
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	src := []byte(`task "t" "a" {
  haystack = "${goroot()}/src/testdata/a.txt"
  other    = goroot()
}
task "t" "b" {
  haystack = goroot()
}`)
	for _, tc := range []struct {
		env       []string
		want      string
		wantCalls int
	}{
		{nil, "/fake/goroot", 1},
		{[]string{"GOROOT=/env/goroot"}, "/env/goroot", 0},
	} {
		os.Remove(count)
		cfg, err := Parse("x.hcl", src, LoadOptions{Env: tc.env})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(cfg.Components[1].Options), `{"haystack":"`+tc.want+`"}`; got != want {
			t.Errorf("options = %s, want %s", got, want)
		}
		calls, _ := os.ReadFile(count)
		if n := strings.Count(string(calls), "call"); n != tc.wantCalls {
			t.Errorf("env %q: go env GOROOT ran %d times for one load, want %d", tc.env, n, tc.wantCalls)
		}
	}
}
