package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/hayloft/hayloft/sdk"
	pb "github.com/hayloft/hayloft/sdk/plugin/proto/hayloft/plugin/v1"
)

// muxModel answers "echo:<prompt>" and, for the prompts below, blocks,
// fails or panics, so the Calls stream's paths can be driven from a test.
type muxModel struct {
	started chan struct{} // a "block" call has started
	stopped chan error    // ...and ended, with its context's error
	sawDL   chan bool     // a "deadline" call saw a deadline
}

func (m *muxModel) Generate(ctx context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	p := req.Messages[0].Content
	switch p {
	case "block":
		m.started <- struct{}{}
		<-ctx.Done()
		m.stopped <- ctx.Err()
		return nil, ctx.Err()
	case "deadline":
		_, ok := ctx.Deadline()
		m.sawDL <- ok
	case "fail":
		return nil, &sdk.AttemptsError{
			Attempts: []sdk.Attempt{{Status: 500, LatencyMS: 1, Error: "boom"}, {Status: 400, LatencyMS: 2}},
			Err:      &sdk.RequestError{Code: sdk.CodeContextLength, Msg: "too long"},
		}
	case "panic":
		panic("model exploded")
	}
	return &sdk.GenerateResponse{Text: "echo:" + p, Attempts: []sdk.Attempt{{Status: 200, LatencyMS: 1}}}, nil
}

type upperScorer struct{}

func (upperScorer) Score(_ context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	if req.Prediction == req.Sample.ID {
		return &sdk.ScoreResponse{Value: 1}, nil
	}
	return &sdk.ScoreResponse{Value: 0}, nil
}

type countTask struct{ n int }

func (c countTask) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		for i := range c.n {
			if req.Limit > 0 && i >= req.Limit {
				return
			}
			if !yield(&sdk.Sample{ID: fmt.Sprint("s", i), Context: strings.Repeat("x", i%7), Question: "q"}, nil) {
				return
			}
		}
	}
}

func muxSet(m *muxModel, tasks int) *sdk.Set {
	set := sdk.NewSet("muxtest", "1.0.0")
	set.RegisterModel("m", func(context.Context, sdk.Options) (sdk.Model, error) { return m, nil })
	set.RegisterScorer("s", func(context.Context, sdk.Options) (sdk.Scorer, error) { return upperScorer{}, nil })
	set.RegisterTask("t", func(context.Context, sdk.Options) (sdk.Task, error) { return countTask{n: tasks}, nil })
	return set
}

// oldTaskServer is a task service from before SampleBatches.
type oldTaskServer struct {
	pb.UnimplementedTaskServer
	t taskServer
}

func (o oldTaskServer) Samples(req *pb.SamplesRequest, stream grpc.ServerStreamingServer[pb.SamplesResponse]) error {
	return o.t.Samples(req, stream)
}

// serve starts a plugin server for set on loopback. old serves the protocol
// as plugins built before the Calls stream and SampleBatches did.
func serve(t *testing.T, set *sdk.Set, old bool) (*grpc.ClientConn, func()) {
	t.Helper()
	var stop func()
	conn := serveWith(t, set, func(g *grpc.Server, s *Server) {
		stop = g.Stop
		if old {
			pb.RegisterLifecycleServer(g, lifecycleServer{s: s})
			pb.RegisterTaskServer(g, oldTaskServer{t: taskServer{s: s}})
			pb.RegisterModelServer(g, modelServer{s: s})
			pb.RegisterScorerServer(g, scorerServer{s: s})
		} else {
			s.Register(g)
		}
	})
	return conn, stop
}

// serveWith starts a plugin server for set on loopback with the services
// register registers.
func serveWith(t testing.TB, set *sdk.Set, register func(*grpc.Server, *Server)) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(ServerOptions(hclog.NewNullLogger())...)
	s := NewServer(set, hclog.NewNullLogger())
	register(g, s)
	go func() { _ = g.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), append(DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); g.Stop() })
	return conn
}

// serveScorer serves scorer as the one scorer of a plugin on loopback and
// returns hayloft's client of it, configured.
func serveScorer(t *testing.T, scorer sdk.Scorer) *ScorerClient {
	t.Helper()
	set := sdk.NewSet("scorertest", "1.0.0")
	set.RegisterScorer("s", func(context.Context, sdk.Options) (sdk.Scorer, error) { return scorer, nil })
	conn, _ := serve(t, set, false)
	return configureT[*ScorerClient](t, conn, sdk.KindScorer, "s")
}

func newMuxModel() *muxModel {
	return &muxModel{started: make(chan struct{}, 1), stopped: make(chan error, 1), sawDL: make(chan bool, 1)}
}

