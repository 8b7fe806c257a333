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
}

func (m *memo) BorrowsInput() {}

func (m *memo) Score(_ context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	first, ok := m.seen[req.Sample.ID]
	if !ok {
		m.seen[strings.Clone(req.Sample.ID)] = req.Prediction
		first = req.Prediction
	}
	if first == req.Prediction {
		return &sdk.ScoreResponse{Value: 1}, nil
	}
	return &sdk.ScoreResponse{Value: 0}, nil
}

// cloningMemo is memo keeping copies: it borrows, as it claims.
type cloningMemo struct{ memo }

func (m *cloningMemo) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	cp := *req
	cp.Prediction = strings.Clone(req.Prediction)
	return m.memo.Score(ctx, &cp)
}

func TestCheckScorerHoldsBorrowersToIt(t *testing.T) {
	cases := []ScorerCase{
		{Name: "a", Req: &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "a", Targets: []string{"t"}}, Prediction: "yes"}, Want: 1},
		{Name: "b", Req: &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "b"}, Prediction: "no"}, Want: 1},
	}
	var log problemLog
	checkScorer(context.Background(), &memo{seen: map[string]string{}}, cases, log.add)
	expectProblem(t, log.list, "sdk.Borrower: scoring again after its copy was overwritten gave 0")

	log = problemLog{}
	checkScorer(context.Background(), &cloningMemo{memo{seen: map[string]string{}}}, cases, log.add)
	if len(log.list) > 0 {
		t.Errorf("a scorer that copies what it keeps: %q", log.list)
	}
}
