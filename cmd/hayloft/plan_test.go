package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/kernel/runner"
	"github.com/hayloft/hayloft/plugins/models/openai/openaitest"
)

// planConfig is a NIAH grid against an OpenAI-compatible model whose server
// does not exist: planning must not need it.
func planConfig(t *testing.T) string {
	return planConfigAt(t, "http://127.0.0.1:1/v1")
}

// planConfigAt is planConfig with the model's server at baseURL.
func planConfigAt(t *testing.T, baseURL string) string {
	t.Helper()
	dir := t.TempDir()
	haystack := filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt")
	return writeConfig(t, dir, fmt.Sprintf(`task "niah" "t" {
  haystack = %q
  lengths  = [1000, 2000, 4000, 8000]
  depths   = [0, 50, 100]
}
model "openai" "far" {
  base_url            = %q
  model               = "nobody"
  context_window      = 6000
  prefix_cache_tokens = 6000
  max_tokens          = 50
  price_prompt_per_mtok     = 2
  price_completion_per_mtok = 8
}
eval "needle" {
  task    = task.niah.t
  models  = [model.openai.far]
  scorers = ["niah"]
}
`, haystack, baseURL))
}

func TestPlanNIAHWithoutServer(t *testing.T) {
	cfg := planConfig(t)
	r := hayloft(t, filepath.Dir(cfg), "plan", cfg, "--json", "--prefill-tps", "1000", "--decode-tps", "50")
	check{}.verify(t, r)
	var rows []runner.PlanRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("stdout is not a JSON plan: %v\n%s", err, r.stdout)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1 (one eval, one model): %+v", len(rows), rows)
	}
	p := rows[0]
	if p.Samples != 12 {
		t.Errorf("samples %d, want 4 lengths × 3 depths = 12", p.Samples)
	}
	if p.Truncated != 3 {
		t.Errorf("truncated %d, want the 3 prompts of length 8000 cut to the 6000-token window", p.Truncated)
	}
	if p.TreeTokens <= 0 || p.TreeTokens > p.PromptTokens {
		t.Errorf("tree %d tokens, want in (0, prompt tokens %d]", p.TreeTokens, p.PromptTokens)
	}
	if p.OrderPrefill > p.DatasetPrefill || p.DatasetPrefill > p.PromptTokens {
		t.Errorf("prefill with hayloft's order %d, dataset order %d, prompts %d: want order ≤ dataset ≤ prompts", p.OrderPrefill, p.DatasetPrefill, p.PromptTokens)
	}
	if p.CacheTokens != 6000 || p.CacheSource != "prefix_cache_tokens in config" {
		t.Errorf("cache %d from %q, want 6000 from the config", p.CacheTokens, p.CacheSource)
	}
	if p.DecodeTokens != 12*50 {
		t.Errorf("decode budget %d, want 12 × max_tokens 50", p.DecodeTokens)
	}
	if cost := (float64(p.PromptTokens)*2 + float64(p.DecodeTokens)*8) / 1e6; !p.Priced || math.Abs(p.Cost-cost) > 1e-12 {
		t.Errorf("cost %g (priced %v), want %g", p.Cost, p.Priced, cost)
	}
	want := float64(p.OrderPrefill)/1000 + float64(p.DecodeTokens)/50
	if math.Abs(p.Seconds-want) > 1e-9 {
		t.Errorf("seconds %g, want %g", p.Seconds, want)
	}
}

func TestPlanText(t *testing.T) {
	cfg := planConfig(t)
	r := hayloft(t, filepath.Dir(cfg), "plan", cfg)
	check{stdout: []string{"tree tok", "model.openai.far", "prefix_cache_tokens in config", "3 prompts truncated", "cost at most"}}.verify(t, r)
}

func TestPlanBadFlags(t *testing.T) {
	cfg := planConfig(t)
	for _, tc := range []struct {
		name string
		args []string
		want check
	}{
		{"no config", []string{"plan"}, check{code: 2, stderr: []string{"usage: hayloft plan CONFIG"}}},
		{"negative prefill", []string{"plan", cfg, "--prefill-tps", "-5"}, check{code: 2, stderr: []string{"--prefill-tps -5: must not be negative"}}},
		{"negative decode", []string{"plan", cfg, "--decode-tps", "-1"}, check{code: 2, stderr: []string{"--decode-tps -1: must not be negative"}}},
		{"not a number", []string{"plan", cfg, "--prefill-tps", "fast"}, check{code: 2, stderr: []string{"prefill-tps"}}},
		{"unknown eval", []string{"plan", cfg, "--eval", "haystack"}, check{code: 2, stderr: []string{"haystack"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.verify(t, hayloft(t, filepath.Dir(cfg), tc.args...))
		})
	}
}

// --calibrate measures the rates against the live server with three
// streamed requests and uses them instead of the flags', saying so; the
// rates measured depend on the machine, so only their use is checked.
func TestPlanCalibrate(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Options{Model: "nobody", Engine: &openaitest.EngineConfig{RealTime: true, StepSeconds: 0.002, TokenSeconds: 1.0 / 50000}})
	defer srv.Close()
	cfg := planConfigAt(t, srv.BaseURL())
	r := hayloft(t, filepath.Dir(cfg), "plan", cfg, "--json", "--calibrate", "--prefill-tps", "1", "--decode-tps", "1")
	check{}.verify(t, r)
	var rows []runner.PlanRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("plan --json: %v\n%s", err, r.stdout)
	}
	p := rows[0]
	if srv.Requests("/v1/chat/completions") != 3 {
		t.Errorf("the server saw %d requests, want calibration's 3", srv.Requests("/v1/chat/completions"))
	}
	if p.PrefillTPS == 1 || p.DecodeTPS == 1 || p.PrefillTPS <= 0 || p.DecodeTPS <= 0 || !strings.Contains(p.Rates, "measured against "+srv.BaseURL()) {
		t.Errorf("rates %g, %g (%s): want measured ones instead of the flags'", p.PrefillTPS, p.DecodeTPS, p.Rates)
	}
	if want := float64(p.OrderPrefill)/p.PrefillTPS + float64(p.DecodeTokens)/p.DecodeTPS; math.Abs(p.Seconds-want) > 1e-9*want {
		t.Errorf("seconds %g, want %g at the measured rates", p.Seconds, want)
	}
	text := hayloft(t, filepath.Dir(cfg), "plan", cfg, "--calibrate")
	check{stdout: []string{"measured against", "instead of --prefill-tps/--decode-tps"}}.verify(t, text)
}

// A server behind an API key is not calibrated: the key stays in the
// model's plugin.
func TestPlanCalibrateKeyed(t *testing.T) {
	cfg := planConfig(t)
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	keyed := strings.Replace(string(b), `model               = "nobody"`, `model               = "nobody"
  api_key_env         = "HAYLOFT_TEST_KEY"`, 1)
	if keyed == string(b) {
		t.Fatal("the config's model line moved")
	}
	if err := os.WriteFile(cfg, []byte(keyed), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HAYLOFT_TEST_KEY", "sk-test")
	check{code: 1, stderr: []string{"--calibrate: model model.openai.far uses an API key", "--prefill-tps"}}.verify(t, hayloft(t, filepath.Dir(cfg), "plan", cfg, "--calibrate"))
}
