package config

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/hayloft/hayloft/sdk"
)

// Config is a decoded configuration file.
type Config struct {
	Path       string // the main file, as given to Load or Parse
	Source     []byte // the file's raw text, for the journal and its hash
	Settings   Settings
	Plugins    []*Plugin
	Components []*Component // declared components, in file order
	Evals      []*Eval      // in file order
}

// Settings are the kernel's own settings after layering defaults, the file's
// top-level attributes, HAYLOFT_* environment variables and flags.
type Settings struct {
	// Store is the results database: a file path made absolute against the
	// current directory, or a DSN (anything with "://") left as written.
	Store    string
	LogLevel string // trace, debug, info, warn, error or off
	// PluginDir is absolute, or "" when not set. Written in the file it is
	// relative to the file, like plugin sources; from the environment or a
	// flag, relative to the current directory.
	PluginDir string
	// Concurrency is the max_concurrency of models that do not set their own.
	Concurrency int
	// Shards is the shard count of a job array whose environment gives only
	// the index (a Kubernetes Indexed Job's JOB_COMPLETION_INDEX, a
	// re-submitted Slurm task); 0 when not set. See kernel/shard.
	Shards int
	// JournalSync is when a journaled result counts: "batch" (fsynced with
	// its group commit; survives a power loss) or "os" (written to the OS;
	// survives kill -9 only, for less CPU). "" is "batch".
	JournalSync string
}

// Plugin is an external plugin binary declared with a plugin block.
type Plugin struct {
	Name   string
	Source string // absolute path, resolved against the config file's directory
	SHA256 string // lower-case hex, or "" when not pinned
	Range  hcl.Range
}

// Component is one configured instance: a task, model, scorer or retriever
// block, or a scorer named by a bare string in an eval.
type Component struct {
	Kind sdk.Kind
	Type string // the component's name as its plugin registers it, e.g. "openai"
	Name string // the instance name, e.g. "local"
	// Plugin names the plugin that serves the component; "" resolves by name.
	Plugin  string
	Options sdk.Options
	Model   *ModelSettings // non-nil exactly for models
	// Dir is the absolute directory of the config file that declared the
	// component: relative path options resolve against it (OpenOptions).
	Dir string

	DeclRange hcl.Range
	// AttrRanges maps each option name to the attribute that set it.
	AttrRanges map[string]hcl.Range
}

// OpenOptions are the options a component is opened with: Options carrying
// Dir, so that a relative path in them (a haystack, a WASM module) names a
// file beside the config file whatever the current directory, as a plugin
// block's source does. Options itself stays as the config gave it: it is
// what the journal records and what a model's cache identity is made of.
func (c *Component) OpenOptions() sdk.Options {
	return c.Options.WithBaseDir(c.Dir)
}

// ModelSettings are the kernel-level attributes of a model block.
type ModelSettings struct {
	// MaxConcurrency is the hard cap on requests in flight.
	MaxConcurrency int
	// InitialConcurrency is where the adaptive limit starts (0: at the
	// cap). The limit halves when the server answers 429 or 503 and grows
	// back while latency holds.
	InitialConcurrency int
	// LoadProbe reads the server's queue so the limit stops growing while
	// requests wait there: "vllm" (/metrics) or "llamacpp" (/slots).
	LoadProbe     string
	ContextWindow int // tokens; 0 = unknown
	// PrefixCacheTokens is the server's prefix (KV) cache in tokens, which
	// the send order keeps its working set within; 0 = unknown.
	PrefixCacheTokens int
	// ServerSlots is llama-server's slots (-np), each caching its own
	// prefix: the send order pins each shared prefix to one slot (id_slot).
	// 0 = ask the server (/props).
	ServerSlots int
	// PricePromptPerMTok and PriceCompletionPerMTok are a hosted API's
	// prices per million prompt and completion tokens, for `hayloft plan`'s
	// cost; 0 = not given.
	PricePromptPerMTok     float64
	PriceCompletionPerMTok float64
	Truncation             string // middle, left, right or none
	Params                 sdk.GenerationParams
}

// Eval is one eval block: a task run against every model × retriever, scored
// by every scorer.
type Eval struct {
	Name       string
	Task       *Component
	Models     []*Component
	Retrievers []*Component // a nil entry means no retriever (the full context)
	Scorers    []*Component
	Limit      int    // 0 = every sample
	Order      string // OrderPrefix or OrderTask
	DeclRange  hcl.Range
}

// LoadOptions carry what Load takes from outside the file.
type LoadOptions struct {
	// Env is the environment in os.Environ form, for HAYLOFT_* overrides and
	// env(). Nil means an empty environment, which keeps tests hermetic; the
	// CLI passes os.Environ().
	Env []string
	// Flags override everything else. Keys: "store", "log_level",
	// "plugin_dir", "concurrency"; a nil value is ignored.
	Flags map[string]any
}

// Ref is the component's reference as written in an eval:
// "model.openai.local".
func (c *Component) Ref() string {
	return string(c.Kind) + "." + c.Type + "." + c.Name
}

// label is the block header as written: model "openai" "local".
func (c *Component) label() string {
	return fmt.Sprintf("%s %q %q", c.Kind, c.Type, c.Name)
}

// Load reads and decodes the configuration file at path.
func Load(path string, opts LoadOptions) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	return Parse(path, src, opts)
}

// Parse decodes src as the configuration file filename. Relative paths in the
// file are resolved against filename's directory.
func Parse(filename string, src []byte, opts LoadOptions) (*Config, error) {
	d, err := newDecoder(filename, opts)
	if err != nil {
		return nil, err
	}
	return d.decode(src)
}

// posString renders a range's start as file:line:col.
func posString(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// Error holds every problem found in a configuration, each positioned.
type Error struct {
	Diags hcl.Diagnostics
	// Files lets WriteText quote the offending source lines.
	Files map[string]*hcl.File
}

// Error lists one problem per line as "file:line:col: message".
func (e *Error) Error() string {
	var b strings.Builder
	for _, d := range e.Diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(formatDiag(d))
	}
	return b.String()
}

// WriteText renders the problems the way HCL tools do, with the source lines
// they point at, wrapped at width columns (0 = no wrapping).
func (e *Error) WriteText(w io.Writer, width uint, color bool) error {
	return hcl.NewDiagnosticTextWriter(w, e.Files, width, color).WriteDiagnostics(e.Diags)
}

func formatDiag(d *hcl.Diagnostic) string {
	msg := d.Summary
	if d.Detail != "" {
		msg += "; " + d.Detail
	}
	if d.Subject == nil {
		return msg
	}
	return posString(*d.Subject) + ": " + msg
}