func configureT[C any](t *testing.T, conn *grpc.ClientConn, kind sdk.Kind, name string) C {
	t.Helper()
	c, err := Configure(context.Background(), conn, kind, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.(C)
}

// Many concurrent calls share the stream; each gets its own answer, with
// the new protocol and with a plugin that only speaks unary RPCs.
func TestConcurrentCallsGetTheirOwnReplies(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("old=%v", old), func(t *testing.T) {
			mconn, _ := serve(t, muxSet(newMuxModel(), 0), old)
			sconn, _ := serve(t, muxSet(newMuxModel(), 0), old)
			model := configureT[*ModelClient](t, mconn, sdk.KindModel, "m")
			scorer := configureT[*ScorerClient](t, sconn, sdk.KindScorer, "s")
			var wg sync.WaitGroup
			errs := make(chan error, 500)
			for i := range 500 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p := fmt.Sprint("p", i)
					r, err := model.Generate(context.Background(), &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: p}}})
					if err != nil || r.Text != "echo:"+p || len(r.Attempts) != 1 {
						errs <- fmt.Errorf("generate %s: %+v, %v", p, r, err)
						return
					}
					sc, err := scorer.Score(context.Background(), &sdk.ScoreRequest{Sample: &sdk.Sample{ID: r.Text}, Prediction: r.Text})
					if err != nil || sc.Value != 1 {
						errs <- fmt.Errorf("score %s: %+v, %v", p, sc, err)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if got := model.mux.unsupported; got != old {
				t.Errorf("mux unsupported = %v, want %v", got, old)
			}
		})
	}
}

// Errors keep their types and attempts across the stream; a panic becomes
// the call's error and the plugin keeps serving.
func TestCallErrorsKeepTheirKind(t *testing.T) {
	conn, _ := serve(t, muxSet(newMuxModel(), 0), false)
	model := configureT[*ModelClient](t, conn, sdk.KindModel, "m")
	ctx := context.Background()
	ask := func(p string) (*sdk.GenerateResponse, error) {
		return model.Generate(ctx, &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: p}}})
	}

	_, err := ask("fail")
	var ae *sdk.AttemptsError
	var re *sdk.RequestError
	if !errors.As(err, &ae) || len(ae.Attempts) != 2 || ae.Attempts[0].Error != "boom" || !errors.As(err, &re) || re.Code != sdk.CodeContextLength {
		t.Errorf("fail: %#v", err)
	}
	_, err = ask("panic")
	if err == nil || !strings.Contains(err.Error(), "model exploded") {
		t.Errorf("panic: %v", err)
	}
	if r, err := ask("after"); err != nil || r.Text != "echo:after" {
		t.Errorf("after a panic: %v, %v", r, err)
	}
}

// A caller that gives up gets its context's error at once, and the plugin's
// call is cancelled; a deadline travels with the call.
func TestCallCancellationReachesThePlugin(t *testing.T) {
	m := newMuxModel()
	conn, _ := serve(t, muxSet(m, 0), false)
	model := configureT[*ModelClient](t, conn, sdk.KindModel, "m")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := model.Generate(ctx, &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: "block"}}})
		done <- err
	}()
	<-m.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("caller got %v, want context.Canceled", err)
	}
	select {
	case err := <-m.stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("plugin's call ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin's call was never cancelled")
	}

	dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
	defer dcancel()
	if _, err := model.Generate(dctx, &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: "deadline"}}}); err != nil {
		t.Fatal(err)
	}
	if !<-m.sawDL {
		t.Error("the plugin's call had no deadline")
	}
}

// When the plugin goes away, calls waiting on the stream fail as a lost
// connection (which the host answers with a restart), not as a hang.
func TestBrokenStreamFailsWaitingCalls(t *testing.T) {
	m := newMuxModel()
	conn, stop := serve(t, muxSet(m, 0), false)
	model := configureT[*ModelClient](t, conn, sdk.KindModel, "m")
	done := make(chan error, 1)
	go func() {
		_, err := model.Generate(context.Background(), &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: "block"}}})
		done <- err
	}()
	<-m.started
	go stop()
	select {
	case err := <-done:
		if !errors.Is(err, ErrConnection) {
			t.Errorf("got %v, want ErrConnection", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting call hung after the plugin went away")
	}
}

// Samples arrive complete and in order whether the plugin batches them or
// sends one per message, and an early stop ends the stream.
func TestSampleBatchesAndFallback(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("old=%v", old), func(t *testing.T) {
			conn, _ := serve(t, muxSet(newMuxModel(), 1000), old)
			task := configureT[*TaskClient](t, conn, sdk.KindTask, "t")
			i := 0
			for s, err := range task.Samples(context.Background(), &sdk.SamplesRequest{}) {
				if err != nil {
					t.Fatal(err)
				}
				if s.ID != fmt.Sprint("s", i) || s.Context != strings.Repeat("x", i%7) {
					t.Fatalf("sample %d: %+v", i, s)
				}
				i++
			}
			if i != 1000 {
				t.Errorf("got %d samples, want 1000", i)
			}
			n := 0
			for range task.Samples(context.Background(), &sdk.SamplesRequest{}) {
				if n++; n == 10 {
					break
				}
			}
		})
	}
}

