package bridge

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// Options are the bridge's own settings. Every other key of the block is
// an option of the "openai" model (model, api_key_env, timeout,
// max_retries, endpoint, extra_body, tokenizer, …) except base_url, which
// the bridge sets.
type Options struct {
	// Command starts the server; "{port}" in any argument is replaced by a
	// free loopback port, e.g. ["vllm", "serve", "org/model", "--port", "{port}"].
	Command []string `json:"command"`
	// Env adds environment variables to the server's environment.
	Env map[string]string `json:"env"`
	// GPUs sets CUDA_VISIBLE_DEVICES: a list of device numbers or a string
	// such as "0,1".
	GPUs json.RawMessage `json:"gpus"`
	// ReadyTimeout bounds the wait for the server to answer; default "10m"
	// (a large model takes minutes to load).
	ReadyTimeout string `json:"ready_timeout"`
	// HealthPath is polled until it answers 200; default: /health, then
	// /v1/models.
	HealthPath string `json:"health_path"`
	// StopGrace is how long the server has to exit after SIGTERM before it
	// is killed; default "10s".
	StopGrace string `json:"stop_grace"`
}

// bridgeKeys are the Options fields, as written in the config.
var bridgeKeys = []string{"command", "env", "gpus", "ready_timeout", "health_path", "stop_grace"}

type settings struct {
	command      []string
	env          []string // KEY=VALUE
	readyTimeout time.Duration
	healthPaths  []string
	stopGrace    time.Duration
	client       map[string]json.RawMessage // the openai options, base_url to be added
}

// parseOptions splits the block into the bridge's options and the openai
// model's, and validates the former.
func parseOptions(opts sdk.Options) (*settings, error) {
	all := map[string]json.RawMessage{}
	if len(opts) > 0 {
		if err := json.Unmarshal(opts, &all); err != nil {
			return nil, &sdk.ConfigError{Msg: fmt.Sprintf("options are not a JSON object: %v", err)}
		}
	}
	if _, ok := all["base_url"]; ok {
		return nil, sdk.Configf("base_url", "the bridge starts the server and sets base_url itself; remove it (or use the \"openai\" model for a server you run)")
	}
	own := map[string]json.RawMessage{}
	for _, k := range bridgeKeys {
		if v, ok := all[k]; ok {
			own[k] = v
			delete(all, k)
		}
	}
	var o Options
	if err := sdk.MustOptions(own).Decode(&o); err != nil {
		return nil, err
	}
	s := &settings{client: all}
	if len(o.Command) == 0 || o.Command[0] == "" {
		return nil, sdk.Configf("command", "required, e.g. [\"vllm\", \"serve\", \"org/model\", \"--port\", \"{port}\"]")
	}
	hasPort := false
	for _, a := range o.Command {
		hasPort = hasPort || strings.Contains(a, "{port}")
	}
	if !hasPort {
		return nil, sdk.Configf("command", "no argument contains {port}; the bridge picks the port and the server must listen on it")
	}
	s.command = o.Command
	for k, v := range o.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, sdk.Configf("env", "invalid variable name %q", k)
		}
		s.env = append(s.env, k+"="+v)
	}
	if len(o.GPUs) > 0 {
		gpus, err := parseGPUs(o.GPUs)
		if err != nil {
			return nil, sdk.Configf("gpus", "%v", err)
		}
		s.env = append(s.env, "CUDA_VISIBLE_DEVICES="+gpus)
	}
	for _, d := range []struct {
		field, val, def string
		dst             *time.Duration
	}{
		{"ready_timeout", o.ReadyTimeout, "10m", &s.readyTimeout},
		{"stop_grace", o.StopGrace, "10s", &s.stopGrace},
	} {
		dur, err := sdk.PositiveDuration(d.field, d.val, d.def)
		if err != nil {
			return nil, err
		}
		*d.dst = dur
	}
	switch {
	case o.HealthPath == "":
		s.healthPaths = []string{"/health", "/v1/models"}
	case strings.HasPrefix(o.HealthPath, "/"):
		s.healthPaths = []string{o.HealthPath}
	default:
		return nil, sdk.Configf("health_path", "want a path starting with /, got %q", o.HealthPath)
	}
	return s, nil
}

// parseGPUs accepts [0, 1] or "0,1".
func parseGPUs(raw json.RawMessage) (string, error) {
	var ids []int
	if err := json.Unmarshal(raw, &ids); err == nil {
		parts := make([]string, len(ids))
		for i, id := range ids {
			if id < 0 {
				return "", fmt.Errorf("device %d is negative", id)
			}
			parts[i] = fmt.Sprint(id)
		}
		return strings.Join(parts, ","), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("want a list of device numbers or a string such as \"0,1\", got %s", raw)
	}
	return s, nil
}

// clientOptions are the openai options with base_url set.
func (s *settings) clientOptions(baseURL string) sdk.Options {
	m := make(map[string]json.RawMessage, len(s.client)+1)
	for k, v := range s.client {
		m[k] = v
	}
	m["base_url"], _ = json.Marshal(baseURL)
	return sdk.MustOptions(m)
}
