package rougel

import (
	"github.com/hayloft/hayloft/sdk/sdktest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPorterAgainstNLTK stems every word of Newton's Opticks with NLTK's
// own PorterStemmer, when a python3 with nltk is installed (Debian:
// python3-nltk), and compares. Skipped otherwise.
func TestPorterAgainstNLTK(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	py, ok := pythonWith("nltk.stem.porter")
	if !ok {
		t.Skip("no python3 with nltk.stem.porter installed")
	}
	data, err := os.ReadFile(sdktest.OpticksPath())
	if err != nil {
		t.Skip(err)
	}
	seen := map[string]bool{}
	var words []string
	for _, w := range regexp.MustCompile(`[a-z0-9]+`).FindAllString(strings.ToLower(string(data)), -1) {
		if len(w) > 3 && !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	slices.Sort(words)
	cmd := exec.Command(py, "-c", `import sys
from nltk.stem.porter import PorterStemmer
p = PorterStemmer()
print("\n".join(p.stem(w) for w in sys.stdin.read().split("\n")))`)
	cmd.Stdin = strings.NewReader(strings.Join(words, "\n"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nltk: %v", err)
	}
	want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(want) != len(words) {
		t.Fatalf("nltk returned %d stems for %d words", len(want), len(words))
	}
	bad := 0
	for i, w := range words {
		if got := stem(w); got != want[i] {
			if bad++; bad <= 10 {
				t.Errorf("stem(%q) = %q, NLTK says %q", w, got, want[i])
			}
		}
	}
	t.Logf("%d words compared, %d differ", len(words), bad)
}

// pythonWith returns a python3 that can import module: the one on PATH, or
// the system one (Debian's python3-nltk and python3-regex install there,
// beside any pyenv or venv python first on PATH).
func pythonWith(module string) (string, bool) {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import "+module).Run() == nil {
			return path, true
		}
	}
	return "", false
}
