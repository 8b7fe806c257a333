package html

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/kernel/store"
)

// WriteIndex writes the index byte for byte as encoding/json writes the
// same columns: no eval, evals without samples, a scorer one eval lacks,
// scores missing and invalid, depths that do not apply, floats written in
// exponent form, strings to escape, and a partial index.
func TestWriteIndexAsEncodingJSON(t *testing.T) {
	ev := func(name string, scorers []string, samples ...*journal.Sample) *journal.Eval {
		return &journal.Eval{EvalInfo: store.EvalInfo{Name: name, Model: "m<1>", Scorers: scorers}, Base: "b&", Samples: samples}
	}
	sample := func(id string, l int, d float64, scores ...journal.Score) *journal.Sample {
		return &journal.Sample{ID: id, Length: l, Depth: d, Scores: scores, Failed: l == 0, Truncated: d == 1}
	}
	has := func(v float64, invalid bool) journal.Score {
		return journal.Score{Has: true, Value: v, Invalid: invalid}
	}
	for _, tc := range []struct {
		name  string
		run   *journal.Run
		first *journal.First
	}{
		{"no eval", &journal.Run{}, nil},
		{"no samples", &journal.Run{Evals: []*journal.Eval{ev("e", []string{"a"})}}, nil},
		{"two evals", &journal.Run{Evals: []*journal.Eval{
			ev("e1", []string{"z", "a"}, sample("s</script>1", 1000, 0.5, has(1, false), has(1e-7, true)),
				sample("s\u20282", 0, -1, journal.Score{}, has(2.5e21, false))),
			ev("e2", []string{"a", "m"}, sample("s3", 2000, 1, has(0.125, false), journal.Score{})),
		}}, nil},
		{"partial", &journal.Run{Evals: []*journal.Eval{ev("e", nil, sample("s", 10, 0))}}, &journal.First{Total: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got bytes.Buffer
			if err := WriteIndex(&got, tc.run, 50, tc.first); err != nil {
				t.Fatal(err)
			}
			if want := indexByEncodingJSON(t, tc.run, 50, tc.first); !bytes.Equal(got.Bytes(), want) {
				t.Errorf("index\n got %s\nwant %s", got.Bytes(), want)
			}
		})
	}
}

// indexByEncodingJSON is the index as encoding/json writes its columns.
func indexByEncodingJSON(t *testing.T, run *journal.Run, chunk int, first *journal.First) []byte {
	var (
		evals       []evalIdx
		e, l        []int
		d           []*float64
		ids         []string
		fail, trunc []int
		scorers     []string
		scores      = map[string][]*float64{}
		invalid     = map[string][]int{}
		b2i         = func(b bool) int { return map[bool]int{true: 1}[b] }
		pointerTo   = func(f float64) *float64 { return &f }
	)
	for _, ev := range run.Evals {
		for _, s := range ev.Scorers {
			if !slices.Contains(scorers, s) {
				scorers = append(scorers, s)
			}
		}
	}
	for i, ev := range run.Evals {
		evals = append(evals, evalIdx{ev.Name, ev.Base, ev.Model, ev.RetrieverName(), ev.Scorers})
		for _, s := range ev.Samples {
			e, ids, l = append(e, i), append(ids, s.ID), append(l, s.Length)
			if s.Depth >= 0 {
				d = append(d, pointerTo(s.Depth))
			} else {
				d = append(d, nil)
			}
			fail, trunc = append(fail, b2i(s.Failed)), append(trunc, b2i(s.Truncated))
			for _, name := range scorers {
				var v *float64
				inv := 0
				if j := slices.Index(ev.Scorers, name); j >= 0 && s.Scores[j].Has {
					v, inv = pointerTo(s.Scores[j].Value), b2i(s.Scores[j].Invalid)
				}
				scores[name], invalid[name] = append(scores[name], v), append(invalid[name], inv)
			}
		}
	}
	idx := map[string]any{"evals": evals, "scorers": scorers, "chunk": chunk, "e": e, "id": ids, "len": l, "depth": d,
		"failed": fail, "truncated": trunc, "scores": scores, "invalid": invalid}
	if first != nil {
		idx["partial"], idx["total"] = true, first.Total
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(idx); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
