package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hayloft/hayloft/sdk"
	pb "github.com/hayloft/hayloft/sdk/plugin/proto/hayloft/plugin/v1"
)

// Server is the plugin side of the protocol: it builds one component from a
// Set on Configure and answers the kind's service with it. A Server holds at
// most one component; a second Configure is refused.
type Server struct {
	set    *sdk.Set
	logger hclog.Logger
	// kind and name, when set, restrict Configure to the one component the
	// process was started for.
	kind sdk.Kind
	name string

	// broker, under go-plugin, reaches services the host offers back.
	broker *goplugin.GRPCBroker

	mu        sync.RWMutex
	comp      any
	ckind     sdk.Kind
	cacheConn *grpc.ClientConn // to the host's embedding cache, if offered

	batches atomic.Int64 // ScoreBatch calls running (batchWorkers)
}

// NewServer returns a Server for any component of set. A nil logger discards.
func NewServer(set *sdk.Set, logger hclog.Logger) *Server {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Server{set: set, logger: logger}
}

// Register adds the protocol's services to g.
func (s *Server) Register(g grpc.ServiceRegistrar) {
	pb.RegisterLifecycleServer(g, lifecycleServer{s: s})
	pb.RegisterTaskServer(g, taskServer{s: s})
	pb.RegisterModelServer(g, modelServer{s: s})
	pb.RegisterScorerServer(g, scorerServer{s: s})
	pb.RegisterRetrieverServer(g, retrieverServer{s: s})
	pb.RegisterCallsServer(g, callsServer{s: s})
}

// ServerOptions are the gRPC server options every hayloft plugin server
// needs: message limits that fit a 1M-token context, and interceptors that
// turn a panic in component code into an error instead of a dead process.
func ServerOptions(logger hclog.Logger) []grpc.ServerOption {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageSize),
		grpc.MaxSendMsgSize(MaxMessageSize),
		experimental.BufferPool(bufferPool),
		grpc.ReadBufferSize(transportBuffer), grpc.WriteBufferSize(transportBuffer),
		grpc.InitialWindowSize(flowWindow), grpc.InitialConnWindowSize(flowWindow),
		grpc.ForceServerCodecV2(codec{}),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
			defer recoverPanic(logger, info.FullMethod, &err)
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
			defer recoverPanic(logger, info.FullMethod, &err)
			return h(srv, ss)
		}),
	}
}

func recoverPanic(logger hclog.Logger, method string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	*err = panicStatus(logger, method, r)
}

