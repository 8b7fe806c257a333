package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/hayloft/hayloft/sdk/plugin"
)

// startKernelProfile writes a CPU profile of this process to the directory
// HAYLOFT_PLUGIN_CPUPROFILE names, beside those of the plugin processes, so
// one run profiles the kernel and every component in the process each
// really runs in (bench/throughput -profile). The returned func stops it.
func startKernelProfile(cmd string) (func(), error) {
	dir := os.Getenv(plugin.CPUProfileEnv)
	if dir == "" {
		return func() {}, nil
	}
	path := filepath.Join(dir, fmt.Sprintf("kernel-%s-%d.pprof", cmd, os.Getpid()))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", plugin.CPUProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		plugin.WriteAllocsProfile(filepath.Join(dir, fmt.Sprintf("allocs-kernel-%s-%d.pprof", cmd, os.Getpid())))
	}, nil
}
