package bleu

import (
	"encoding/json"
	"github.com/hayloft/hayloft/plugins/internal/pytext"
	"github.com/hayloft/hayloft/sdk/sdktest"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The tokenizers rewrite sacrebleu's re.sub passes as scans. This test runs
// the same patterns through Python's re and regex modules (the engines
// sacrebleu uses), when a python3 with the regex module is installed
// (Debian: python3-regex), on English, Chinese and random punctuation-heavy
// input, and compares. Skipped otherwise.
func TestTokenizersAgainstPythonRegex(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	py, ok := pythonWith("regex")
	if !ok {
		t.Skip("no python3 with regex installed")
	}
	var inputs []string
	if b, err := os.ReadFile(sdktest.OpticksPath()); err == nil {
		lines := strings.Split(string(b), "\n")
		inputs = append(inputs, lines[:min(len(lines), 3000)]...)
	}
	if b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "shared", "data", "haystack", "zh", "The_Story_of_the_Stone.txt")); err == nil {
		lines := strings.Split(string(b), "\n")
		inputs = append(inputs, lines[:min(len(lines), 1000)]...)
	}
	pieces := strings.Split("a b 1 . , - & ; ' \" ( ) [ ] { } < > / \\ : @ ! ? $ % ^ * + = | ~ `   \t \n &quot; &amp; &lt; &gt; <skipped> -\n 中 。 ‐ … € « » ١ ² Σ İ ÿ", " ")
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for n := rng.IntN(30); n > 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		inputs = append(inputs, b.String())
	}
	// Dense strings over the characters the 13a rules look at, where
	// consecutive matches interact ("5.,x", "a.,.b", "1--2").
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for n := rng.IntN(12); n > 0; n-- {
			b.WriteByte("1a.,- "[rng.IntN(6)])
		}
		inputs = append(inputs, b.String())
	}
	in, _ := json.Marshal(inputs)
	cmd := exec.Command(py, "-c", pyTokenizers)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var want map[string][]string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for name, outs := range want {
		bad := 0
		for i, s := range inputs {
			var got string
			if name == "lower" {
				got = pytext.Lower(s)
			} else {
				f, _ := tokenizerFor(name)
				got = normalizeSpace(f(pytext.RStrip(s)))
			}
			if got != outs[i] {
				if bad++; bad <= 5 {
					t.Errorf("%s(%q)\n  go %q\n  py %q", name, s, got, outs[i])
				}
			}
		}
		t.Logf("%s: %d inputs, %d differ", name, len(inputs), bad)
	}
}

// pyTokenizers restates sacrebleu's tokenizers (13a, zh, intl, char) and
// str.lower in Python, pattern for pattern.
const pyTokenizers = `import sys, json, re, regex
R = [(re.compile(r'([\{-\~\[-\` + "`" + ` -\&\(-\+\:-\@\/])'), r' \1 '), (re.compile(r'([^0-9])([\.,])'), r'\1 \2 '),
     (re.compile(r'([\.,])([^0-9])'), r' \1 \2'), (re.compile(r'([0-9])(-)'), r'\1 \2 ')]
def post(line):
    for r, s in R:
        line = r.sub(s, line)
    return ' '.join(line.strip().split())
def t13a(line):
    line = line.replace('<skipped>', '').replace('-\n', '').replace('\n', ' ')
    line = line.replace('&quot;', '"').replace('&amp;', '&').replace('&lt;', '<').replace('&gt;', '>')
    return post(' ' + line + ' ')
RANGES = [('\u3400', '\u4db5'), ('\u4e00', '\u9fa5'), ('\u9fa6', '\u9fbb'), ('\uf900', '\ufa2d'), ('\ufa30', '\ufa6a'),
          ('\ufa70', '\ufad9'), ('\u20000', '\u2a6d6'), ('\u2f800', '\u2fa1d'), ('\uff00', '\uffef'), ('\u2e80', '\u2eff'),
          ('\u3000', '\u303f'), ('\u31c0', '\u31ef'), ('\u2f00', '\u2fdf'), ('\u2ff0', '\u2fff'), ('\u3100', '\u312f'),
          ('\u31a0', '\u31bf'), ('\ufe10', '\ufe1f'), ('\ufe30', '\ufe4f'), ('\u2600', '\u26ff'), ('\u2700', '\u27bf'),
          ('\u3200', '\u32ff'), ('\u3300', '\u33ff')]
def tzh(line):
    return post(''.join(' ' + c + ' ' if any(a <= c <= b for a, b in RANGES) else c for c in line.strip()))
I = [(regex.compile(r'(\P{N})(\p{P})'), r'\1 \2 '), (regex.compile(r'(\p{P})(\P{N})'), r' \1 \2'), (regex.compile(r'(\p{S})'), r' \1 ')]
def tintl(line):
    for r, s in I:
        line = r.sub(s, line)
    return ' '.join(line.split())
def tchar(line):
    return ' '.join(' '.join(c for c in line).split())
inputs = json.load(sys.stdin)
json.dump({'13a': [t13a(x.rstrip()) for x in inputs], 'zh': [tzh(x.rstrip()) for x in inputs],
           'intl': [tintl(x.rstrip()) for x in inputs], 'char': [tchar(x.rstrip()) for x in inputs],
           'lower': [x.lower() for x in inputs]}, sys.stdout)
`