// panicStatus logs a recovered panic and returns it as the call's error.
func panicStatus(logger hclog.Logger, method string, r any) error {
	logger.Error("panic in component", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return protoStatus(&pb.Error{Kind: pb.Error_KIND_PANIC, Message: fmt.Sprintf("panic in plugin component (%s): %v", method, r)})
}

// component returns the configured component if it is of kind.
func (s *Server) component(kind sdk.Kind) (any, error) {
	s.mu.RLock()
	c, k := s.comp, s.ckind
	s.mu.RUnlock()
	if c == nil {
		return nil, plainStatus(codes.FailedPrecondition, "plugin component not configured: call Configure first")
	}
	if k != kind {
		return nil, toStatus(fmt.Errorf("the configured component is a %s, not a %s: %w", k, kind, sdk.ErrUnsupported))
	}
	return c, nil
}

type lifecycleServer struct {
	pb.UnimplementedLifecycleServer
	s *Server
}

func (l lifecycleServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	s := l.s
	proto := protocolName()
	if req.GetProtocol() != "" && req.GetProtocol() != proto {
		return nil, plainStatus(codes.FailedPrecondition, "plugin %q speaks %s, this hayloft speaks %s", s.set.Name, proto, req.GetProtocol())
	}
	kind, name := sdk.Kind(req.GetKind()), req.GetName()
	if s.kind != "" && (kind != s.kind || name != s.name) {
		return nil, plainStatus(codes.FailedPrecondition, "this process serves %s %q, not %s %q", s.kind, s.name, kind, name)
	}
	if !s.set.Has(kind, name) {
		return nil, toStatus(fmt.Errorf("plugin %q has no %s %q: %w", s.set.Name, kind, name, sdk.ErrUnsupported))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.comp != nil {
		return nil, plainStatus(codes.FailedPrecondition, "plugin component already configured as %s", s.ckind)
	}
	build := s.set.New
	if req.GetCheckOnly() {
		build = s.set.Build
	}
	var cacheConn *grpc.ClientConn
	if id := req.GetEmbeddingCache(); id != 0 && !req.GetCheckOnly() {
		conn, cache, err := s.dialEmbeddingCache(id)
		if err != nil {
			return nil, toStatus(err)
		}
		cacheConn = conn
		ctx = sdk.WithEmbeddingCache(ctx, cache)
	}
	c, err := build(ctx, kind, name, sdk.Options(req.GetOptionsJson()))
	if err != nil {
		if cacheConn != nil {
			cacheConn.Close()
		}
		return nil, toStatus(err)
	}
	s.comp, s.ckind, s.cacheConn = c, kind, cacheConn
	s.logger.Debug("configured", "kind", kind, "name", name)
	return &pb.ConfigureResponse{
		PluginName:       s.set.Name,
		PluginVersion:    s.set.Version,
		Protocol:         proto,
		Capabilities:     Capabilities(c),
		Features:         servedFeatures,
		ServedModel:      ServedModel(c),
		TransportOptions: TransportOptions(c),
	}, nil
}

// TransportOptions are c's options that never change an answer, when it
// says (sdk.TransportOptioner), else none.
func TransportOptions(c any) []string {
	if t, ok := c.(sdk.TransportOptioner); ok {
		return t.TransportOptions()
	}
	return nil
}

// ServedModel is the model c answers as, when it says (sdk.ServedModeler),
// else "".
func ServedModel(c any) string {
	if sm, ok := c.(sdk.ServedModeler); ok {
		return sm.ServedModel()
	}
	return ""
}

// Capabilities names the optional interfaces c implements (CapAggregator,
// CapTokenizer, ...), so a host can tell "not supported" without a failing
// call.
func Capabilities(c any) []string {
	var caps []string
	if _, ok := c.(sdk.Aggregator); ok {
		caps = append(caps, CapAggregator)
	}
	if _, ok := c.(sdk.Tokenizer); ok {
		caps = append(caps, CapTokenizer)
	}
	if _, ok := c.(sdk.Validator); ok {
		caps = append(caps, CapValidator)
	}
	if _, ok := c.(io.Closer); ok {
		caps = append(caps, CapCloser)
	}
	if r, ok := c.(sdk.SampleReader); ok && r.ReadsSample() {
		caps = append(caps, CapSample)
	}
	return caps
}

func (l lifecycleServer) Validate(ctx context.Context, _ *pb.ValidateRequest) (*pb.ValidateResponse, error) {
	l.s.mu.RLock()
	c := l.s.comp
	l.s.mu.RUnlock()
	if c == nil {
		return nil, plainStatus(codes.FailedPrecondition, "plugin component not configured: call Configure first")
	}
	if v, ok := c.(sdk.Validator); ok {
		if err := v.Validate(ctx); err != nil {
			return nil, toStatus(err)
		}
	}
	return &pb.ValidateResponse{}, nil
}

func (l lifecycleServer) Close(context.Context, *pb.CloseRequest) (*pb.CloseResponse, error) {
	s := l.s
	s.mu.Lock()
	c, cacheConn := s.comp, s.cacheConn
	s.comp, s.ckind, s.cacheConn = nil, "", nil
	s.mu.Unlock()
	var err error
	if cl, ok := c.(io.Closer); ok {
		err = cl.Close()
	}
	if cacheConn != nil {
		// After the component: its Close may still write to the cache.
		cacheConn.Close()
	}
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.CloseResponse{}, nil
}

type taskServer struct {
	pb.UnimplementedTaskServer
	s *Server
}

func (t taskServer) Samples(req *pb.SamplesRequest, stream grpc.ServerStreamingServer[pb.SamplesResponse]) error {
	c, err := t.s.component(sdk.KindTask)
	if err != nil {
		return err
	}
	ctx := stream.Context()
	for smp, err := range c.(sdk.Task).Samples(ctx, &sdk.SamplesRequest{Limit: int(req.GetLimit())}) {
		var msg pb.SamplesResponse
		if err == nil {
			msg.Sample, err = sampleToProto(smp)
		}
		if err != nil {
			msg.Error = errorToProto(err)
		}
		if err := stream.Send(&msg); err != nil {
			// The host stopped reading (early stop or cancellation); breaking
			// out of the loop makes the task's yield return false.
			return err
		}
	}
	return ctx.Err()
}

// sampleQueue is how many samples SampleBatches lets the task run ahead of
// the stream: enough to fill a batch while one is being sent, few enough
// that long contexts do not pile up in memory.
const sampleQueue = 16

// sampleQueueBytes bounds the queue's bytes: a sample larger than that
// still goes, alone. Two 128K-token contexts: at 4 MB, the NIAH task's
// process held 3 MB more live and peaked some 4 MB higher, and the
// transport holds those sent but not yet read besides.
const sampleQueueBytes = 1 << 20

func (t taskServer) SampleBatches(req *pb.SamplesRequest, stream grpc.ServerStreamingServer[pb.SampleBatch]) error {
	c, err := t.s.component(sdk.KindTask)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	items := make(chan *pb.SamplesResponse, sampleQueue)
	// The queue is bounded in bytes too: sixteen long-context samples
	// would hold some 8 MB ahead of what the host has asked for.
	var queued atomic.Int64
	space := make(chan struct{}, 1)
	go func() {
		defer close(items)
		// This goroutine is outside the stream interceptor's reach.
		defer func() {
			if r := recover(); r != nil {
				e := replyError(panicStatus(t.s.logger, "/hayloft.plugin.v1.Task/SampleBatches", r))
				select {
				case items <- &pb.SamplesResponse{Error: e}:
				case <-ctx.Done():
				}
			}
		}()
		for smp, err := range c.(sdk.Task).Samples(ctx, &sdk.SamplesRequest{Limit: int(req.GetLimit())}) {
			msg := &pb.SamplesResponse{}
			if err == nil {
				msg.Sample, err = sampleToProto(smp)
			}
			if err != nil {
				msg.Error = errorToProto(err)
			}
			for queued.Load() >= sampleQueueBytes {
				select {
				case <-space:
				case <-ctx.Done():
					return
				}
			}
			queued.Add(int64(proto.Size(msg)))
			select {
			case items <- msg:
			case <-ctx.Done():
				return // the host stopped reading: end the task's iteration
			}
		}
	}()
	// sent gives the sent messages' room back to the producer.
	sent := func(size int) {
		queued.Add(-int64(size))
		select {
		case space <- struct{}{}:
		default:
		}
	}
	// A batch stops before the sample that would take it past
	// maxBatchBytes (that sample opens the next), as the calls' batches do:
	// two long contexts of 0.6 MB in one message take a pooled buffer of
	// 2 MB (bufferPool's tiers are powers of two) on both sides, and a
	// buffer beyond the largest tier is allocated afresh each time.
	var held *pb.SamplesResponse
	for {
		msg := held
		if msg == nil {
			var ok bool
			if msg, ok = <-items; !ok {
				return stream.Context().Err()
			}
		}
		held = nil
		batch := []*pb.SamplesResponse{msg}
		size := proto.Size(msg)
	drain:
		for size < maxBatchBytes {
			select {
			case m, ok := <-items:
				if !ok {
					break drain // the next receive ends the stream
				}
				n := proto.Size(m)
				if size+n > maxBatchBytes {
					held = m
					break drain
				}
				batch = append(batch, m)
				size += n
			default:
				break drain
			}
		}
		if err := stream.Send(&pb.SampleBatch{Items: batch}); err != nil {
			return err
		}
		sent(size)
	}
}

func (t taskServer) CountSamples(ctx context.Context, req *pb.SamplesRequest) (*pb.CountSamplesResponse, error) {
	c, err := t.s.component(sdk.KindTask)
	if err != nil {
		return nil, err
	}
	sc, ok := c.(sdk.SampleCounter)
	if !ok {
		return nil, toStatus(fmt.Errorf("task cannot count its samples: %w", sdk.ErrUnsupported))
	}
	n, err := sc.CountSamples(ctx, &sdk.SamplesRequest{Limit: int(req.GetLimit())})
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.CountSamplesResponse{Count: int64(n)}, nil
}

type modelServer struct {
	pb.UnimplementedModelServer
	s *Server
}

func (m modelServer) Generate(ctx context.Context, req *pb.GenerateRequest) (*pb.GenerateResponse, error) {
	c, err := m.s.component(sdk.KindModel)
	if err != nil {
		return nil, err
	}
	r, err := generateRequestFromProto(req)
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := c.(sdk.Model).Generate(ctx, r)
	if err != nil {
		return nil, toStatus(err)
	}
	if resp == nil {
		return nil, plainStatus(codes.Internal, "model returned neither a response nor an error")
	}
	return generateResponseToProto(resp), nil
}

func (m modelServer) Tokenize(ctx context.Context, req *pb.TokenizeRequest) (*pb.TokenizeResponse, error) {
	c, err := m.s.component(sdk.KindModel)
	if err != nil {
		return nil, err
	}
	tk, ok := c.(sdk.Tokenizer)
	if !ok {
		return nil, toStatus(fmt.Errorf("model has no tokenizer: %w", sdk.ErrUnsupported))
	}
	resp, err := tk.Tokenize(ctx, &sdk.TokenizeRequest{Texts: req.GetTexts()})
	if err != nil {
		return nil, toStatus(err)
	}
	if resp == nil {
		return nil, plainStatus(codes.Internal, "tokenizer returned neither a response nor an error")
	}
	return tokenizeResponseToProto(resp), nil
}

type scorerServer struct {
	pb.UnimplementedScorerServer
	s *Server
}

func (sc scorerServer) Score(ctx context.Context, req *pb.ScoreRequest) (*pb.ScoreResponse, error) {
	c, err := sc.s.component(sdk.KindScorer)
	if err != nil {
		return nil, err
	}
	smp, err := sampleFromProto(req.GetSample())
	if err != nil {
		return nil, toStatus(err)
	}
	return scoreToProto(ctx, c.(sdk.Scorer), &sdk.ScoreRequest{Sample: smp, Prediction: req.GetPrediction(), ForAggregate: req.GetForAggregate(), ScoreObject: req.GetScoreObject()})
}

func (sc scorerServer) Aggregate(ctx context.Context, req *pb.AggregateRequest) (*pb.AggregateResponse, error) {
	c, err := sc.s.component(sdk.KindScorer)
	if err != nil {
		return nil, err
	}
	ag, ok := c.(sdk.Aggregator)
	if !ok {
		return nil, toStatus(fmt.Errorf("scorer has no aggregator: %w", sdk.ErrUnsupported))
	}
	_, noDetails := ag.(sdk.StatsAggregator)
	if b := req.GetPacked(); len(b) > 0 {
		if len(req.GetScores()) > 0 {
			return nil, toStatus(errors.New("aggregate: both scores and packed scores"))
		}
		results, err := unpackScoreResults(b)
		if err != nil {
			return nil, toStatus(fmt.Errorf("aggregate: %w", err))
		}
		scores := make([]*sdk.ScoreResponse, len(results))
		for i, r := range results {
			if !noDetails {
				if r.Response.Details, err = r.Details(); err != nil {
					return nil, toStatus(fmt.Errorf("score %d: %w", i, err))
				}
			}
			scores[i] = r.Response
		}
		return sc.aggregate(ctx, ag, scores)
	}
	scores := make([]*sdk.ScoreResponse, len(req.GetScores()))
	var slab []sdk.ScoreResponse // without details: one allocation for all
	if noDetails {
		slab = make([]sdk.ScoreResponse, len(scores))
	}
	for i, p := range req.GetScores() {
		if noDetails {
			slab[i] = sdk.ScoreResponse{Value: p.GetValue(), Invalid: p.GetInvalid(), Stats: p.GetStats()}
			scores[i] = &slab[i]
			continue
		}
		if scores[i], err = scoreResponseFromProto(p); err != nil {
			return nil, toStatus(fmt.Errorf("score %d: %w", i, err))
		}
	}
	return sc.aggregate(ctx, ag, scores)
}

// aggregate is ag's aggregate of scores, as a message.
func (sc scorerServer) aggregate(ctx context.Context, ag sdk.Aggregator, scores []*sdk.ScoreResponse) (*pb.AggregateResponse, error) {
	resp, err := ag.Aggregate(ctx, &sdk.AggregateRequest{Scores: scores})
	if err != nil {
		return nil, toStatus(err)
	}
	if resp == nil {
		return nil, plainStatus(codes.Internal, "aggregator returned neither a response nor an error")
	}
	out, err := aggregateResponseToProto(resp)
	return out, toStatus(err)
}

// ScoreBatch scores every request through Score, spread over as many
// goroutines as the plugin has processors: one message carries the batch
// each way, and a failing request fails alone, in its own result.
func (sc scorerServer) ScoreBatch(ctx context.Context, req *pb.ScoreBatchRequest) (*pb.ScoreBatchResponse, error) {
	c, err := sc.s.component(sdk.KindScorer)
	if err != nil {
		return nil, err
	}
	scorer := c.(sdk.Scorer)
	reqs := req.GetRequests()
	var unpacked []sdk.ScoreRequest // the packed form's requests
	var mem *batchMem               // its reply's arrays, reused once the reply is packed
	if b := req.GetPacked(); len(b) > 0 {
		if len(reqs) > 0 {
			return nil, toStatus(errors.New("score batch: both requests and packed requests"))
		}
		mem = batchMems.Get().(*batchMem)
		if _, borrows := scorer.(sdk.Borrower); borrows {
			unpacked, err = decodeScoreRequests(b, &mem.requests)
		} else {
			unpacked, err = unpackScoreRequests(b)
		}
		if err != nil {
			batchMems.Put(mem)
			return nil, toStatus(err)
		}
	}
	n := len(reqs) + len(unpacked)
	// Each request's sample, result and response live in arrays of the
	// batch: four allocations a batch instead of three a request, and
	// none for a packed batch whose arrays are reused.
	var results []*pb.ScoreResult
	var resultSlab []pb.ScoreResult
	var respSlab []pb.ScoreResponse
	var samples []sdk.Sample
	if mem != nil {
		results, resultSlab, respSlab = mem.replySlabs(n)
	} else {
		results = make([]*pb.ScoreResult, n)
		resultSlab = make([]pb.ScoreResult, n)
		respSlab = make([]pb.ScoreResponse, n)
		samples = make([]sdk.Sample, n)
	}
	running := sc.s.batches.Add(1)
	defer sc.s.batches.Add(-1)
	workers := batchWorkers(runtime.GOMAXPROCS(0), int(running), n)
	var chunks [][][]byte // per worker: the details chunks it took, for mem
	if mem != nil {
		chunks = mem.workerChunks(workers)
	}
	var next atomic.Int64
	work := func(w int) {
		var details []byte // this worker's details, one buffer for many
		for {
			i := int(next.Add(1)) - 1
			if i >= n {
				return
			}
			results[i] = &resultSlab[i]
			if cap(details)-len(details) < detailsChunk/8 {
				details = newDetailsChunk()
				if chunks != nil {
					chunks[w] = append(chunks[w], details)
				}
			}
			if unpacked != nil {
				details = sc.scoreOne(ctx, scorer, nil, nil, &unpacked[i], results[i], &respSlab[i], details)
				continue
			}
			details = sc.scoreOne(ctx, scorer, reqs[i], &samples[i], nil, results[i], &respSlab[i], details)
		}
	}
	// The handler's own goroutine is one of the workers: a small batch
	// (the run path's, under light load) starts no goroutine at all, and
	// each one started grows a fresh stack through the scorer.
	var wg sync.WaitGroup
	for w := range workers - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(w + 1)
		}()
	}
	work(0)
	wg.Wait()
	if unpacked != nil {
		if packed := packScoreResults(results); packed != nil {
			// The packed reply is a copy: nothing refers to the batch's
			// arrays, details or packed requests any more.
			mem.release()
			releasePacked(req.GetPacked())
			return &pb.ScoreBatchResponse{Packed: packed}, nil
		}
	}
	return &pb.ScoreBatchResponse{Results: results}, nil
}

