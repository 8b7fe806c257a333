package sdktest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var goroot = sync.OnceValue(func() string {
	if r := os.Getenv("GOROOT"); r != "" {
		return r
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
})

// OpticksPath is the path of the public-domain text Go ships with its
// source (Newton's Opticks, about 130K tokens of English): a haystack for
// tests and demos that needs no download. It is "" when the Go root cannot
// be found, so reading it fails and the test says why.
func OpticksPath() string {
	r := goroot()
	if r == "" {
		return ""
	}
	return filepath.Join(r, "src", "testdata", "Isaac.Newton-Opticks.txt")
}

// OpticksFile is OpticksPath for a test: it skips the test when the file is
// absent (a Go installation without its source tree).
func OpticksFile(t testing.TB) string {
	t.Helper()
	p := OpticksPath()
	if _, err := os.Stat(p); err != nil {
		t.Skipf("Go's public-domain test text is absent: %v", err)
	}
	return p
}

// Opticks is the text of OpticksFile.
func Opticks(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(OpticksFile(t))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
