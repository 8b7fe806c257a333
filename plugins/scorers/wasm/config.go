package wasm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// Defaults of the options; see README.md in sdk/wasm.
const (
	defaultMemoryMB = 16
	defaultTimeout  = 2 * time.Second
	defaultIOBytes  = 1 << 20
	// maxMemoryMB is wasm32's address space: 65536 pages of 64 KiB.
	maxMemoryMB = 4096
	// maxIOBytes keeps a length within the 32 bits the ABI has for it.
	maxIOBytes = 1<<32 - 1
)

// config is the scorer's options as the config file gives them.
type config struct {
	Module         string          `json:"module" hayloft:"path"`
	SHA256         string          `json:"sha256"`
	MemoryMB       int             `json:"memory_mb"`
	Timeout        string          `json:"timeout"`
	MaxInputBytes  int64           `json:"max_input_bytes"`
	MaxOutputBytes int64           `json:"max_output_bytes"`
	Options        json.RawMessage `json:"options"`
	// IncludeContext sends the sample's context to the module. Off by
	// default: a long-context sample's document is most of its bytes, would
	// overrun max_input_bytes, and few scorers read it.
	IncludeContext bool `json:"include_context"`
	// FreshInstance gives every call an instance of its own, thrown away
	// after it, for modules that are not pure functions of their input.
	// Off by default: instances are pooled and reused, which costs a call
	// its score alone instead of a module start, and exposes nothing new,
	// since one scorer sees every sample of its run anyway.
	FreshInstance bool `json:"fresh_instance"`

	timeout time.Duration
	// baseDir is the config file's directory ("" without one), which
	// module resolves against and which may hold an unpinned module.
	baseDir string
	// cacheDir is where compiled code is kept; empty means the user cache
	// directory. Tests point it at a temporary directory.
	cacheDir string
	// unmetered skips the metering rewrite, as for a module it refuses;
	// tests use it to run that path with modules it would meter.
	unmetered bool
}

// decodeConfig decodes opts strictly, fills defaults and checks every value.
// Errors are *sdk.ConfigError naming the option.
func decodeConfig(opts sdk.Options) (*config, error) {
	c := &config{
		MemoryMB:       defaultMemoryMB,
		Timeout:        defaultTimeout.String(),
		MaxInputBytes:  defaultIOBytes,
		MaxOutputBytes: defaultIOBytes,
	}
	if err := opts.Decode(c); err != nil {
		return nil, err
	}
	c.baseDir = opts.BaseDir()
	if c.Module == "" {
		return nil, sdk.Configf("module", "required: the path of a .wasm file")
	}
	if c.SHA256 != "" {
		c.SHA256 = strings.ToLower(c.SHA256)
		if b, err := hex.DecodeString(c.SHA256); err != nil || len(b) != sha256.Size {
			return nil, sdk.Configf("sha256", "want 64 hexadecimal digits, got %q", c.SHA256)
		}
	}
	if c.MemoryMB < 1 || c.MemoryMB > maxMemoryMB {
		return nil, sdk.Configf("memory_mb", "want 1 to %d, got %d", maxMemoryMB, c.MemoryMB)
	}
	d, err := time.ParseDuration(c.Timeout)
	if err != nil {
		return nil, sdk.Configf("timeout", "want a duration such as \"2s\", got %q", c.Timeout)
	}
	if d <= 0 {
		return nil, sdk.Configf("timeout", "want a positive duration, got %q", c.Timeout)
	}
	c.timeout = d
	if c.MaxInputBytes < 1 || c.MaxInputBytes > maxIOBytes {
		return nil, sdk.Configf("max_input_bytes", "want 1 to %d, got %d", int64(maxIOBytes), c.MaxInputBytes)
	}
	if c.MaxOutputBytes < 1 || c.MaxOutputBytes > maxIOBytes {
		return nil, sdk.Configf("max_output_bytes", "want 1 to %d, got %d", int64(maxIOBytes), c.MaxOutputBytes)
	}
	if t := bytes.TrimSpace(c.Options); len(t) > 0 && !bytes.Equal(t, []byte("null")) && t[0] != '{' {
		return nil, sdk.Configf("options", "want an object, got %s", abbreviate(string(t), 40))
	}
	return c, nil
}

// readModule reads the module file and checks its hash. A module under the
// working directory, or under the directory of the config file that names
// it, belongs to the project and may go unpinned; any other module must name
// its sha256, since it could be replaced behind the project's back.
func readModule(c *config) ([]byte, error) {
	code, err := os.ReadFile(c.Module)
	if err != nil {
		return nil, sdk.Configf("module", "%v", err)
	}
	sum := sha256.Sum256(code)
	got := hex.EncodeToString(sum[:])
	if c.SHA256 != "" {
		if got != c.SHA256 {
			return nil, sdk.Configf("sha256", "module %s does not match: config says %s, file has %s", c.Module, c.SHA256, got)
		}
		return code, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, sdk.Configf("module", "%v", err)
	}
	for _, dir := range []string{wd, c.baseDir} {
		if dir == "" {
			continue
		}
		inside, err := under(dir, c.Module)
		if err != nil {
			return nil, sdk.Configf("module", "%v", err)
		}
		if inside {
			return code, nil
		}
	}
	where := "the working directory"
	if c.baseDir != "" {
		where += " and the config file's directory"
	}
	return nil, sdk.Configf("sha256", "required for module %s, which is outside %s (the file has %s)", c.Module, where, got)
}

// under reports whether path, with symbolic links resolved, lies under dir.
// Resolving links matters: a link inside the project may point anywhere.
func under(dir, path string) (bool, error) {
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return false, err
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		return false, nil
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)), nil
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
