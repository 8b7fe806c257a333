package journal_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// A row's model identity is the one journaled with its first answer in
// stream order, whatever the samples' ID order, passing over a first
// sample whose answer is not journaled.
func TestIdentityOfFirstAnswer(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		answer []bool // by stream position: answered, or journaled without an answer
		want   string
	}{
		{"first answered", []bool{true, true, true}, "m0"},
		{"first not answered", []bool{false, true, true}, "m1"},
		{"none answered", []bool{false, false, false}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hayloft.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			run, err := st.BeginRun(ctx, store.RunInfo{ConfigPath: "c.hcl"})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.PutEval(ctx, run, store.EvalInfo{Name: "e/m/none", Model: "m", Scorers: []string{"s"}}); err != nil {
				t.Fatal(err)
			}
			// IDs run against stream order: position 0 is "z", 2 is "a".
			for seq, id := range []string{"z", "m", "a"} {
				keyer, err := store.NewKeyer(store.ModelIdentity{Plugin: "builtin", Component: "test", Instance: "m", Model: "m" + string(rune('0'+seq))})
				if err != nil {
					t.Fatal(err)
				}
				smp := &sdk.Sample{ID: id, Question: id}
				keyed, err := keyer.Request(&sdk.GenerateRequest{Messages: smp.Render()})
				if err != nil {
					t.Fatal(err)
				}
				if tc.answer[seq] {
					if err := st.PutResponse(ctx, keyer, keyed, &sdk.GenerateResponse{Text: "x"}, time.Millisecond); err != nil {
						t.Fatal(err)
					}
				}
				if err := st.PutResult(ctx, run, "e/m/none", smp, store.SampleMeta{Index: seq, RequestKey: keyed.Key},
					[]store.NamedScore{{Scorer: "s", Score: &sdk.ScoreResponse{Value: 1}}}); err != nil {
					t.Fatal(err)
				}
			}
			for _, load := range []func(context.Context, *store.Store, string, []string) (*journal.Run, error){journal.Load, journal.LoadIndex} {
				r, err := load(ctx, st, run, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := ""
				if id := r.Evals[0].Identity; id != nil {
					got = id.Model
				}
				if got != tc.want {
					t.Errorf("identity %q, want %q", got, tc.want)
				}
			}
		})
	}
}
