package bleu

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/hayloft/hayloft/sdk/sdktest"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// TestAgainstNLTK compares sentence_bleu and corpus_bleu with every
// SmoothingFunction method against NLTK itself, when a python3 with nltk is
// installed (Debian: python3-nltk). Skipped otherwise. The segments are
// deterministic slices of Newton's Opticks with words dropped.
func TestAgainstNLTK(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	py, ok := pythonWith("nltk.translate.bleu_score")
	if !ok {
		t.Skip("no python3 with nltk.translate.bleu_score installed")
	}
	data, err := os.ReadFile(sdktest.OpticksPath())
	if err != nil {
		t.Skip(err)
	}
	words := strings.Fields(string(data))
	type seg struct {
		Refs [][]string `json:"refs"`
		Hyp  []string   `json:"hyp"`
	}
	var segs []seg
	for i := 0; i < 200; i++ {
		start, n := (i*7919)%(len(words)-60), 1+i%23
		ref := words[start : start+n]
		var hyp []string
		for j, w := range words[start+i%3 : start+n+3] {
			if (i+j)%5 != 2 {
				hyp = append(hyp, w)
			}
		}
		refs := [][]string{ref}
		if i%2 == 1 {
			refs = append(refs, words[start+i%5:start+n+5])
		}
		segs = append(segs, seg{refs, hyp})
	}
	in, _ := json.Marshal(segs)
	cmd := exec.Command(py, "-c", `import sys, json, warnings
warnings.filterwarnings("ignore")
from nltk.translate.bleu_score import sentence_bleu, corpus_bleu, SmoothingFunction
sf = SmoothingFunction()
segs = json.load(sys.stdin)
def run(f):
    try:
        return f()
    except Exception:
        return None
out = {"sentence": [[run(lambda: sentence_bleu(s["refs"], s["hyp"], smoothing_function=getattr(sf, "method%d" % m))) for m in range(8)] for s in segs],
       "corpus": [[run(lambda: corpus_bleu([s["refs"] for s in segs[k:k+10]], [s["hyp"] for s in segs[k:k+10]], smoothing_function=getattr(sf, "method%d" % m))) for m in range(8)] for k in range(0, len(segs), 10)]}
json.dump(out, sys.stdout)`)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nltk: %v", err)
	}
	var want struct{ Sentence, Corpus [][]*float64 }
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	w := []float64{0.25, 0.25, 0.25, 0.25}
	check := func(what string, m int, refs [][][]string, hyps [][]string, want *float64) {
		got, err := nltkCorpus(refs, hyps, w, m, 0.1)
		if want == nil { // NLTK raised (method6 without trigram matches)
			if err == nil && got.Score != 0 {
				t.Errorf("%s method%d: %v, NLTK raised", what, m, got.Score)
			}
			return
		}
		if err != nil || math.Abs(got.Score-*want) > 1e-12 {
			t.Errorf("%s method%d: %v (%v), NLTK %v", what, m, got.Score, err, *want)
		}
	}
	scorers := make([]*Scorer, 8)
	for m := range scorers {
		scorers[m] = newT(t, map[string]any{"mode": "nltk", "smooth_method": fmt.Sprintf("method%d", m)})
	}
	for i, s := range segs {
		var targets []string
		for _, r := range s.Refs {
			targets = append(targets, strings.Join(r, " "))
		}
		for m := 0; m < 8; m++ {
			check("sentence "+strings.Join(s.Hyp, " "), m, [][][]string{s.Refs}, [][]string{s.Hyp}, want.Sentence[i][m])
			// The same through the scorer, from whitespace-joined text.
			r, err := scorers[m].Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{Targets: targets}, Prediction: strings.Join(s.Hyp, " ")})
			if w := want.Sentence[i][m]; w != nil && (err != nil || math.Abs(r.Value-*w) > 1e-12) {
				t.Errorf("scorer method%d on %q: %v (%v), NLTK %v", m, s.Hyp, r, err, *w)
			}
		}
	}
	for k := 0; k < len(segs); k += 10 {
		var refs [][][]string
		var hyps [][]string
		for _, s := range segs[k : k+10] {
			refs, hyps = append(refs, s.Refs), append(hyps, s.Hyp)
		}
		for m := 0; m < 8; m++ {
			check("corpus", m, refs, hyps, want.Corpus[k/10][m])
		}
	}
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
