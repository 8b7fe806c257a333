package store

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// A range read with ResponseRows gives what the join by key gives, whatever
// the order, spread or staleness of the rows it was told about.
func TestEachSampleAnswerRangeByRows(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "c.hcl", ConfigText: "c", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"e", "f"} {
		if err := s.PutEval(ctx, run, EvalInfo{Name: ev, Scorers: []string{"a"}}); err != nil {
			t.Fatal(err)
		}
	}
	k := mustKeyer(t, testIdentity())
	var sampleOf func(ev, id string, req int, key string)
	answer := func(i int) string {
		keyed := mustKeyed(t, k, testRequest(i))
		resp := &sdk.GenerateResponse{Text: fmt.Sprintf("answer %d", i), FinishReason: "stop", Usage: sdk.Usage{PromptTokens: i, CompletionTokens: 2}}
		if err := s.PutResponse(ctx, k, keyed, resp, time.Duration(i)*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		return keyed.Key
	}
	sample := func(id string, req int, key string) { sampleOf("e", id, req, key) }
	sampleOf = func(ev, id string, req int, key string) {
		smp := &sdk.Sample{ID: id, Question: "q " + id, Targets: []string{"t"}, Length: sdk.Length{Tokens: req}, Metadata: map[string]any{"req": req}}
		scores := []NamedScore{{Scorer: "a", Score: &sdk.ScoreResponse{Value: float64(req), Details: map[string]any{"req": req}}}}
		if err := s.PutResult(ctx, run, ev, smp, SampleMeta{Index: req, RequestKey: key}, scores); err != nil {
			t.Fatal(err)
		}
	}
	// a00..a29: answered in reverse order, each journaled before its
	// sample; a05 and a06 share one request; a07 failed with no answer.
	// Another eval's samples of the same IDs lie between their rows.
	for i := 29; i >= 0; i-- {
		id := fmt.Sprintf("a%02d", i)
		sampleOf("f", id, 300+i, answer(300+i))
		switch i {
		case 6:
			sample(id, 5, mustKeyed(t, k, testRequest(5)).Key)
		case 7:
			key := mustKeyed(t, k, testRequest(7)).Key
			sample(id, 7, key)
			if err := s.PutFailure(ctx, run, "e", id, key, errors.New("timeout")); err != nil {
				t.Fatal(err)
			}
		default:
			sample(id, i, answer(i))
		}
	}
	// b00..b09: answers spread over the table, 100 other answers between
	// each two, more than one range is worth reading.
	for i := range 10 {
		for j := range 100 {
			answer(1000 + 100*i + j)
		}
		sample(fmt.Sprintf("b%02d", i), 100+i, answer(100+i))
	}

	rr, err := s.ResponseRows(ctx, 1<<20)
	if err != nil || rr == nil {
		t.Fatalf("response rows: %v, %v", rr, err)
	}
	if none, err := s.ResponseRows(ctx, 100); err != nil || none != nil {
		t.Errorf("response rows over the limit: %v, %v; want none", none, err)
	}
	// c00..c04: answered after rr was read, so it does not know them.
	for i := range 5 {
		sample(fmt.Sprintf("c%02d", i), 200+i, answer(200+i))
	}
	// One row rr knows is another key's (as two keys of one hash are).
	wrong := &ResponseRows{seed: rr.seed, row: maps.Clone(rr.row)}
	row4, _ := rr.find(mustKeyed(t, k, testRequest(4)).Key)
	wrong.row[maphash.String(rr.seed, mustKeyed(t, k, testRequest(3)).Key)] = row4

	read := func(at *RangeRows, from, to string) []string {
		t.Helper()
		var got []string
		err := s.EachSampleAnswerRange(ctx, run, "e", from, to, []string{"a"}, at, func(a *RawSampleAnswer) error {
			got = append(got, fmt.Sprintf("%s %q %s %d %s %g %t %t %d %s answered=%t %q %q %d %d %v %s score=%t/%g/%s",
				a.ID, a.Question, a.Targets, a.Tokens, a.Tokenizer, a.Depth, a.Truncated, a.Answered, a.SentTokens, a.Metadata, a.Answered,
				a.Text, a.FinishReason, a.PromptTokens, a.OutputTokens, a.Latency, a.Request, a.Scores[0].Has, a.Scores[0].Value, a.Scores[0].Details))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// Where the index found the sample rows, as a report's blocks say.
	var pos []SamplePosition
	if err := s.EachSamplePosition(ctx, run, "e", func(p *SamplePosition) error { pos = append(pos, *p); return nil }); err != nil {
		t.Fatal(err)
	}
	sampleRows := func(rr *ResponseRows, from, to string, extra int) *RangeRows {
		at := &RangeRows{Responses: rr}
		for _, p := range pos {
			if p.ID >= from && p.ID <= to && !p.Lone {
				if p.Row <= 0 {
					t.Fatalf("%s: no row", p.ID)
				}
				if at.Samples == 0 || p.Row < at.FirstSample {
					at.FirstSample = p.Row
				}
				at.LastSample = max(at.LastSample, p.Row)
				at.Samples++
			}
		}
		at.Samples += extra
		return at
	}
	for _, tc := range []struct {
		name     string
		rr       *ResponseRows
		from, to string
		n        int
	}{
		{"in reverse order, shared, failed", rr, "a00", "a29", 30},
		{"part of it", rr, "a04", "a08", 5},
		{"spread over the table", rr, "b00", "b09", 10},
		{"journaled after", rr, "c00", "c04", 5},
		{"everything", rr, "a00", "c99", 45},
		{"a row holding another key", wrong, "a00", "a09", 10},
		{"nothing", rr, "x", "y", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := read(nil, tc.from, tc.to)
			if len(want) != tc.n {
				t.Fatalf("joined read gave %d samples, want %d", len(want), tc.n)
			}
			for _, at := range []struct {
				name string
				rows *RangeRows
			}{
				{"responses by row", &RangeRows{Responses: tc.rr}},
				{"samples and responses by row", sampleRows(tc.rr, tc.from, tc.to, 0)},
				// A row the index saw is no longer where it was.
				{"a sample row gone", sampleRows(tc.rr, tc.from, tc.to, 1)},
			} {
				if got := read(at.rows, tc.from, tc.to); !slices.Equal(got, want) {
					t.Errorf("%s:\n got %q\nwant %q", at.name, got, want)
				}
			}
		})
	}
}
