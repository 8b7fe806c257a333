package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/hayloft/hayloft/sdk"
	pb "github.com/hayloft/hayloft/sdk/plugin/proto/hayloft/plugin/v1"
)

// lenScorer scores a prediction by its length, fails on "fail" and panics
// on "panic", so that one batch can carry every kind of outcome.
type lenScorer struct{}

func (lenScorer) Score(_ context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	switch req.Prediction {
	case "fail":
		return nil, sdk.Configf("prediction", "cannot score %q", req.Sample.ID)
	case "panic":
		panic("scorer exploded")
	}
	return &sdk.ScoreResponse{Value: float64(len(req.Prediction)), Details: map[string]any{"id": req.Sample.ID}, Stats: []float64{1, 2}}, nil
}

func (lenScorer) Aggregate(_ context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	var sum float64
	for _, s := range req.Scores {
		if s.Details["id"] == nil || len(s.Stats) != 2 {
			return nil, fmt.Errorf("score without its details or stats: %+v", s)
		}
		sum += s.Value
	}
	return &sdk.AggregateResponse{Value: sum, N: len(req.Scores)}, nil
}

// oldScorerServer is a scorer service from before ScoreBatch.
type oldScorerServer struct {
	pb.UnimplementedScorerServer
	s scorerServer
}

func (o oldScorerServer) Score(ctx context.Context, req *pb.ScoreRequest) (*pb.ScoreResponse, error) {
	return o.s.Score(ctx, req)
}

func (o oldScorerServer) Aggregate(ctx context.Context, req *pb.AggregateRequest) (*pb.AggregateResponse, error) {
	return o.s.Aggregate(ctx, req)
}

// unaryOnlyScorerServer refuses ScoreBatch as a unary RPC, so that a batch
// answered at all went over the Calls stream.
type unaryOnlyScorerServer struct{ scorerServer }

func (unaryOnlyScorerServer) ScoreBatch(context.Context, *pb.ScoreBatchRequest) (*pb.ScoreBatchResponse, error) {
	return nil, errors.New("ScoreBatch asked by unary RPC")
}

// lifecycleBefore is the lifecycle service of a plugin from before
// protocol features: it reports none.
type lifecycleBefore struct{ lifecycleServer }

func (l lifecycleBefore) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	resp, err := l.lifecycleServer.Configure(ctx, req)
	if resp != nil {
		resp.Features = nil
	}
	return resp, err
}

// Every request of a batch gets its own answer, in order, errors and
// panics included, whether the plugin takes batches on the Calls stream
// (stream), as a unary RPC (unary: a plugin from before that feature) or
// predates them (old); and the results aggregate with their details passed
// back as they came.
func TestScoreBatch(t *testing.T) {
	for _, mode := range []string{"stream", "unary", "old"} {
		t.Run(mode, func(t *testing.T) {
			set := sdk.NewSet("batchtest", "1.0.0")
			set.RegisterScorer("len", func(context.Context, sdk.Options) (sdk.Scorer, error) { return lenScorer{}, nil })
			conn := serveWith(t, set, func(g *grpc.Server, s *Server) {
				switch mode {
				case "stream":
					pb.RegisterLifecycleServer(g, lifecycleServer{s: s})
					pb.RegisterScorerServer(g, unaryOnlyScorerServer{scorerServer{s: s}})
					pb.RegisterCallsServer(g, callsServer{s: s})
				case "unary":
					pb.RegisterLifecycleServer(g, lifecycleBefore{lifecycleServer{s: s}})
					pb.RegisterScorerServer(g, scorerServer{s: s})
				case "old":
					pb.RegisterLifecycleServer(g, lifecycleBefore{lifecycleServer{s: s}})
					pb.RegisterScorerServer(g, oldScorerServer{s: scorerServer{s: s}})
				}
			})
			sc := configureT[*ScorerClient](t, conn, sdk.KindScorer, "len")
			var reqs []*sdk.ScoreRequest
			for i := range 300 {
				pred := strings.Repeat("x", i)
				switch i {
				case 7:
					pred = "fail"
				case 11:
					pred = "panic"
				}
				reqs = append(reqs, &sdk.ScoreRequest{Sample: &sdk.Sample{ID: fmt.Sprint("s", i)}, Prediction: pred})
			}
			results, err := sc.ScoreBatch(context.Background(), reqs)
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != len(reqs) {
				t.Fatalf("%d results for %d requests", len(results), len(reqs))
			}
			var ok []ScoreResult
			for i, r := range results {
				switch i {
				case 7:
					var ce *sdk.ConfigError
					if !errors.As(r.Err, &ce) || ce.Field != "prediction" {
						t.Errorf("result 7: err = %v, want the scorer's config error", r.Err)
					}
					continue
				case 11:
					if r.Err == nil || !strings.Contains(r.Err.Error(), "scorer exploded") {
						t.Errorf("result 11: err = %v, want the panic", r.Err)
					}
					continue
				}
				if r.Err != nil || r.Response.Value != float64(i) || string(r.DetailsJSON) != fmt.Sprintf(`{"id":"s%d"}`, i) {
					t.Fatalf("result %d = %+v (%s), %v", i, r.Response, r.DetailsJSON, r.Err)
				}
				if d, err := r.Details(); err != nil || d["id"] != fmt.Sprint("s", i) {
					t.Errorf("result %d details = %v, %v", i, d, err)
				}
				ok = append(ok, r)
			}
			agg, err := sc.AggregateResults(context.Background(), gather(t, ok))
			if err != nil {
				t.Fatal(err)
			}
			if want := float64(299*300/2 - 7 - 11); agg.Value != want || agg.N != 298 {
				t.Errorf("aggregate = %+v, want %v over 298", agg, want)
			}
		})
	}
}

