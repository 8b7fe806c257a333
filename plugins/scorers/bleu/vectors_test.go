package bleu

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// referenceDir is /work/shared/testdata/reference seen from this package.
var referenceDir = filepath.Join("..", "..", "..", "..", "shared", "testdata", "reference")

type vector struct {
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	Scale      string          `json:"score_scale"`
	Tolerance  *float64        `json:"tolerance"`
	Options    map[string]any  `json:"options"`
	Expected   json.RawMessage `json:"expected"`
	Hypotheses json.RawMessage `json:"hypotheses"` // strings or token lists
	PerHyp     [][]string      `json:"references_per_hypothesis"`
	Streams    [][]string      `json:"reference_streams"`
	Hypothesis json.RawMessage `json:"hypothesis"` // string or token list
	References json.RawMessage `json:"references"` // strings or token lists

	Correct []float64 `json:"correct"`
	Total   []float64 `json:"total"`
	SysLen  float64   `json:"sys_len"`
	RefLen  float64   `json:"ref_len"`

	NValues     []int        `json:"n_values"`
	RefLengths  []int        `json:"reference_lengths"`
	HypLength   int          `json:"hypothesis_length"`
	Weights     []float64    `json:"weights"`
	WeightsList [][]float64  `json:"weights_list"`
	ListOfRefs  [][][]string `json:"list_of_references"`
	Smoothing   string       `json:"smoothing"`
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	if _, err := os.Stat(referenceDir); err != nil {
		t.Skipf("reference vectors not available: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(referenceDir, "bleu_vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatalf("bleu_vectors.json: %v", err)
	}
	return vs
}

func decode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}

func (v vector) tol() float64 {
	if v.Tolerance != nil {
		return *v.Tolerance
	}
	return 1e-9
}

// scale converts a sacrebleu score (0-100) to the vector's scale.
func (v vector) scale(x float64) float64 {
	if v.Scale == "0-1" {
		return x / 100
	}
	return x
}

func checkNear(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol || math.IsNaN(got) {
		t.Errorf("%s = %.12g, want %.12g (tolerance %g)", what, got, want, tol)
	}
}

// expectedList reads expected.bleu as a number or a list of numbers.
func expectedList(t *testing.T, raw json.RawMessage, key string) []float64 {
	t.Helper()
	var m map[string]json.RawMessage
	decode(t, raw, &m)
	var one float64
	if err := json.Unmarshal(m[key], &one); err == nil {
		return []float64{one}
	}
	var many []float64
	decode(t, m[key], &many)
	return many
}

// corpusScores scores each hypothesis as a sample and aggregates, the way
// the kernel does.
func corpusScores(t *testing.T, s *Scorer, hyps []string, refs [][]string) ([]*sdk.ScoreResponse, *sdk.AggregateResponse) {
	t.Helper()
	ctx := context.Background()
	var scores []*sdk.ScoreResponse
	for i, h := range hyps {
		r, err := s.Score(ctx, &sdk.ScoreRequest{Sample: &sdk.Sample{ID: fmt.Sprint(i), Targets: refs[i]}, Prediction: h})
		if err != nil {
			t.Fatal(err)
		}
		scores = append(scores, r)
	}
	agg, err := s.Aggregate(ctx, &sdk.AggregateRequest{Scores: scores})
	if err != nil {
		t.Fatal(err)
	}
	return scores, agg
}

func transpose(streams [][]string) [][]string {
	if len(streams) == 0 {
		return nil
	}
	out := make([][]string, len(streams[0]))
	for _, st := range streams {
		for i, r := range st {
			out[i] = append(out[i], r)
		}
	}
	return out
}

func TestReferenceVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.ID, func(t *testing.T) {
			switch v.Kind {
			case "corpus", "statistics":
				var hyps []string
				decode(t, v.Hypotheses, &hyps)
				refs := transpose(v.Streams)
				if v.PerHyp != nil && fmt.Sprint(v.PerHyp) != fmt.Sprint(refs) {
					t.Fatalf("reference_streams and references_per_hypothesis disagree")
				}
				s, err := newScorer(sdk.MustOptions(v.Options))
				if err != nil {
					t.Fatal(err)
				}
				_, agg := corpusScores(t, s, hyps, refs)
				if v.Kind == "statistics" {
					var exp struct{ Counts, Totals []float64 }
					decode(t, v.Expected, &exp)
					if got := fmt.Sprint(agg.Details["counts"]); got != fmt.Sprint(exp.Counts) {
						t.Errorf("counts = %s, want %v", got, exp.Counts)
					}
					if got := fmt.Sprint(agg.Details["totals"]); got != fmt.Sprint(exp.Totals) {
						t.Errorf("totals = %s, want %v", got, exp.Totals)
					}
					return
				}
				want := expectedList(t, v.Expected, "bleu")[0]
				checkNear(t, "corpus bleu", v.scale(agg.Value), want, v.tol())
				if agg.Details["score"] != agg.Value {
					t.Errorf("details score %v != value %v", agg.Details["score"], agg.Value)
				}

			case "compute_bleu":
				var smooth string
				var value float64
				if m, ok := v.Options["smooth_method"].(string); ok {
					smooth = m
				}
				if x, ok := v.Options["smooth_value"].(float64); ok {
					value = x
				}
				n := len(v.Correct)
				st := append(append([]float64{v.SysLen, v.RefLen}, v.Correct...), v.Total...)
				res := compute(st, sacreParams{smoothMethod: smooth, smoothValue: value, maxOrder: n})
				checkNear(t, "bleu", v.scale(res.Score), expectedList(t, v.Expected, "bleu")[0], v.tol())

			case "sentence":
				var hyp string
				var refs []string
				decode(t, v.Hypothesis, &hyp)
				decode(t, v.References, &refs)
				s, err := newScorer(sdk.MustOptions(v.Options))
				if err != nil {
					t.Fatal(err)
				}
				scores, _ := corpusScores(t, s, []string{hyp}, [][]string{refs})
				checkNear(t, "sentence bleu", v.scale(scores[0].Value), expectedList(t, v.Expected, "bleu")[0], v.tol())

			case "modified_precision":
				var hyp []string
				var refs [][]string
				decode(t, v.Hypothesis, &hyp)
				decode(t, v.References, &refs)
				var exp struct {
					Precision []float64   `json:"precision"`
					Fraction  [][]float64 `json:"fraction"`
				}
				decode(t, v.Expected, &exp)
				for i, n := range v.NValues {
					p := modifiedPrecision(refs, hyp, n)
					checkNear(t, fmt.Sprintf("p%d", n), p.value(), exp.Precision[i], v.tol())
					if exp.Fraction != nil && (p.num != exp.Fraction[i][0] || p.den != exp.Fraction[i][1]) {
						t.Errorf("p%d = %v/%v, want %v", n, p.num, p.den, exp.Fraction[i])
					}
				}

			case "brevity_penalty":
				refs := make([][]string, len(v.RefLengths))
				for i, l := range v.RefLengths {
					refs[i] = make([]string, l)
				}
				closest := nltkClosestRefLen(refs, v.HypLength)
				var exp struct{ BP float64 }
				decode(t, v.Expected, &exp)
				checkNear(t, "bp", brevityPenalty(float64(closest), float64(v.HypLength)), exp.BP, v.tol())

			case "sentence_bleu", "corpus_bleu", "mean_of_sentence_bleu":
				var hyps [][]string
				var listRefs [][][]string
				if v.Kind == "sentence_bleu" {
					var hyp []string
					var refs [][]string
					decode(t, v.Hypothesis, &hyp)
					decode(t, v.References, &refs)
					hyps, listRefs = [][]string{hyp}, [][][]string{refs}
				} else {
					decode(t, v.Hypotheses, &hyps)
					listRefs = v.ListOfRefs
				}
				weights := v.WeightsList
				if weights == nil {
					w := v.Weights
					if w == nil {
						w = []float64{0.25, 0.25, 0.25, 0.25}
					}
					weights = [][]float64{w}
				}
				method := 0
				if v.Smoothing != "" {
					if _, err := fmt.Sscanf(v.Smoothing, "chencherry.method%d", &method); err != nil {
						t.Fatalf("smoothing %q: %v", v.Smoothing, err)
					}
				}
				want := expectedList(t, v.Expected, "bleu")
				if len(want) != len(weights) {
					t.Fatalf("%d expected values for %d weight lists", len(want), len(weights))
				}
				for i, w := range weights {
					var got float64
					if v.Kind == "mean_of_sentence_bleu" {
						for j := range hyps {
							r, err := nltkCorpus(listRefs[j:j+1], hyps[j:j+1], w, method, 0.1)
							if err != nil {
								t.Fatal(err)
							}
							got += r.Score / float64(len(hyps))
						}
					} else {
						r, err := nltkCorpus(listRefs, hyps, w, method, 0.1)
						if err != nil {
							t.Fatal(err)
						}
						got = r.Score
					}
					checkNear(t, fmt.Sprintf("bleu(weights %v)", w), got, want[i], v.tol())
				}

			default:
				t.Fatalf("unknown kind %q: the vector file has a case this test does not run", v.Kind)
			}
		})
	}
}
