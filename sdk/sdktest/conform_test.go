package sdktest

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/plugin"
)

// fakeTask yields what make returns for the i-th read.
type fakeTask struct {
	reads atomic.Int32
	make  func(read int) []*sdk.Sample
	// honour controls whether Limit and ctx are respected.
	ignoreLimit bool
}

func (f *fakeTask) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	read := int(f.reads.Add(1)) - 1
	return func(yield func(*sdk.Sample, error) bool) {
		for i, s := range f.make(read) {
			if !f.ignoreLimit && req.Limit > 0 && i >= req.Limit {
				return
			}
			if !yield(s, nil) {
				return
			}
		}
	}
}

func samples(n int) []*sdk.Sample {
	out := make([]*sdk.Sample, n)
	for i := range out {
		out[i] = &sdk.Sample{ID: fmt.Sprintf("s%d", i), Depth: 0.5}
	}
	return out
}

func TestCheckTaskFindsProblems(t *testing.T) {
	tests := []struct {
		name string
		task sdk.Task
		want string // substring of a reported problem; "" means no problem
	}{
		{"good", &fakeTask{make: func(int) []*sdk.Sample { return samples(5) }}, ""},
		{"empty", &fakeTask{make: func(int) []*sdk.Sample { return nil }}, "no samples"},
		{"empty id", &fakeTask{make: func(int) []*sdk.Sample { return []*sdk.Sample{{ID: ""}} }}, "empty ID"},
		{"duplicate id", &fakeTask{make: func(int) []*sdk.Sample { return []*sdk.Sample{{ID: "a"}, {ID: "a"}} }}, "share ID"},
		{"depth", &fakeTask{make: func(int) []*sdk.Sample { return []*sdk.Sample{{ID: "a", Depth: 1.5}} }}, "Depth"},
		{"role", &fakeTask{make: func(int) []*sdk.Sample {
			return []*sdk.Sample{{ID: "a", Messages: []sdk.Message{{Role: "robot", Content: "x"}}}}
		}}, "role"},
		{"metadata", &fakeTask{make: func(int) []*sdk.Sample {
			return []*sdk.Sample{{ID: "a", Metadata: map[string]any{"f": func() {}}}}
		}}, "JSON"},
		{"order", &fakeTask{make: func(read int) []*sdk.Sample {
			s := samples(3)
			if read%2 == 1 {
				s[0], s[1] = s[1], s[0]
			}
			return s
		}}, "order differs"},
		{"limit", &fakeTask{make: func(int) []*sdk.Sample { return samples(3) }, ignoreLimit: true}, "Limit 1"},
		{"ignores yield", ignoresYield{}, "kept yielding"},
		{"ignores ctx", &fakeTask{make: func(int) []*sdk.Sample { return samples(100) }}, "ignores ctx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log problemLog
			checkTask(context.Background(), tt.task, log.add)
			problems := log.list
			if tt.want == "" {
				if len(problems) > 0 {
					t.Errorf("unexpected problems: %q", problems)
				}
				return
			}
			for _, p := range problems {
				if strings.Contains(p, tt.want) {
					return
				}
			}
			t.Errorf("problems %q lack %q", problems, tt.want)
		})
	}
}

type ignoresYield struct{}

func (ignoresYield) Samples(context.Context, *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		for i := range 3 {
			yield(&sdk.Sample{ID: fmt.Sprint(i)}, nil)
		}
	}
}

// flaky gives a different answer on every call, which concurrent scoring
// must catch.
type flaky struct{ n atomic.Int32 }

func (f *flaky) Score(context.Context, *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	if f.n.Add(1) > 1 {
		return &sdk.ScoreResponse{Value: 0}, nil
	}
	return &sdk.ScoreResponse{Value: 1}, nil
}

type constant struct{ v float64 }

func (c constant) Score(context.Context, *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	return &sdk.ScoreResponse{Value: c.v}, nil
}

func TestCheckScorerFindsProblems(t *testing.T) {
	req := &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "a"}, Prediction: "x"}
	tests := []struct {
		name   string
		scorer sdk.Scorer
		cases  []ScorerCase
		want   string
	}{
		{"good", constant{1}, []ScorerCase{{Name: "c", Req: req, Want: 1}}, ""},
		{"wrong value", constant{0.5}, []ScorerCase{{Name: "c", Req: req, Want: 1}}, "value = 0.5"},
		{"within tolerance", constant{0.5}, []ScorerCase{{Name: "c", Req: req, Want: 0.55, Tol: 0.1}}, ""},
		{"not invalid", constant{1}, []ScorerCase{{Name: "c", Req: req, Invalid: true}}, "invalid = false"},
		{"not concurrent-safe", &flaky{}, []ScorerCase{{Name: "c", Req: req, Want: 1}}, "concurrent Score gave 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log problemLog
			checkScorer(context.Background(), tt.scorer, tt.cases, log.add)
			problems := log.list
			if tt.want == "" {
				if len(problems) > 0 {
					t.Errorf("unexpected problems: %q", problems)
				}
				return
			}
			for _, p := range problems {
				if strings.Contains(p, tt.want) {
					return
				}
			}
			t.Errorf("problems %q lack %q", problems, tt.want)
		})
	}
}

