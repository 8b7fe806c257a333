package pluginhost

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func open[T any](t *testing.T, h *Host, kind sdk.Kind, name, pluginName string, opts any) T {
	t.Helper()
	c, err := h.Open(context.Background(), kind, name, pluginName, sdk.MustOptions(opts))
	if err != nil {
		t.Fatalf("open %s %s: %v", kind, name, err)
	}
	return c.(T)
}

func msgs(s string) *sdk.GenerateRequest {
	return &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: s}}}
}

func TestDescribeAndResolve(t *testing.T) {
	h := newHost(t, Options{})
	acme := filepath.Join(t.TempDir(), "acme")
	copyBinary(t, pluginBin, acme, 0o755)
	if err := h.AddPlugin(Spec{Name: "acme", Source: acme, SHA256: fileSHA256(t, acme)}); err != nil {
		t.Fatal(err)
	}
	if err := h.AddPlugin(Spec{Name: "future", Source: pluginBinV2}); err != nil {
		t.Fatal(err)
	}
	got, err := h.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range got {
		lines = append(lines, fmt.Sprintf("%s %s %s %s/%s", e.Plugin, e.Version, e.Protocol, e.Kind, e.Name))
	}
	want := []string{
		"builtin 1.2.3 hayloft.plugin.v1 task/count",
		"builtin 1.2.3 hayloft.plugin.v1 model/echo",
		"builtin 1.2.3 hayloft.plugin.v1 scorer/exact",
		"builtin 1.2.3 hayloft.plugin.v1 retriever/cosine",
		"acme 1.2.3 hayloft.plugin.v1 task/count",
		"acme 1.2.3 hayloft.plugin.v1 model/echo",
		"acme 1.2.3 hayloft.plugin.v1 scorer/exact",
		"acme 1.2.3 hayloft.plugin.v1 retriever/cosine",
		"future 1.2.3 hayloft.plugin.v2 task/count",
		"future 1.2.3 hayloft.plugin.v2 model/echo",
		"future 1.2.3 hayloft.plugin.v2 scorer/exact",
		"future 1.2.3 hayloft.plugin.v2 retriever/cosine",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("describe:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	// Three plugins serve model "echo": without a choice, that is an error
	// naming them.
	_, err = h.Resolve(context.Background(), sdk.KindModel, "echo", "")
	if err == nil || !strings.Contains(err.Error(), `plugin "acme"`) || !strings.Contains(err.Error(), `plugin "builtin"`) || !strings.Contains(err.Error(), `plugin "future"`) {
		t.Errorf("ambiguous resolve: got %v", err)
	}
	src, err := h.Resolve(context.Background(), sdk.KindModel, "echo", "acme")
	if err != nil || src.Name != "acme" || src.Path != acme {
		t.Errorf("explicit resolve: got %+v, %v", src, err)
	}
	if _, err := h.Resolve(context.Background(), sdk.KindModel, "gpt", "acme"); err == nil || !strings.Contains(err.Error(), `has no model "gpt"`) {
		t.Errorf("missing component: got %v", err)
	}
	if _, err := h.Resolve(context.Background(), sdk.KindModel, "echo", "nope"); err == nil || !strings.Contains(err.Error(), `no plugin "nope"`) {
		t.Errorf("missing plugin: got %v", err)
	}
	if err := h.AddPlugin(Spec{Name: "acme", Source: pluginBin}); err == nil {
		t.Error("a second plugin named acme was accepted")
	}
	if err := h.AddPlugin(Spec{Name: BuiltinPlugin, Source: pluginBin}); err == nil {
		t.Error("a plugin named builtin was accepted")
	}
}

func TestDescribeCache(t *testing.T) {
	h := newHost(t, Options{})
	bin := filepath.Join(t.TempDir(), "acme")
	copyBinary(t, pluginBin, bin, 0o755)
	if err := h.AddPlugin(Spec{Name: "acme", Source: bin}); err != nil {
		t.Fatal(err)
	}
	src := &Source{Name: "acme", Path: bin}
	if _, err := h.describe(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	if n := len(h.cache); n != 1 {
		t.Fatalf("cache has %d entries after one describe", n)
	}
	if _, err := h.describe(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	if n := len(h.cache); n != 1 {
		t.Errorf("describing the same file again added an entry: %d", n)
	}
	// A rebuilt binary (here: a different modification time) is described
	// afresh.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(bin, later, later); err != nil {
		t.Fatal(err)
	}
	if _, err := h.describe(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	if n := len(h.cache); n != 2 {
		t.Errorf("a changed file was not described afresh: %d entries", n)
	}
}

func TestSHA256Pinning(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "acme")
	copyBinary(t, pluginBin, bin, 0o755)
	good := fileSHA256(t, bin)
	bad := strings.Repeat("ab", 32)

	h := newHost(t, Options{})
	if err := h.AddPlugin(Spec{Name: "acme", Source: bin, SHA256: strings.ToUpper(good)}); err != nil {
		t.Fatal(err)
	}
	m := open[*Model](t, h, sdk.KindModel, "echo", "acme", nil)
	if resp, err := m.Generate(context.Background(), msgs("pinned")); err != nil || resp.Text != "pinned" {
		t.Errorf("pinned plugin: %v, %v", resp, err)
	}

	h2 := newHost(t, Options{})
	if err := h2.AddPlugin(Spec{Name: "acme", Source: bin, SHA256: bad}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("plugin \"acme\": sha256 mismatch for %s: config says %s, file has %s", bin, bad, good)
	if _, err := h2.Open(context.Background(), sdk.KindModel, "echo", "acme", nil); err == nil || err.Error() != want {
		t.Errorf("mismatch:\n got %v\nwant %s", err, want)
	}
	if _, err := h2.Describe(context.Background()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("describe with a mismatch:\n got %v\nwant %s", err, want)
	}
	if err := h2.AddPlugin(Spec{Name: "short", Source: bin, SHA256: "abc"}); err == nil {
		t.Error("a 3-digit sha256 was accepted")
	}
}

// A binary swapped after it was described is caught when it starts.
func TestSHA256CheckedAtStart(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "acme")
	copyBinary(t, pluginBin, bin, 0o755)
	h := newHost(t, Options{})
	if err := h.AddPlugin(Spec{Name: "acme", Source: bin, SHA256: fileSHA256(t, bin)}); err != nil {
		t.Fatal(err)
	}
	src, err := h.Resolve(context.Background(), sdk.KindModel, "echo", "acme")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(bin, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("tampered"))
	f.Close()
	if _, err := h.launch(context.Background(), src, sdk.KindModel, "echo", nil); err == nil || !strings.Contains(err.Error(), "sha256 mismatch") {
		t.Errorf("tampered binary: got %v", err)
	}
}

func TestBadBinaries(t *testing.T) {
	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec")
	copyBinary(t, pluginBin, noexec, 0o644)
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name, path, want string
	}{
		{"missing", missing, fmt.Sprintf(`plugin "p": binary %s does not exist`, missing)},
		{"not executable", noexec, fmt.Sprintf(`plugin "p": %s is not executable (mode -rw-r--r--)`, noexec)},
		{"directory", dir, fmt.Sprintf(`plugin "p": %s is a directory, not a plugin binary`, dir)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t, Options{})
			if err := h.AddPlugin(Spec{Name: "p", Source: tt.path}); err != nil {
				t.Fatal(err)
			}
			_, err := h.Open(context.Background(), sdk.KindModel, "echo", "p", nil)
			if err == nil || err.Error() != tt.want {
				t.Errorf("got  %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestExitBeforeHandshakeSaysWhy: a plugin that exits before its handshake
// is reported with its last line on stderr, even when the host has not yet
// read its stderr when stdout closes. The script writes more to stderr than
// a pipe holds before its last words, so the host's reader is still behind
// when go-plugin sees stdout close (without waiting for the reader, this
// failed about every run; under load it failed a Python plugin's test).
func TestExitBeforeHandshakeSaysWhy(t *testing.T) {
	script := "#!/bin/sh\n" +
		"if [ \"$1\" = describe ]; then\n" +
		`  echo '{"name":"early","version":"1","protocol":"hayloft.plugin.v1","components":[{"kind":"scorer","name":"gone"}]}'` + "\n" +
		"  exit 0\n" +
		"fi\n" +
		"i=0; while [ $i -lt 20000 ]; do echo \"noise line $i\" >&2; i=$((i+1)); done\n" +
		"echo 'early: cannot load the answer key' >&2\n" +
		"exit 1\n"
	path := filepath.Join(t.TempDir(), "early")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, Options{})
	if err := h.AddPlugin(Spec{Name: "early", Source: path}); err != nil {
		t.Fatal(err)
	}
	_, err := h.Open(context.Background(), sdk.KindScorer, "gone", "early", nil)
	want := `start scorer "gone": exited before the handshake: early: cannot load the answer key`
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("got  %v\nwant ...%s", err, want)
	}
}

func TestProtocolMismatch(t *testing.T) {
	h := newHost(t, Options{})
	if err := h.AddPlugin(Spec{Name: "acme", Source: pluginBinV2}); err != nil {
		t.Fatal(err)
	}
	_, err := h.Open(context.Background(), sdk.KindModel, "echo", "acme", nil)
	want := `plugin "acme" speaks hayloft.plugin.v2, this hayloft speaks hayloft.plugin.v1`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestPluginDir(t *testing.T) {
	dir := t.TempDir()
	copyBinary(t, pluginBin, filepath.Join(dir, "acme"), 0o755)
	copyBinary(t, pluginBin, filepath.Join(dir, "README"), 0o644) // not executable: ignored
	h := newHost(t, Options{PluginDir: dir})
	got, err := h.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	plugins := map[string]int{}
	for _, e := range got {
		plugins[e.Plugin]++
	}
	if len(plugins) != 2 || plugins["acme"] != 4 || plugins[BuiltinPlugin] != 4 {
		t.Errorf("describe found %v", plugins)
	}
	sc := open[*Scorer](t, h, sdk.KindScorer, "exact", "acme", nil)
	resp, err := sc.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "a", Targets: []string{"x"}}, Prediction: "x"})
	if err != nil || resp.Value != 1 {
		t.Errorf("score: %+v, %v", resp, err)
	}

	// The same file named in the config is the same plugin...
	if err := h.AddPlugin(Spec{Name: "acme", Source: filepath.Join(dir, "acme")}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Describe(context.Background()); err != nil {
		t.Errorf("same file in config and directory: %v", err)
	}
	// ...another file under the same name is an error naming both.
	h2 := newHost(t, Options{PluginDir: dir})
	if err := h2.AddPlugin(Spec{Name: "acme", Source: pluginBin}); err != nil {
		t.Fatal(err)
	}
	_, err = h2.Describe(context.Background())
	if err == nil || !strings.Contains(err.Error(), pluginBin) || !strings.Contains(err.Error(), filepath.Join(dir, "acme")) {
		t.Errorf("name clash: got %v", err)
	}
}

func TestOpenEveryKind(t *testing.T) {
	h := newHost(t, Options{})
	ctx := context.Background()

	task := open[*Task](t, h, sdk.KindTask, "count", "", map[string]any{"n": 25})
	var ids []string
	for s, err := range task.Samples(ctx, &sdk.SamplesRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	if len(ids) != 25 || ids[0] != "s00000" || ids[24] != "s00024" {
		t.Errorf("samples: %v", ids)
	}
	if info := task.Info(); info.Plugin != "testplugin" || info.Version != "1.2.3" || info.Kind != sdk.KindTask {
		t.Errorf("info: %+v", info)
	}
	if err := task.Validate(ctx); err != nil {
		t.Errorf("validate: %v", err)
	}

	m := open[*Model](t, h, sdk.KindModel, "echo", "", nil)
	resp, err := m.Generate(ctx, msgs("hello"))
	if err != nil || resp.Text != "hello" || resp.FinishReason != "stop" {
		t.Errorf("generate: %+v, %v", resp, err)
	}
	if _, err := m.Tokenize(ctx, &sdk.TokenizeRequest{Texts: []string{"x"}}); !errors.Is(err, sdk.ErrUnsupported) {
		t.Errorf("tokenize without a tokenizer: got %v, want sdk.ErrUnsupported", err)
	}

	sc := open[*Scorer](t, h, sdk.KindScorer, "exact", "", nil)
	if _, err := sc.Aggregate(ctx, &sdk.AggregateRequest{}); !errors.Is(err, sdk.ErrUnsupported) {
		t.Errorf("aggregate without an aggregator: got %v, want sdk.ErrUnsupported", err)
	}
	if n := len(children(t, os.Getpid())); n != 3 {
		t.Errorf("%d plugin processes for 3 components", n)
	}
	if err := m.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if n := len(children(t, os.Getpid())); n != 2 {
		t.Errorf("%d plugin processes after closing one of 3", n)
	}
	if _, err := m.Generate(ctx, msgs("again")); err == nil {
		t.Error("generate after close succeeded")
	}
}

func TestConfigErrors(t *testing.T) {
	h := newHost(t, Options{})
	tests := []struct {
		opts  any
		field string
	}{
		{map[string]any{"bogus": 1}, "bogus"},
		{map[string]any{"fail": "sometimes"}, "fail"},
		{map[string]any{"crash_on_call": "two"}, "crash_on_call"},
	}
	for _, tt := range tests {
		_, err := h.Open(context.Background(), sdk.KindModel, "echo", "", sdk.MustOptions(tt.opts))
		var ce *sdk.ConfigError
		if !errors.As(err, &ce) || ce.Field != tt.field {
			t.Errorf("%v: got %v, want a *sdk.ConfigError for %q", tt.opts, err, tt.field)
		}
	}
	if kids := children(t, os.Getpid()); len(kids) != 0 {
		t.Errorf("failed opens left processes: %v", kids)
	}
}

func TestComponentErrorsCrossTheProcess(t *testing.T) {
	h := newHost(t, Options{})
	ctx := context.Background()
	m := open[*Model](t, h, sdk.KindModel, "echo", "", map[string]any{"fail": "request"})
	_, err := m.Generate(ctx, msgs("x"))
	var qe *sdk.RequestError
	if !errors.As(err, &qe) || qe.Code != sdk.CodeContextLength {
		t.Errorf("request error: got %#v", err)
	}
	p := open[*Model](t, h, sdk.KindModel, "echo", "", map[string]any{"fail": "panic"})
	before := p.c.proc.client.ReattachConfig().Pid
	for range 2 {
		if _, err := p.Generate(ctx, msgs("x")); err == nil || !strings.Contains(err.Error(), "echo bug") {
			t.Errorf("panic: got %v", err)
		}
	}
	if p.c.proc == nil || p.c.proc.client.ReattachConfig().Pid != before || p.c.restarted {
		t.Error("a recovered panic restarted the plugin")
	}
}

func TestModelCrashOnceIsRestarted(t *testing.T) {
	h := newHost(t, Options{})
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "crashed")
	m := open[*Model](t, h, sdk.KindModel, "echo", "", map[string]any{"crash_on_call": 2, "crash_marker": marker})
	pid := m.c.proc.client.ReattachConfig().Pid
	for i := range 4 {
		text := fmt.Sprintf("call %d", i)
		resp, err := m.Generate(ctx, msgs(text))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if resp.Text != text {
			t.Errorf("call %d: got %q", i, resp.Text)
		}
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the plugin never crashed")
	}
	if m.c.proc.client.ReattachConfig().Pid == pid {
		t.Error("the plugin process was not replaced")
	}
	if alive(pid) {
		t.Errorf("crashed process %d is still alive", pid)
	}
}

func TestModelCrashTwice(t *testing.T) {
	h := newHost(t, Options{})
	m := open[*Model](t, h, sdk.KindModel, "echo", "", map[string]any{"crash_on_call": 1})
	_, err := m.Generate(context.Background(), msgs("x"))
	want := `plugin "builtin" (model echo) crashed twice: `
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v, want an error starting %q", err, want)
	}
	// The component stays dead rather than restarting forever.
	if _, err2 := m.Generate(context.Background(), msgs("x")); err2 == nil || !strings.HasPrefix(err2.Error(), want) {
		t.Errorf("after the second crash: %v", err2)
	}
	if kids := children(t, os.Getpid()); len(kids) != 0 {
		t.Errorf("processes left after the second crash: %v", kids)
	}
}

// Every call in flight when the plugin dies is retried on the one new
// process.
func TestConcurrentCallsShareOneRestart(t *testing.T) {
	h := newHost(t, Options{})
	marker := filepath.Join(t.TempDir(), "crashed")
	m := open[*Model](t, h, sdk.KindModel, "echo", "", map[string]any{"crash_on_call": 20, "crash_marker": marker})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 8 {
				text := fmt.Sprintf("%d/%d", g, i)
				resp, err := m.Generate(context.Background(), msgs(text))
				if err == nil && resp.Text != text {
					err = fmt.Errorf("got %q for %q", resp.Text, text)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m.c.gen != 1 {
		t.Errorf("%d restarts, want 1", m.c.gen)
	}
}

func TestTaskCrashResumes(t *testing.T) {
	h := newHost(t, Options{})
	marker := filepath.Join(t.TempDir(), "crashed")
	task := open[*Task](t, h, sdk.KindTask, "count", "", map[string]any{"n": 50, "crash_after": 20, "crash_marker": marker})
	var ids []string
	for s, err := range task.Samples(context.Background(), &sdk.SamplesRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	if len(ids) != 50 {
		t.Fatalf("got %d samples, want 50", len(ids))
	}
	for i, id := range ids {
		if want := fmt.Sprintf("s%05d", i); id != want {
			t.Fatalf("sample %d is %s, want %s (lost or repeated across the restart)", i, id, want)
		}
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the plugin never crashed")
	}
}

func TestTaskCrashTwice(t *testing.T) {
	h := newHost(t, Options{})
	task := open[*Task](t, h, sdk.KindTask, "count", "", map[string]any{"n": 50, "crash_after": 20})
	var ids []string
	var last error
	for s, err := range task.Samples(context.Background(), &sdk.SamplesRequest{}) {
		if err != nil {
			last = err
			break
		}
		ids = append(ids, s.ID)
	}
	if last == nil || !strings.HasPrefix(last.Error(), `plugin "builtin" (task count) crashed twice: `) {
		t.Errorf("got %d samples then %v", len(ids), last)
	}
	// Samples sent just before a crash may be lost in flight (and are then
	// read again from the new process), but none is repeated or skipped.
	if len(ids) > 20 {
		t.Errorf("got %d samples from a task that crashes after 20", len(ids))
	}
	for i, id := range ids {
		if want := fmt.Sprintf("s%05d", i); id != want {
			t.Errorf("sample %d is %s, want %s", i, id, want)
		}
	}
}

// A crash in CountSamples, an optional call whose answer the runner can do
// without (a progress total), must not spend the one restart that Samples,
// the real work, has for a crash of its own. Here every count crashes its
// process and Samples crashes once, after 20 samples.
func TestOptionalCallCrashKeepsTheRestart(t *testing.T) {
	h := newHost(t, Options{})
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "crashed")
	task := open[*Task](t, h, sdk.KindTask, "count", "", map[string]any{"n": 50, "crash_after": 20, "crash_marker": marker, "count_crash": true})
	for i := range 2 {
		n, err := task.CountSamples(ctx, &sdk.SamplesRequest{})
		if err == nil || !strings.Contains(err.Error(), "crashed during CountSamples") {
			t.Fatalf("count %d: %d, %v; want the crash", i, n, err)
		}
	}
	// The count crashed its process once and was not asked again: a
	// second process crashing the same way would be a start for nothing.
	if task.c.gen != 1 || task.c.restarted {
		t.Errorf("after the counts: %d restarts, restart used %v; want 1 restart that did not use it", task.c.gen, task.c.restarted)
	}
	var ids []string
	for s, err := range task.Samples(ctx, &sdk.SamplesRequest{}) {
		if err != nil {
			t.Fatalf("after %d samples: %v", len(ids), err)
		}
		ids = append(ids, s.ID)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("Samples never crashed")
	}
	if len(ids) != 50 || ids[49] != "s00049" {
		t.Fatalf("got %d samples, want 50", len(ids))
	}
	if task.c.gen != 2 || !task.c.restarted {
		t.Errorf("after Samples: %d restarts, restart used %v; want 2, used", task.c.gen, task.c.restarted)
	}
}

// A count that crashes only its first process still frees the restart,
// and the count stays unanswered rather than asked again.
func TestOptionalCallCrashOnce(t *testing.T) {
	h := newHost(t, Options{})
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "counted")
	task := open[*Task](t, h, sdk.KindTask, "count", "", map[string]any{"n": 7, "count_crash": true, "count_crash_marker": marker})
	if _, err := task.CountSamples(ctx, &sdk.SamplesRequest{}); err == nil {
		t.Fatal("the count that crashed its process succeeded")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the count never crashed")
	}
	if _, err := task.CountSamples(ctx, &sdk.SamplesRequest{}); err == nil {
		t.Error("a count that crashed the plugin was asked again")
	}
	n := 0
	for _, err := range task.Samples(ctx, &sdk.SamplesRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 7 || task.c.restarted {
		t.Errorf("%d samples, restart used %v; want 7 and the restart kept", n, task.c.restarted)
	}
}

// A plugin process that dies is recognised as crashed, not taken for a
// component's error, whatever the call (a unary one, the Calls stream, a
// Samples stream opened or under way) and however gRPC reports the death:
// a reset or EOF mid-call, a failed preface on a connection the process no
// longer serves, a refused dial once its socket is gone (all Unavailable),
// or the host's own close of the connection (Canceled). A status other
// than those, with the process gone, is a crash too; with the process
// alive, it is the component's. (Written to check a suspicion that a death
// reported otherwise was taken for the component's error: it was not.)
func TestKilledPluginIsRecognised(t *testing.T) {
	h := newHost(t, Options{})
	ctx := context.Background()
	kill := func(p *process, wait time.Duration) {
		t.Helper()
		proc, err := os.FindProcess(p.client.ReattachConfig().Pid)
		if err == nil {
			err = proc.Kill()
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(wait)
	}
	for _, wait := range []time.Duration{0, 2 * time.Millisecond, 200 * time.Millisecond} {
		t.Run(fmt.Sprintf("model killed %v before the call", wait), func(t *testing.T) {
			m := open[*Model](t, h, sdk.KindModel, "echo", "", nil)
			defer m.Close()
			kill(m.c.proc, wait)
			if resp, err := m.Generate(ctx, msgs("x")); err != nil || resp.Text != "x" {
				t.Fatalf("generate after the kill: %v, %v", resp, err)
			}
			if m.c.gen != 1 {
				t.Errorf("%d restarts, want 1", m.c.gen)
			}
		})
		t.Run(fmt.Sprintf("task killed %v before validation", wait), func(t *testing.T) {
			task := open[*Task](t, h, sdk.KindTask, "count", "", map[string]any{"n": 5})
			defer task.Close()
			kill(task.c.proc, wait)
			if err := task.Validate(ctx); err != nil {
				t.Fatalf("validate after the kill: %v", err)
			}
			if task.c.gen != 1 {
				t.Errorf("%d restarts, want 1", task.c.gen)
			}
		})
		t.Run(fmt.Sprintf("task killed %v before the stream", wait), func(t *testing.T) {
			task := open[*Task](t, h, sdk.KindTask, "count", "", map[string]any{"n": 5})
			defer task.Close()
			kill(task.c.proc, wait)
			n := 0
			for _, err := range task.Samples(ctx, &sdk.SamplesRequest{}) {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if n != 5 || task.c.gen != 1 {
				t.Errorf("%d samples after %d restarts, want 5 after 1", n, task.c.gen)
			}
		})
	}
	t.Run("task killed mid-stream", func(t *testing.T) {
		task := open[*Task](t, h, sdk.KindTask, "count", "", map[string]any{"n": 30, "delay_ms": 5})
		defer task.Close()
		n := 0
		for s, err := range task.Samples(ctx, &sdk.SamplesRequest{}) {
			if err != nil {
				t.Fatalf("after %d samples: %v", n, err)
			}
			if want := fmt.Sprintf("s%05d", n); s.ID != want {
				t.Fatalf("sample %d is %s", n, s.ID)
			}
			if n++; n == 10 {
				kill(task.c.proc, 0)
			}
		}
		if n != 30 || task.c.gen != 1 {
			t.Errorf("%d samples after %d restarts, want 30 after 1", n, task.c.gen)
		}
	})
	t.Run("any status once the process is gone", func(t *testing.T) {
		m := open[*Model](t, h, sdk.KindModel, "echo", "", nil)
		defer m.Close()
		p := m.c.proc
		odd := errors.New("plugin rpc: Internal: stream terminated by RST_STREAM with error code: INTERNAL_ERROR")
		if crashed(p, odd) {
			t.Error("a live plugin's error was taken for a crash")
		}
		kill(p, 0)
		deadline := time.Now().Add(10 * time.Second)
		for !p.exited() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if !crashed(p, odd) {
			t.Error("an error from a plugin whose process is gone was not taken for a crash")
		}
		if crashed(p, context.Canceled) {
			t.Error("the caller's cancellation was taken for a crash")
		}
	})
}

func TestCancellation(t *testing.T) {
	h := newHost(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Open(ctx, sdk.KindModel, "echo", "", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("open with a cancelled context: got %v", err)
	}
	if kids := children(t, os.Getpid()); len(kids) != 0 {
		t.Errorf("cancelled open left processes: %v", kids)
	}

	task := open[*Task](t, h, sdk.KindTask, "count", "", map[string]any{"n": 100000, "delay_ms": 5})
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	n := 0
	var last error
	start := time.Now()
	for _, err := range task.Samples(ctx, &sdk.SamplesRequest{}) {
		if err != nil {
			last = err
			break
		}
		if n++; n == 5 {
			cancel()
		}
	}
	if !errors.Is(last, context.Canceled) {
		t.Errorf("after cancel: got %v", last)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancellation took %v", d)
	}
	// The stream is gone but the plugin stays usable.
	for _, err := range task.Samples(context.Background(), &sdk.SamplesRequest{Limit: 2}) {
		if err != nil {
			t.Errorf("after a cancelled stream: %v", err)
		}
	}
	if task.c.restarted {
		t.Error("cancellation was taken for a crash")
	}
}

func TestNoOrphansAfterParentKilled(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), parentEnv+"="+pluginBin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	line, err := readLine(bufio.NewReader(out), 60*time.Second)
	if err != nil || line != "ready" {
		t.Fatalf("parent said %q, %v", line, err)
	}
	kids := children(t, cmd.Process.Pid)
	if len(kids) != 2 {
		t.Fatalf("parent has %d plugin processes, want 2", len(kids))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for _, pid := range kids {
		if !waitExit(t, pid, 10*time.Second) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("plugin %d outlived its killed parent", pid)
		}
	}
}

// About a million tokens of context go out and come back.
func TestLargeContextRoundTrip(t *testing.T) {
	h := newHost(t, Options{})
	m := open[*Model](t, h, sdk.KindModel, "echo", "", nil)
	big := strings.Repeat("The quick brown fox jumps over the lazy dog. ", (4<<20)/45+1)
	resp, err := m.Generate(context.Background(), &sdk.GenerateRequest{
		Messages: []sdk.Message{{Role: "user", Content: big}},
		Sample:   &sdk.Sample{ID: "big", Context: big},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != big {
		t.Errorf("got %d bytes back, sent %d", len(resp.Text), len(big))
	}
}

// Plugin logs arrive through the host's logger, named after the plugin.
func TestPluginLogs(t *testing.T) {
	var buf syncBuffer
	h := newHost(t, Options{Logger: hclog.New(&hclog.LoggerOptions{Name: "hayloft", Level: hclog.Debug, Output: &buf})})
	open[*Model](t, h, sdk.KindModel, "echo", "", nil)
	if !buf.waitFor("configured", 5*time.Second) {
		t.Fatalf("no configured line in the host log:\n%s", buf.String())
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "configured") && !strings.Contains(line, "hayloft.builtin") {
			t.Errorf("plugin log line not under the plugin's name: %s", line)
		}
	}
}

// syncBuffer collects log output from several goroutines; waitFor blocks
// until it holds a line, woken by each write.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed by the next write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return s.b.Write(p)
}

// waitFor reports whether the buffer holds text within d.
func (s *syncBuffer) waitFor(text string, d time.Duration) bool {
	timeout := time.After(d)
	for {
		s.mu.Lock()
		if strings.Contains(s.b.String(), text) {
			s.mu.Unlock()
			return true
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-timeout:
			return false
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type inprocModel struct{}

func (inprocModel) Generate(_ context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	return &sdk.GenerateResponse{Text: "in-process " + req.Messages[0].Content}, nil
}

func TestInProcess(t *testing.T) {
	set := sdk.NewSet("hayloft", "dev")
	set.RegisterModel("local", func(_ context.Context, o sdk.Options) (sdk.Model, error) {
		if err := o.Decode(&struct{}{}); err != nil {
			return nil, err
		}
		return inprocModel{}, nil
	})
	h := newHost(t, Options{Builtin: set, InProcess: true})
	m := open[*Model](t, h, sdk.KindModel, "local", "", nil)
	resp, err := m.Generate(context.Background(), msgs("hi"))
	if err != nil || resp.Text != "in-process hi" {
		t.Errorf("generate: %+v, %v", resp, err)
	}
	if _, err := m.Tokenize(context.Background(), &sdk.TokenizeRequest{}); !errors.Is(err, sdk.ErrUnsupported) {
		t.Errorf("tokenize: got %v, want sdk.ErrUnsupported", err)
	}
	if info := m.Info(); info.Plugin != BuiltinPlugin || info.Version != "dev" || info.Protocol != plugin.Protocol {
		t.Errorf("info: %+v", info)
	}
	_, err = h.Open(context.Background(), sdk.KindModel, "local", "", sdk.MustOptions(map[string]any{"x": 1}))
	var ce *sdk.ConfigError
	if !errors.As(err, &ce) || ce.Field != "x" {
		t.Errorf("config error: got %v", err)
	}
	if kids := children(t, os.Getpid()); len(kids) != 0 {
		t.Errorf("in-process mode started processes: %v", kids)
	}
}

// A built-in whose constructor panics while the precheck configures it in
// this process fails that check with an error naming it; hayloft lives on.
func TestInProcessCheckRecoversPanic(t *testing.T) {
	set := sdk.NewSet("hayloft", "dev")
	set.RegisterScorer("buggy", func(context.Context, sdk.Options) (sdk.Scorer, error) {
		var m map[string]int
		m["boom"]++ // a nil map: the kind of bug a panic comes from
		return nil, nil
	})
	h := newHost(t, Options{Builtin: set, InProcess: true, CheckOnly: true})
	_, err := h.Open(context.Background(), sdk.KindScorer, "buggy", "", nil)
	if err == nil || !strings.Contains(err.Error(), `scorer "buggy"`) || !strings.Contains(err.Error(), "panic while configuring") {
		t.Fatalf("got %v, want a configure error naming the scorer and the panic", err)
	}
}

// With Options.Builtin the built-ins are listed without running the
// binary, and still run out of process.
func TestBuiltinsDescribedInMemory(t *testing.T) {
	set := sdk.NewSet("hayloft", "dev")
	set.RegisterModel("echo", func(context.Context, sdk.Options) (sdk.Model, error) { return inprocModel{}, nil })
	// SelfExe serves echo; describing it would also list count and exact.
	h := newHost(t, Options{Builtin: set})
	got, err := h.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Plugin != BuiltinPlugin || got[0].Version != "dev" || got[0].Name != "echo" {
		t.Errorf("describe: %+v", got)
	}
	m := open[*Model](t, h, sdk.KindModel, "echo", "", nil)
	resp, err := m.Generate(context.Background(), msgs("out of process"))
	if err != nil || resp.Text != "out of process" {
		t.Errorf("generate: %+v, %v", resp, err)
	}
	if n := len(children(t, os.Getpid())); n != 1 {
		t.Errorf("%d plugin processes, want 1", n)
	}
}

type inprocExact struct{}

func (inprocExact) Score(_ context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	if slices.Contains(req.Sample.Targets, req.Prediction) {
		return &sdk.ScoreResponse{Value: 1}, nil
	}
	return &sdk.ScoreResponse{}, nil
}

// ScoreBatch answers every request in order, from a plugin process in one
// call and from an in-process scorer one by one; AggregateResults of a
// scorer without an aggregator is sdk.ErrUnsupported either way.
func TestScoreBatch(t *testing.T) {
	set := sdk.NewSet("hayloft", "dev")
	set.RegisterScorer("exact", func(context.Context, sdk.Options) (sdk.Scorer, error) { return inprocExact{}, nil })
	for _, inProcess := range []bool{false, true} {
		t.Run(fmt.Sprintf("in_process=%v", inProcess), func(t *testing.T) {
			opts := Options{}
			if inProcess {
				opts = Options{Builtin: set, InProcess: true}
			}
			sc := open[*Scorer](t, newHost(t, opts), sdk.KindScorer, "exact", "", nil)
			var reqs []*sdk.ScoreRequest
			for i := range 50 {
				pred := "no"
				if i%3 == 0 {
					pred = "yes"
				}
				reqs = append(reqs, &sdk.ScoreRequest{Sample: &sdk.Sample{ID: fmt.Sprint(i), Targets: []string{"yes"}}, Prediction: pred})
			}
			results, err := sc.ScoreBatch(context.Background(), reqs)
			if err != nil || len(results) != len(reqs) {
				t.Fatalf("%d results, %v", len(results), err)
			}
			for i, r := range results {
				want := 0.0
				if i%3 == 0 {
					want = 1
				}
				if r.Err != nil || r.Response.Value != want {
					t.Errorf("result %d: %+v, %v; want %v", i, r.Response, r.Err, want)
				}
			}
			in, err := plugin.AggregateInputOf(results)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sc.AggregateResults(context.Background(), in); !errors.Is(err, sdk.ErrUnsupported) {
				t.Errorf("aggregate: got %v, want sdk.ErrUnsupported", err)
			}
		})
	}
}
