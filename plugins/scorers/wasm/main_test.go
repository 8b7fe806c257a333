package wasm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Modules built once per test binary run by TestMain, by name.
var (
	modulePath = map[string]string{}
	buildErr   error
	// testCacheDir is the compilation cache every test shares. It is the
	// scorer's default, the user cache directory, so that modules compile
	// once, not once per run (Go builds them byte for byte the same each
	// time); HAYLOFT_WASM_FRESH_CACHE=1 uses an empty one instead.
	testCacheDir string
)

// testModules are the Go sources of the modules the tests run, relative to
// this package's directory.
var testModules = map[string]string{
	"hostile":  "./testdata/hostile",
	"sleeper":  "./testdata/sleeper",
	"badabi":   "./testdata/badabi",
	"jsonabi":  "./testdata/jsonabi",
	"badwire":  "./testdata/badwire",
	"coverage": "../../../examples/wasm-scorer",
}

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "hayloft-wasm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	testCacheDir = filepath.Join(dir, "cache")
	if base, err := os.UserCacheDir(); err == nil && os.Getenv("HAYLOFT_WASM_FRESH_CACHE") == "" {
		// wazero keys its cache by its own version, which a test binary
		// does not know (it says "dev"), so the test cache is keyed by the
		// version go.mod requires.
		if v := requiredVersion("../../../go.mod", "github.com/tetratelabs/wazero"); v != "" {
			testCacheDir = filepath.Join(base, "hayloft", "wazero-test", v)
		}
	}
	buildErr = buildModules(dir)
	return m.Run()
}

// buildModules compiles every test module to dir, in parallel: each build
// mostly links a large Go runtime, so they overlap well.
func buildModules(dir string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the go command builds the test modules: %w", err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
	)
	for name, src := range testModules {
		out := filepath.Join(dir, name+".wasm")
		modulePath[name] = out
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-o", out, src)
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
			if msg, err := cmd.CombinedOutput(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("build %s: %v\n%s", src, err, msg))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// module returns the path and sha256 of a built test module.
func module(t testing.TB, name string) (path, sum string) {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("test modules did not build: %v", buildErr)
	}
	path = modulePath[name]
	return path, fileSHA256(t, path)
}

func fileSHA256(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// requiredVersion returns the version of module that the go.mod at path
// requires, or "" if it cannot tell.
func requiredVersion(path, module string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	return ""
}