// statsScorer is lenScorer whose aggregate declares it reads no details.
type statsScorer struct{ lenScorer }

func (statsScorer) AggregateReadsNoDetails() {}

// Score leaves the details out of a score that is only aggregated.
func (s statsScorer) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	resp, err := s.lenScorer.Score(ctx, req)
	if err == nil && req.ForAggregate {
		resp.Details = nil
	}
	return resp, err
}

func (statsScorer) Aggregate(_ context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	for _, s := range req.Scores {
		if s.Details != nil || len(s.Stats) != 2 {
			return nil, fmt.Errorf("want stats without decoded details, got %+v", s)
		}
	}
	return &sdk.AggregateResponse{N: len(req.Scores)}, nil
}

// A StatsAggregator gets the scores' statistics but no decoded details; an
// ordinary Aggregator (TestScoreBatch) gets both. ForAggregate reaches the
// scorer over the wire, in a batch and in a single call, so a request only
// aggregated comes back without details.
func TestStatsAggregatorSkipsDetails(t *testing.T) {
	sc := serveScorer(t, statsScorer{})
	for _, forAgg := range []bool{false, true} {
		results, err := sc.ScoreBatch(context.Background(), []*sdk.ScoreRequest{{Sample: &sdk.Sample{ID: "a"}, Prediction: "xy", ForAggregate: forAgg}})
		if err != nil || results[0].Err != nil || (len(results[0].DetailsJSON) == 0) != forAgg || len(results[0].Response.Stats) != 2 {
			t.Fatalf("for aggregate %v: score: %+v (%s), %v", forAgg, results, results[0].DetailsJSON, err)
		}
		one, err := sc.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "a"}, Prediction: "xy", ForAggregate: forAgg})
		if err != nil || (one.Details == nil) != forAgg || one.Value != 2 {
			t.Fatalf("for aggregate %v: single score = %+v, %v", forAgg, one, err)
		}
		agg, err := sc.AggregateResults(context.Background(), gather(t, results))
		if err != nil || agg.N != 1 {
			t.Fatalf("aggregate = %+v, %v", agg, err)
		}
	}
}

// A batch gets the processors the other running batches leave, at least
// one, and no more goroutines than requests.
func TestBatchWorkers(t *testing.T) {
	for _, tc := range []struct{ procs, running, n, want int }{
		{2, 1, 256, 2}, // alone: every processor
		{8, 1, 3, 3},   // no more than its requests
		{2, 2, 256, 1}, // two running on two processors: one each
		{2, 3, 256, 1}, // more running than processors: still one
		{8, 3, 256, 6},
		{1, 1, 256, 1},
		{4, 1, 0, 1}, // empty: the handler's own goroutine finds nothing to do
	} {
		if got := batchWorkers(tc.procs, tc.running, tc.n); got != tc.want {
			t.Errorf("batchWorkers(%d procs, %d running, %d requests) = %d, want %d", tc.procs, tc.running, tc.n, got, tc.want)
		}
	}
}
