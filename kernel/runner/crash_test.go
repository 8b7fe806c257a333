package runner

// The runner over real plugin processes (this test binary, re-executed as
// a plugin) that crash mid-run.

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/pluginhost"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

const crashPluginEnv = "HAYLOFT_RUNNER_CRASH_PLUGIN"

func init() {
	if os.Getenv(crashPluginEnv) == "" {
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "plugin" {
		os.Args = append(os.Args[:1], os.Args[2:]...)
	}
	plugin.Main(crashSet())
}

// crashOnce exits the process the first time it is called with no marker
// file (creating it): a restarted process carries on.
func crashOnce(marker string) {
	if marker == "" {
		return
	}
	if _, err := os.Stat(marker); err == nil {
		return
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		panic(err)
	}
	os.Exit(9)
}

type crashTask struct {
	N          int    `json:"n"`
	CrashAfter int    `json:"crash_after"`
	Marker     string `json:"marker"`
}

func (c *crashTask) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		for i := range c.N {
			if req.Limit > 0 && i >= req.Limit {
				return
			}
			if c.CrashAfter > 0 && i == c.CrashAfter {
				crashOnce(c.Marker)
			}
			s := &sdk.Sample{ID: strconv.Itoa(i), Context: fmt.Sprintf("doc %d with the answer a%d", i, i),
				Question: "q" + strconv.Itoa(i), Targets: []string{"a" + strconv.Itoa(i)}, Depth: -1}
			if !yield(s, nil) {
				return
			}
		}
	}
}

func (c *crashTask) CountSamples(_ context.Context, req *sdk.SamplesRequest) (int, error) {
	if req.Limit > 0 {
		return min(c.N, req.Limit), nil
	}
	return c.N, nil
}

// crashPoint crashes its process on the CrashOnCall-th call (once: see
// crashOnce).
type crashPoint struct {
	CrashOnCall int64  `json:"crash_on_call"`
	Marker      string `json:"marker"`
	calls       atomic.Int64
}

func (p *crashPoint) call() {
	if n := p.calls.Add(1); p.CrashOnCall > 0 && n == p.CrashOnCall {
		crashOnce(p.Marker)
	}
}

type crashModel struct{ crashPoint }

func (m *crashModel) Generate(_ context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	m.call()
	return &sdk.GenerateResponse{Text: "a" + req.Sample.ID, FinishReason: "stop"}, nil
}

type crashScorer struct{ crashPoint }

func (s *crashScorer) Score(_ context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	s.call()
	v := 0.0
	if len(req.Sample.Targets) > 0 && req.Prediction == req.Sample.Targets[0] {
		v = 1
	}
	return &sdk.ScoreResponse{Value: v}, nil
}

func crashSet() *sdk.Set {
	set := sdk.NewSet(pluginhost.BuiltinPlugin, "crash-test")
	set.RegisterTask("rtask", func(_ context.Context, o sdk.Options) (sdk.Task, error) {
		t := &crashTask{N: 10}
		return t, o.Decode(t)
	})
	set.RegisterModel("rmodel", func(_ context.Context, o sdk.Options) (sdk.Model, error) {
		m := &crashModel{}
		return m, o.Decode(m)
	})
	set.RegisterScorer("rscorer", func(_ context.Context, o sdk.Options) (sdk.Scorer, error) {
		s := &crashScorer{}
		return s, o.Decode(s)
	})
	return set
}

// runPlugins runs hcl with every component in a plugin process.
func runPlugins(t *testing.T, st *store.Store, hcl string) *Result {
	t.Helper()
	t.Setenv(crashPluginEnv, "1")
	h, err := pluginhost.New(pluginhost.Options{SelfExe: os.Args[0], Builtin: crashSet(), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cfg, err := config.Parse("test.hcl", []byte(hcl), config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := New(Options{Opener: h, Store: st}).Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func checkEverySampleOnce(t *testing.T, st *store.Store, res *Result, n int) {
	t.Helper()
	ev := res.Evals[0]
	if ev.Error != "" || ev.Samples != n || ev.Errors != 0 {
		t.Fatalf("row: samples %d errors %d error %q, want %d samples", ev.Samples, ev.Errors, ev.Error, n)
	}
	if m := ev.Metrics["scorer.rscorer.s"]; m == nil || m.N != n || m.Value != 1 {
		t.Errorf("metric %+v, want mean 1 over %d", m, n)
	}
	recs, err := st.Samples(context.Background(), res.RunID, ev.Name+"/"+ev.Model+"/none")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range recs {
		seen[r.ID]++
	}
	for i := range n {
		if c := seen[strconv.Itoa(i)]; c != 1 {
			t.Errorf("sample %d journaled %d times", i, c)
		}
	}
}

func crashConfig(task, model, scorer string) string {
	return fmt.Sprintf(`
task "rtask" "t" {
%s
}
model "rmodel" "m" {
  max_concurrency = 4
  %s
}
scorer "rscorer" "s" {
%s
}
eval "e" {
  task    = task.rtask.t
  models  = [model.rmodel.m]
  scorers = [scorer.rscorer.s]
}`, task, model, scorer)
}

func TestPluginCrashesMidRun(t *testing.T) {
	const n = 120
	for _, c := range []struct{ name, task, model, scorer string }{
		{"scorer", "n = 120", "", "crash_on_call = 40\n marker = %q"},
		{"task", "n = 120\n crash_after = 37\n marker = %q", "", ""},
		{"model", "n = 120", "crash_on_call = 25\n marker = %q", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "crashed")
			fill := func(s string) string {
				if s != "" && c.name != "" && containsVerb(s) {
					return fmt.Sprintf(s, marker)
				}
				return s
			}
			st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			cfg := crashConfig(fill(c.task), fill(c.model), fill(c.scorer))
			res := runPlugins(t, st, cfg)
			if _, err := os.Stat(marker); err != nil {
				t.Fatal("the plugin never crashed")
			}
			checkEverySampleOnce(t, st, res, n)
			// Resumed: everything from the journal.
			res2 := runPlugins(t, st, cfg)
			if res2.Evals[0].Cached != n {
				t.Errorf("resume: cached %d of %d", res2.Evals[0].Cached, n)
			}
		})
	}
}

func containsVerb(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '%' && s[i+1] == 'q' {
			return true
		}
	}
	return false
}