// batchWorkers is how many goroutines score a batch of n requests when
// running batches (this one included) are being scored at once on procs
// processors: the processors the other batches leave, at least one. A
// batch alone (the run path under light load) is spread over all of
// them; `hayloft score` keeps several in flight, which keep the
// processors busy by themselves, and a batch split further only added
// goroutine wake-ups and hand-offs (a few percent of the plugin's CPU).
func batchWorkers(procs, running, n int) int {
	return max(1, min(procs-(running-1), n))
}

// batchMem is the memory of one packed ScoreBatch's reply: its results,
// responses and details chunks, and its requests if the scorer only
// borrows them (sdk.Borrower; otherwise they are the scorer's to keep:
// unpackScoreRequests). Once the reply is packed (a copy) it goes back to
// batchMems for the next batch; fresh memory for each batch cost `hayloft
// score`'s plugin a page fault per 4 KiB, a fifth of its time with a
// trivial scorer.
type batchMem struct {
	results    []*pb.ScoreResult
	resultSlab []pb.ScoreResult
	respSlab   []pb.ScoreResponse
	chunks     [][][]byte
	requests   requestArrays
}

var batchMems = sync.Pool{New: func() any { return new(batchMem) }}

// replySlabs are m's result arrays for n requests, zeroed.
func (m *batchMem) replySlabs(n int) ([]*pb.ScoreResult, []pb.ScoreResult, []pb.ScoreResponse) {
	m.results = reuse(m.results, n)[:n]
	m.resultSlab = reuse(m.resultSlab, n)[:n]
	m.respSlab = reuse(m.respSlab, n)[:n]
	return m.results, m.resultSlab, m.respSlab
}

