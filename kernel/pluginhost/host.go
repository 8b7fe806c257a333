// Package pluginhost is the kernel's side of the plugin protocol: it finds
// plugins (the hayloft binary's built-ins, plugins named in the config, a
// plugin directory), describes them, checks their sha256 pins, launches one
// process per component over hashicorp/go-plugin, restarts a crashed plugin
// once (a crash in an optional call, a task's count, is restarted without
// using that restart up, and that call is not made again), and makes sure
// no plugin process outlives hayloft.
package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

// BuiltinPlugin is the plugin name of the components built into the hayloft
// binary.
const BuiltinPlugin = "builtin"

// PluginDirEnv names the directory whose executables are plugins.
const PluginDirEnv = "HAYLOFT_PLUGIN_DIR"

// Options configure a Host.
type Options struct {
	// SelfExe is the hayloft binary, re-executed as `SelfExe plugin start
	// <kind> <name>` to serve built-ins and `SelfExe plugin describe` to
	// list them. Default: os.Executable().
	SelfExe string
	// Logger receives host logs and, under each plugin's name, the plugins'
	// own. Default: hclog.Default().
	Logger hclog.Logger
	// Builtin is the hayloft binary's own Set. When given, the built-ins
	// are described from it directly instead of by running `SelfExe plugin
	// describe`; they still run out of process.
	Builtin *sdk.Set
	// InProcess makes built-ins run inside this process through
	// Builtin.New, with no isolation and no restart: for tests and
	// debugging, and, with CheckOnly, for the run's precheck, where
	// nothing is provisioned. It needs Builtin.
	InProcess bool
	// CheckOnly configures components without provisioning them: options
	// are checked, and no server is started or contacted. For `hayloft
	// validate`.
	CheckOnly bool
	// PluginDir is scanned for plugin executables. Default:
	// $HAYLOFT_PLUGIN_DIR; empty means none.
	PluginDir string
	// StartTimeout bounds a plugin's start-up: exec, handshake and dial.
	// Default: one minute.
	StartTimeout time.Duration
}

// Spec is an external plugin named in the config.
type Spec struct {
	Name   string // how the config refers to it, e.g. "acme"
	Source string // path of the plugin binary
	SHA256 string // hex; empty means not pinned
}

// Source is a plugin the host can start.
type Source struct {
	Name    string
	Path    string
	SHA256  string // the pin, if any
	Builtin bool
	FromDir bool // found in the plugin directory rather than the config
}

func (s *Source) String() string {
	if s.Builtin {
		return fmt.Sprintf("plugin %q", s.Name)
	}
	return fmt.Sprintf("plugin %q (%s)", s.Name, s.Path)
}

// ComponentEntry is one component a plugin serves.
type ComponentEntry struct {
	Plugin   string   `json:"plugin"`
	Version  string   `json:"version"`
	Protocol string   `json:"protocol"`
	Kind     sdk.Kind `json:"kind"`
	Name     string   `json:"name"`
	Path     string   `json:"path,omitempty"`
}

// Host launches and tracks plugin processes. It is safe for concurrent use.
// Close it before exiting: it kills every plugin it started.
type Host struct {
	opts   Options
	logger hclog.Logger

	mu     sync.Mutex
	specs  []Spec
	cache  map[describeKey]describeResult
	live   map[*component]struct{}
	closed bool
	// embCache is offered to retrievers only: serving it costs a listener
	// per plugin process, and only retrievers embed.
	embCache sdk.EmbeddingCache
}

// UseEmbeddingCache offers cache (the run's journal) to the retrievers
// opened from now on: to plugin processes over the go-plugin broker, to
// in-process built-ins directly. Plugins never open the journal themselves.
func (h *Host) UseEmbeddingCache(cache sdk.EmbeddingCache) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.embCache = cache
}

func (h *Host) embeddingCache() sdk.EmbeddingCache {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.embCache
}

// New returns a Host. It starts nothing until asked.
func New(opts Options) (*Host, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.Default()
	}
	if opts.InProcess && opts.Builtin == nil {
		return nil, errors.New("pluginhost: in-process mode needs the built-in Set")
	}
	if opts.SelfExe == "" && !opts.InProcess {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("pluginhost: find the hayloft binary: %w", err)
		}
		opts.SelfExe = exe
	}
	if opts.PluginDir == "" {
		opts.PluginDir = os.Getenv(PluginDirEnv)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = startTimeout
	}
	return &Host{
		opts:   opts,
		logger: opts.Logger,
		cache:  map[describeKey]describeResult{},
		live:   map[*component]struct{}{},
	}, nil
}

// AddPlugin registers an external plugin from the config. Names are unique;
// the built-in name is reserved.
func (h *Host) AddPlugin(spec Spec) error {
	if spec.Name == "" {
		return errors.New("plugin without a name")
	}
	if spec.Name == BuiltinPlugin {
		return fmt.Errorf("plugin %q: the name is reserved for hayloft's built-ins", spec.Name)
	}
	if spec.Source == "" {
		return fmt.Errorf("plugin %q: no source binary", spec.Name)
	}
	if spec.SHA256 != "" {
		norm := strings.ToLower(strings.TrimSpace(spec.SHA256))
		if len(norm) != 64 || strings.Trim(norm, "0123456789abcdef") != "" {
			return fmt.Errorf("plugin %q: sha256 %q is not 64 hex digits", spec.Name, spec.SHA256)
		}
		spec.SHA256 = norm
	}
	abs, err := filepath.Abs(spec.Source)
	if err != nil {
		return fmt.Errorf("plugin %q: source %s: %w", spec.Name, spec.Source, err)
	}
	spec.Source = abs
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.specs {
		if s.Name == spec.Name {
			return fmt.Errorf("plugin %q declared twice (%s and %s)", spec.Name, s.Source, spec.Source)
		}
	}
	h.specs = append(h.specs, spec)
	return nil
}