func TestTakeBatch(t *testing.T) {
	msg := func(n int) *pb.Call {
		return &pb.Call{Request: &pb.Call_Generate{Generate: &pb.GenerateRequest{Messages: []*pb.Message{{Content: strings.Repeat("a", n)}}}}}
	}
	for _, tc := range []struct {
		name  string
		sizes []int
		want  []int // batch lengths, in order
	}{
		{"empty", nil, nil},
		{"small ones go together", []int{10, 10, 10}, []int{3}},
		{"a huge call goes alone", []int{maxBatchBytes * 2, 10}, []int{1, 1}},
		{"split at the limit", []int{maxBatchBytes / 2, maxBatchBytes / 2, maxBatchBytes / 2}, []int{1, 1, 1}},
		{"split after the calls that fit", []int{maxBatchBytes / 2, maxBatchBytes/2 - 100, 200}, []int{2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q []*pb.Call
			for _, n := range tc.sizes {
				q = append(q, msg(n))
			}
			var got []int
			for len(q) > 0 {
				got = append(got, len(takeBatch(&q)))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("batches %v, want %v", got, tc.want)
			}
		})
	}
}

// bigTask yields n samples whose contexts are size bytes each.
type bigTask struct{ n, size int }

func (b bigTask) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		for i := range b.n {
			if !yield(&sdk.Sample{ID: fmt.Sprint("s", i), Context: strings.Repeat(string(rune('a'+i%26)), b.size)}, nil) {
				return
			}
		}
	}
}

// A batch of long samples stays within maxBatchBytes (just beyond it each
// side takes a buffer of twice the size from its pool), a sample larger
// than that goes alone, and none is lost or reordered at the split.
func TestSampleBatchesStayWithinTheLimit(t *testing.T) {
	for _, size := range []int{maxBatchBytes * 2 / 5, maxBatchBytes * 3 / 5, maxBatchBytes + 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			set := sdk.NewSet("bigtest", "1.0.0")
			set.RegisterTask("t", func(context.Context, sdk.Options) (sdk.Task, error) { return bigTask{n: 20, size: size}, nil })
			conn, _ := serve(t, set, false)
			configureT[*TaskClient](t, conn, sdk.KindTask, "t")
			stream, err := pb.NewTaskClient(conn).SampleBatches(context.Background(), &pb.SamplesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			for {
				batch, err := stream.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				total := 0
				for _, it := range batch.GetItems() {
					total += proto.Size(it)
					if id := it.GetSample().GetId(); id != fmt.Sprint("s", i) {
						t.Fatalf("sample %q, want s%d", id, i)
					}
					i++
				}
				if len(batch.GetItems()) > 1 && total > maxBatchBytes {
					t.Errorf("a batch of %d samples, %d bytes: more than %d", len(batch.GetItems()), total, maxBatchBytes)
				}
			}
			if i != 20 {
				t.Errorf("%d samples, want 20", i)
			}
		})
	}
}

// BenchmarkCallsStream measures the Calls stream's cost per call: 64
// callers at once, a model that answers at once, host and plugin in this
// process over loopback TCP. cpu-µs/call is the process's user+system CPU
// per call, both ends together.
func BenchmarkCallsStream(b *testing.B) {
	set := sdk.NewSet("muxbench", "1.0.0")
	set.RegisterModel("m", func(context.Context, sdk.Options) (sdk.Model, error) { return newMuxModel(), nil })
	conn := serveWith(b, set, func(g *grpc.Server, s *Server) { s.Register(g) })
	c, err := Configure(context.Background(), conn, sdk.KindModel, "m", nil)
	if err != nil {
		b.Fatal(err)
	}
	m := c.(*ModelClient)
	req := &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: "What is the code for door 17?"}},
		Sample: &sdk.Sample{ID: "s17", Question: "What is the code for door 17?", Targets: []string{"4821"}}}
	if _, err := m.Generate(context.Background(), req); err != nil { // opens the stream
		b.Fatal(err)
	}
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := m.Generate(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// servedModel answers as a model it found out about (sdk.ServedModeler)
// and names the options that never change its answers
// (sdk.TransportOptioner).
type servedModel struct {
	sdk.Model
	served string
}

func (m servedModel) ServedModel() string        { return m.served }
func (m servedModel) TransportOptions() []string { return []string{"timeout", "max_retries"} }

// What a plugin's model says of its identity reaches the host with the
// component, for the kernel's cache key: the model it found out it answers
// as, and its options that never change an answer. A model that does not
// say has neither.
func TestModelIdentityCrossesTheWire(t *testing.T) {
	for _, tc := range []struct {
		model     sdk.Model
		served    string
		transport []string
	}{
		{servedModel{newMuxModel(), "served-7b"}, "served-7b", []string{"timeout", "max_retries"}},
		{newMuxModel(), "", nil},
	} {
		set := sdk.NewSet("modeltest", "1.0.0")
		set.RegisterModel("m", func(context.Context, sdk.Options) (sdk.Model, error) { return tc.model, nil })
		conn, _ := serve(t, set, false)
		mc := configureT[*ModelClient](t, conn, sdk.KindModel, "m")
		var _ sdk.ServedModeler = mc
		var _ sdk.TransportOptioner = mc
		if got := mc.ServedModel(); got != tc.served {
			t.Errorf("ServedModel = %q, want %q", got, tc.served)
		}
		if got := mc.TransportOptions(); !slices.Equal(got, tc.transport) {
			t.Errorf("TransportOptions = %q, want %q", got, tc.transport)
		}
	}
}