// memo claims to borrow its requests but remembers each sample's first
// prediction, uncopied, and scores later ones against it.
type memo struct {
	mu   sync.Mutex
	seen map[string]string
	// clone keeps copies of the prediction; cloneID of the map key.
	clone, cloneID bool
}

func (m *memo) BorrowsInput() {}

func (m *memo) score(req *sdk.ScoreRequest, clone bool) *sdk.ScoreResponse {
	m.mu.Lock()
	defer m.mu.Unlock()
	first, ok := m.seen[req.Sample.ID]
	if !ok {
		first = req.Prediction
		if clone {
			first = strings.Clone(first)
		}
		id := req.Sample.ID
		if m.cloneID {
			id = strings.Clone(id)
		}
		m.seen[id] = first
	}
	if first == req.Prediction {
		return &sdk.ScoreResponse{Value: 1}
	}
	return &sdk.ScoreResponse{Value: 0}
}

func (m *memo) Score(_ context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	return m.score(req, m.clone), nil
}

// jsonMemo keeps copies when called through Score, but not through
// ScoreDetailsJSON, which is what the plugin server calls instead.
type jsonMemo struct{ memo }

func (m *jsonMemo) ScoreDetailsJSON(_ context.Context, req *sdk.ScoreRequest, dst []byte) (*sdk.ScoreResponse, []byte, error) {
	return m.score(req, false), append(dst, "{}"...), nil
}

// The paths checkBorrows calls are the plugin server's.
var (
	_ detailsJSONScorer = plugin.DetailsJSONScorer(nil)
	_ scoreObjectScorer = plugin.ScoreObjectScorer(nil)
)

func TestCheckScorerHoldsBorrowersToIt(t *testing.T) {
	cases := []ScorerCase{
		{Name: "a", Req: &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "a", Targets: []string{"t"}}, Prediction: "yes"}, Want: 1},
		{Name: "b", Req: &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "b"}, Prediction: "no"}, Want: 1},
		{Name: "c", Req: &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "c"}, Prediction: "maybe"}, Want: 1},
	}
	const kept = "sdk.Borrower: Score (ScoreObject) kept a piece of its request"
	for _, tt := range []struct {
		name   string
		scorer sdk.Scorer
		want   string // a problem containing it; "" for none
	}{
		{"keeps the prediction", &memo{cloneID: true}, kept},
		{"keys a map by the id", &memo{clone: true}, kept},
		{"keeps copies", &memo{clone: true, cloneID: true}, ""},
		// Score keeps copies, but the server's path does not.
		{"keeps the prediction on the served path", &jsonMemo{memo{clone: true, cloneID: true}},
			"sdk.Borrower: ScoreDetailsJSON (ScoreObject) kept a piece of its request"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log problemLog
			switch sc := tt.scorer.(type) {
			case *memo:
				sc.seen = map[string]string{}
			case *jsonMemo:
				sc.seen = map[string]string{}
			}
			checkScorer(context.Background(), tt.scorer, cases, log.add)
			if tt.want == "" {
				if len(log.list) > 0 {
					t.Errorf("a scorer that copies what it keeps: %q", log.list)
				}
				return
			}
			expectProblem(t, log.list, tt.want)
		})
	}
}

// What the check stands for: jsonMemo, served, answers the same prediction
// for the same sample wrongly once its first batch's memory is reused.
func TestServedBorrowerThatKeepsBreaks(t *testing.T) {
	set := sdk.NewSet("memo", "1.0.0")
	set.RegisterScorer("m", func(context.Context, sdk.Options) (sdk.Scorer, error) {
		return &jsonMemo{memo{seen: map[string]string{}, clone: true, cloneID: true}}, nil
	})
	sc := Scorer(t, set, "m", nil)
	ctx := context.Background()
	wrong := 0
	for round := range 20 {
		id := fmt.Sprintf("id-%d", round)
		same := &sdk.ScoreRequest{Sample: &sdk.Sample{ID: id, Targets: []string{"t"}}, Prediction: "the same answer"}
		if _, err := sc.ScoreBatch(ctx, []*sdk.ScoreRequest{same}); err != nil {
			t.Fatal(err)
		}
		other := &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "other", Targets: []string{"t"}}, Prediction: strings.Repeat("q", 30)}
		results, err := sc.ScoreBatch(ctx, []*sdk.ScoreRequest{other, same})
		if err != nil {
			t.Fatal(err)
		}
		if results[1].Err != nil || results[1].Response.Value != 1 {
			wrong++
		}
		plugin.ReleaseResults(results)
	}
	if wrong == 0 {
		t.Error("jsonMemo served as a plugin answered every repeated prediction right: the memory it keeps was not reused, so CheckScorer's failure of it is not what the server does")
	}
}