// sources lists every plugin: built-ins, then config plugins in order, then
// the plugin directory sorted by name. A directory plugin named like a
// config plugin is the same plugin if it is the same file, and an error if
// not.
func (h *Host) sources() ([]*Source, error) {
	h.mu.Lock()
	specs := slices.Clone(h.specs)
	h.mu.Unlock()

	out := []*Source{{Name: BuiltinPlugin, Path: h.opts.SelfExe, Builtin: true}}
	byName := map[string]*Source{BuiltinPlugin: out[0]}
	for _, s := range specs {
		src := &Source{Name: s.Name, Path: s.Source, SHA256: s.SHA256}
		out = append(out, src)
		byName[s.Name] = src
	}
	if h.opts.PluginDir == "" {
		return out, nil
	}
	ents, err := os.ReadDir(h.opts.PluginDir)
	if err != nil {
		return nil, fmt.Errorf("plugin directory %s: %w", h.opts.PluginDir, err)
	}
	for _, e := range ents {
		path := filepath.Join(h.opts.PluginDir, e.Name())
		fi, err := os.Stat(path) // follows symlinks
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		name := strings.TrimSuffix(e.Name(), filepath.Ext(e.Name()))
		if prev, ok := byName[name]; ok {
			if !prev.Builtin && sameFile(prev.Path, path) {
				continue
			}
			return nil, fmt.Errorf("plugin name %q is used by both %s and %s", name, describeSource(prev), path)
		}
		src := &Source{Name: name, Path: path, FromDir: true}
		out = append(out, src)
		byName[name] = src
	}
	return out, nil
}

func describeSource(s *Source) string {
	if s.Builtin {
		return "hayloft's built-ins"
	}
	return s.Path
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// Describe lists every component of every plugin. A plugin that cannot be
// described is reported in the error (one line each, joined) while the
// others are still listed.
func (h *Host) Describe(ctx context.Context) ([]ComponentEntry, error) {
	srcs, err := h.sources()
	if err != nil {
		return nil, err
	}
	var (
		out  []ComponentEntry
		errs []error
	)
	for _, src := range srcs {
		info, err := h.describe(ctx, src)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, c := range info.Components {
			e := ComponentEntry{Plugin: src.Name, Version: info.Version, Protocol: info.Protocol, Kind: c.Kind, Name: c.Name}
			if !src.Builtin {
				e.Path = src.Path
			}
			out = append(out, e)
		}
	}
	return out, errors.Join(errs...)
}

// Resolve picks the plugin serving kind/name. An explicit pluginName wins;
// otherwise exactly one plugin may serve it: two plugins serving the same
// name is an error naming both, never a silent shadowing.
func (h *Host) Resolve(ctx context.Context, kind sdk.Kind, name, pluginName string) (*Source, error) {
	srcs, err := h.sources()
	if err != nil {
		return nil, err
	}
	if pluginName != "" {
		var names []string
		for _, src := range srcs {
			if src.Name != pluginName {
				names = append(names, src.Name)
				continue
			}
			info, err := h.describe(ctx, src)
			if err != nil {
				return nil, err
			}
			if !serves(info, kind, name) {
				return nil, fmt.Errorf("%s has no %s %q", src, kind, name)
			}
			return src, nil
		}
		return nil, fmt.Errorf("no plugin %q (known: %s)", pluginName, strings.Join(names, ", "))
	}
	var found []*Source
	var known []string
	for _, src := range srcs {
		info, err := h.describe(ctx, src)
		if err != nil {
			return nil, fmt.Errorf("looking for %s %q: %w", kind, name, err)
		}
		if serves(info, kind, name) {
			found = append(found, src)
		}
		for _, c := range info.Components {
			if c.Kind == kind {
				known = append(known, c.Name)
			}
		}
	}
	switch len(found) {
	case 0:
		msg := fmt.Sprintf("no plugin serves %s %q", kind, name)
		if near := config.Suggest(name, known); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		return nil, errors.New(msg)
	case 1:
		return found[0], nil
	}
	var who []string
	for _, s := range found {
		who = append(who, s.String())
	}
	sort.Strings(who)
	return nil, fmt.Errorf("%s %q is served by %s: name the plugin to use", kind, name, strings.Join(who, " and "))
}

func serves(info plugin.DescribeInfo, kind sdk.Kind, name string) bool {
	for _, c := range info.Components {
		if c.Kind == kind && c.Name == name {
			return true
		}
	}
	return false
}

// Close ends every component the host opened and kills their processes. It
// waits for them to exit.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	live := make([]*component, 0, len(h.live))
	for c := range h.live {
		live = append(live, c)
	}
	h.mu.Unlock()

	var wg sync.WaitGroup
	errs := make([]error, len(live))
	for i, c := range live {
		wg.Go(func() { errs[i] = c.close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (h *Host) track(c *component) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errors.New("plugin host is closed")
	}
	h.live[c] = struct{}{}
	return nil
}

func (h *Host) forget(c *component) {
	h.mu.Lock()
	delete(h.live, c)
	h.mu.Unlock()
}
