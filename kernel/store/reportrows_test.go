package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// The report's lean reads: positions in key order then lone failures, score
// values by scorer, a key range with its answers, scores and attempts, one
// sample's scores and a response's identity.
func TestReportRows(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "c.hcl", ConfigText: "c", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutEval(ctx, run, EvalInfo{Name: "e", Scorers: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	id := testIdentity()
	k := mustKeyer(t, id)
	keys := map[string]string{}
	// Journaled out of key order: s3, s1, s2, s0; s2 has no score from b.
	for _, i := range []int{3, 1, 2, 0} {
		keyed := mustKeyed(t, k, testRequest(i))
		keys[fmt.Sprintf("s%d", i)] = keyed.Key
		attempts := []sdk.Attempt{{Status: 200, LatencyMS: 5}}
		if i == 1 {
			attempts = []sdk.Attempt{{Status: 429, Error: "slow down", LatencyMS: 1}, attempts[0]}
		}
		if err := s.PutResponse(ctx, k, keyed, &sdk.GenerateResponse{Text: fmt.Sprintf("answer %d", i), Attempts: attempts}, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		smp := &sdk.Sample{ID: fmt.Sprintf("s%d", i), Question: "q", Targets: []string{"t"}, Length: sdk.Length{Tokens: 100 * i}, Depth: 0.5,
			Metadata: map[string]any{"i": i}}
		if i == 0 {
			smp.Grid = &sdk.GridPoint{Length: 1000, Depth: 0.25}
		}
		scores := []NamedScore{{Scorer: "a", Score: &sdk.ScoreResponse{Value: float64(i), Details: map[string]any{"i": i}}}}
		if i != 2 {
			scores = append(scores, NamedScore{Scorer: "b", Score: &sdk.ScoreResponse{Value: 1, Invalid: i == 3}})
		}
		if err := s.PutResult(ctx, run, "e", smp, SampleMeta{Index: 3 - i, RequestKey: keyed.Key}, scores); err != nil {
			t.Fatal(err)
		}
	}
	// s2 was journaled, then failed on a retry of the run; "lost" failed
	// before it was ever journaled.
	if err := s.PutFailure(ctx, run, "e", "s2", keys["s2"], errors.New("timeout")); err != nil {
		t.Fatal(err)
	}
	lone := mustKeyed(t, k, testRequest(9))
	if err := s.PutFailure(ctx, run, "e", "lost", lone.Key, errors.New("refused")); err != nil {
		t.Fatal(err)
	}

	var pos []SamplePosition
	if err := s.EachSamplePosition(ctx, run, "e", func(p *SamplePosition) error { pos = append(pos, *p); return nil }); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range pos {
		ids = append(ids, p.ID)
	}
	if !slices.Equal(ids, []string{"s0", "s1", "s2", "s3", "lost"}) {
		t.Fatalf("positions %v: want key order, then the lone failure", ids)
	}
	if p := pos[0]; p.Grid == nil || p.Grid.Length != 1000 || p.Index != 3 || p.RequestKey != keys["s0"] || p.Lone {
		t.Errorf("s0 %+v", p)
	}
	if p := pos[2]; !p.Failed || p.Lone || p.FailMsg == "" || p.Index != 1 {
		t.Errorf("journaled failed sample %+v", p)
	}
	if p := pos[1]; p.Failed {
		t.Errorf("s1 failed: %+v", p)
	}
	if p := pos[4]; !p.Lone || !p.Failed || p.FailMsg == "" || p.RequestKey != lone.Key || p.Depth != -1 {
		t.Errorf("lone failure %+v", p)
	}

	var vals []string
	if err := s.EachScoreValue(ctx, run, "e", func(v *ScoreValue) error {
		vals = append(vals, fmt.Sprintf("%s/%s=%g/%t%s", v.Scorer, v.SampleID, v.Value, v.Invalid, v.Details))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{`a/s0=0/false{"i":0}`, `a/s1=1/false{"i":1}`, `a/s2=2/false{"i":2}`, `a/s3=3/false{"i":3}`, "b/s0=1/false{}", "b/s1=1/false{}", "b/s3=1/true{}"}; !slices.Equal(vals, want) {
		t.Errorf("score values %v, want %v", vals, want)
	}

	attempts, err := s.RangeAttempts(ctx, run, "e", "s1", "s2")
	if err != nil {
		t.Fatal(err)
	}
	all := map[string][]AttemptRecord{}
	if err := s.EachAttempt(ctx, func(key []byte, a AttemptRecord) error { all[string(key)] = append(all[string(key)], a); return nil }); err != nil {
		t.Fatal(err)
	}
	if n, err := s.AttemptCount(ctx); err != nil || n != 5 || len(all) != 4 {
		t.Errorf("%d attempts (%v) of %d requests, want 5 of 4", n, err, len(all))
	}
	var got []string
	err = s.EachSampleAnswerRange(ctx, run, "e", "s1", "s2", []string{"b", "a"}, nil, func(a *RawSampleAnswer) error {
		ranged := slices.Clone(attempts[a.RequestKey])
		for i := range ranged {
			ranged[i].CreatedAt = time.Time{} // EachAttempt gives no time
		}
		if !slices.Equal(all[a.RequestKey], ranged) {
			t.Errorf("%s: attempts by range %v, by scan %v", a.ID, attempts[a.RequestKey], all[a.RequestKey])
		}
		var att []string
		for _, x := range attempts[a.RequestKey] {
			att = append(att, fmt.Sprintf("%d:%s", x.Attempt, x.Status))
		}
		got = append(got, fmt.Sprintf("%s %q %s %s %s b=%t a=%g:%s att=%v", a.ID, a.Text, a.Targets, a.Metadata, a.Request,
			a.Scores[0].Has, a.Scores[1].Value, a.Scores[1].Details, att))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf(`s1 "answer 1" ["t"] {"i":1} %s b=true a=1:{"i":1} att=[1:http 429 2:ok]`, journalForm(testRequest(1).Messages, testRequest(1).Params)),
		fmt.Sprintf(`s2 "answer 2" ["t"] {"i":2} %s b=false a=2:{"i":2} att=[1:ok]`, journalForm(testRequest(2).Messages, testRequest(2).Params)),
	}
	if !slices.Equal(got, want) {
		t.Errorf("range s1..s2:\n got %q\nwant %q", got, want)
	}

	scs, err := s.SampleScores(ctx, run, "e", "s2", []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(scs) != 2 || !scs[0].Has || scs[0].Value != 2 || string(scs[0].Details) != `{"i":2}` || scs[1].Has {
		t.Errorf("scores of s2 %+v", scs)
	}

	if got, ok, err := s.ResponseIdentity(ctx, keys["s3"]); err != nil || !ok || got.Model != id.Model {
		t.Errorf("identity %+v %t %v", got, ok, err)
	}
	if _, ok, err := s.ResponseIdentity(ctx, lone.Key); err != nil || ok {
		t.Errorf("identity of a failed request: found %t, %v", ok, err)
	}
}