// workerChunks is m's empty lists of details chunks for workers.
func (m *batchMem) workerChunks(workers int) [][][]byte {
	for len(m.chunks) < workers {
		m.chunks = append(m.chunks, nil)
	}
	return m.chunks[:workers]
}

// release hands m's details chunks to detailsChunks and m to batchMems.
func (m *batchMem) release() {
	for w, list := range m.chunks {
		for i, c := range list {
			c = c[:0]
			detailsChunks.Put(&c)
			list[i] = nil
		}
		m.chunks[w] = list[:0]
	}
	batchMems.Put(m)
}

// detailsChunks holds details chunks of packed batches already answered.
var detailsChunks = sync.Pool{}

// newDetailsChunk is an empty details chunk, reused if one is free.
func newDetailsChunk() []byte {
	if c, ok := detailsChunks.Get().(*[]byte); ok {
		return (*c)[:0]
	}
	return make([]byte, 0, detailsChunk)
}

// detailsChunk is the size of the buffers a ScoreBatch worker appends
// details to: many samples' details each.
const detailsChunk = 32 << 10

// scoreOne is one request of a batch, its outcome written to r (with resp
// as its response, when it has one); a panic in the scorer becomes that
// request's error, as it would for a unary call. req is the request's
// message, whose sample is converted into smp; or nil, and decoded the
// request itself (a packed batch). A DetailsJSONScorer's
// details are appended to details, whose free room is returned for the
// next request: they are only read (encoded) after the batch, and never
// appended to again.
func (sc scorerServer) scoreOne(ctx context.Context, scorer sdk.Scorer, req *pb.ScoreRequest, smp *sdk.Sample, decoded *sdk.ScoreRequest, r *pb.ScoreResult, resp *pb.ScoreResponse, details []byte) (rest []byte) {
	rest = details
	var err error
	defer func() {
		if err != nil {
			r.Response, r.Error = nil, replyError(err)
		}
	}()
	defer recoverPanic(sc.s.logger, "/hayloft.plugin.v1.Scorer/ScoreBatch", &err)
	sreq := decoded
	if req != nil {
		var sample *sdk.Sample
		if p := req.GetSample(); p != nil {
			if err = sampleFromProtoInto(smp, p); err != nil {
				err = toStatus(err)
				return rest
			}
			sample = smp
		}
		sreq = &sdk.ScoreRequest{Sample: sample, Prediction: req.GetPrediction(), ForAggregate: req.GetForAggregate(), ScoreObject: req.GetScoreObject()}
	}
	if cap(details)-len(details) < detailsChunk/8 {
		details = newDetailsChunk()
	}
	var out *pb.ScoreResponse
	out, rest, err = scoreToProtoInto(ctx, scorer, sreq, resp, details[len(details):])
	if rest == nil {
		rest = details
	}
	r.Response = out
	return rest
}

type retrieverServer struct {
	pb.UnimplementedRetrieverServer
	s *Server
}

func (rs retrieverServer) Retrieve(ctx context.Context, req *pb.RetrieveRequest) (*pb.RetrieveResponse, error) {
	c, err := rs.s.component(sdk.KindRetriever)
	if err != nil {
		return nil, err
	}
	smp, err := sampleFromProto(req.GetSample())
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := c.(sdk.Retriever).Retrieve(ctx, &sdk.RetrieveRequest{Sample: smp})
	if err != nil {
		return nil, toStatus(err)
	}
	if resp == nil {
		return nil, plainStatus(codes.Internal, "retriever returned neither a response nor an error")
	}
	out, err := retrieveResponseToProto(resp)
	return out, toStatus(err)
}

// plainStatus is an error of the protocol itself (not the component's),
// carrying a detail so the host shows the message as it is.
func plainStatus(code codes.Code, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	st, err := status.New(code, msg).WithDetails(&pb.Error{Message: msg})
	if err != nil {
		return status.Error(code, msg)
	}
	return st.Err()
}
