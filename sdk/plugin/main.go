package plugin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/hayloft/hayloft/sdk"
)

// DescribeInfo is what `<plugin> describe` prints.
type DescribeInfo struct {
	Name       string              `json:"name"`
	Version    string              `json:"version"`
	Protocol   string              `json:"protocol"`
	Components []sdk.ComponentInfo `json:"components"`
}

// Describe lists what set serves.
func Describe(set *sdk.Set) DescribeInfo {
	return DescribeInfo{Name: set.Name, Version: set.Version, Protocol: protocolName(), Components: set.Components()}
}

// LogLevelEnv is the environment variable through which a host passes its
// log level to the plugins it starts.
const LogLevelEnv = "HAYLOFT_PLUGIN_LOG_LEVEL"

// Main is a plugin binary's main: `describe` prints what set serves as JSON,
// `start <kind> <name>` serves that component to the hayloft that started
// the process. Main does not return.
func Main(set *sdk.Set) {
	args := os.Args[1:]
	switch {
	case len(args) == 1 && args[0] == "describe":
		if err := json.NewEncoder(os.Stdout).Encode(Describe(set)); err != nil {
			fmt.Fprintf(os.Stderr, "%s: describe: %v\n", set.Name, err)
			os.Exit(1)
		}
		os.Exit(0)
	case len(args) == 3 && args[0] == "start":
		if err := ServeComponent(set, sdk.Kind(args[1]), args[2]); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", set.Name, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "usage: %s describe\n       %s start <kind> <name>\n\nThis is a hayloft plugin (%s); hayloft starts it itself.\n",
		os.Args[0], os.Args[0], protocolName())
	os.Exit(2)
}

// ServeComponent serves set's component kind/name over go-plugin until the
// host kills the process. The component itself is built by the host's
// Configure call. It returns an error only if set lacks the component.
func ServeComponent(set *sdk.Set, kind sdk.Kind, name string) error {
	if !set.Has(kind, name) {
		return fmt.Errorf("no %s %q in plugin %q", kind, name, set.Name)
	}
	level := hclog.LevelFromString(os.Getenv(LogLevelEnv))
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	// JSON on stderr is what go-plugin's host parses back into log entries
	// under the plugin's name.
	logger := hclog.New(&hclog.LoggerOptions{
		Name:       set.Name,
		Level:      level,
		Output:     os.Stderr,
		JSONFormat: true,
	})
	hclog.SetDefault(logger)

	srv := NewServer(set, logger)
	srv.kind, srv.name = kind, name

	go watchParent(logger, os.Getppid())

	if dir := os.Getenv(CPUProfileEnv); dir != "" {
		stop, err := startCPUProfile(dir, kind, name)
		if err != nil {
			logger.Warn("cpu profile", "error", err)
		} else {
			defer stop()
		}
	}

	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: goplugin.HandshakeConfig{
			ProtocolVersion:  uint(servedVersion()),
			MagicCookieKey:   magicCookieKey,
			MagicCookieValue: magicCookieValue,
		},
		Plugins: goplugin.PluginSet{PluginKey: &grpcPlugin{server: srv}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, ServerOptions(logger)...)...)
		},
		Logger: logger,
	})
	return nil
}

// watchParent exits the process when its parent dies. go-plugin kills its
// plugins on a clean shutdown, but a host killed with SIGKILL gets no say,
// and the plugin would be reparented and live on. Linux's PDEATHSIG is tied
// to the parent thread, not process, which Go's runtime does not pin, so
// polling the parent pid is the dependable way.
func watchParent(logger hclog.Logger, ppid int) {
	if ppid <= 1 {
		return // started by init itself; nothing to watch
	}
	for range time.Tick(200 * time.Millisecond) {
		if os.Getppid() != ppid {
			logger.Warn("parent process is gone; exiting", "parent_pid", ppid)
			os.Exit(3)
		}
	}
}

// CPUProfileEnv names a directory: when set, every plugin process writes a
// CPU profile there (<kind>-<name>-<pid>.pprof) until it is shut down, so a
// component's cost can be measured in the process it really runs in.
const CPUProfileEnv = "HAYLOFT_PLUGIN_CPUPROFILE"

func startCPUProfile(dir string, kind sdk.Kind, name string) (func(), error) {
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%s-%d.pprof", kind, name, os.Getpid())))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		WriteAllocsProfile(filepath.Join(dir, fmt.Sprintf("allocs-%s-%s-%d.pprof", kind, name, os.Getpid())))
	}, nil
}

// WriteAllocsProfile writes the process's allocation profile (which the
// runtime samples whatever the settings) to path, beside a CPU profile:
// what a run allocates is what its fresh pages and collections cost.
// Errors are ignored: a profile is a diagnostic.
func WriteAllocsProfile(path string) {
	if f, err := os.Create(path); err == nil {
		pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
}
