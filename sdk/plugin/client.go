package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hayloft/hayloft/sdk"
	pb "github.com/hayloft/hayloft/sdk/plugin/proto/hayloft/plugin/v1"
)

// Info describes a configured remote component.
type Info struct {
	Kind         sdk.Kind
	Name         string
	Plugin       string // the plugin's Set name
	Version      string // the plugin's Set version
	Protocol     string
	Capabilities []string // CapAggregator, CapTokenizer, ...
	Features     []string // protocol features the plugin serves: FeatureScoreBatchCall, ...
	// ServedModel is the model a model component answers as, when it said
	// so once provisioned (sdk.ServedModeler); "" otherwise.
	ServedModel string
	// TransportOptions are a model component's options that never change
	// an answer (sdk.TransportOptioner).
	TransportOptions []string
}

// Has reports whether the component implements the optional interface cap.
func (i Info) Has(cap string) bool { return slices.Contains(i.Capabilities, cap) }

// Serves reports whether the plugin serves protocol feature f.
func (i Info) Serves(f string) bool { return slices.Contains(i.Features, f) }

// Component is the host side of one configured remote component. The value
// Configure returns is also the kind's SDK interface: a *TaskClient
// (sdk.Task), *ModelClient (sdk.Model, sdk.Tokenizer), *ScorerClient
// (sdk.Scorer, sdk.Aggregator) or *RetrieverClient (sdk.Retriever). Optional
// methods the remote component lacks return an error wrapping
// sdk.ErrUnsupported.
type Component interface {
	Info() Info
	// Validate runs the component's sdk.Validator, if it has one.
	Validate(ctx context.Context) error
	// Close releases the remote component (its io.Closer). It does not end
	// the plugin process: whoever started the process does that.
	Close() error
}

// Configure builds kind/name with opts in the plugin at the other end of
// conn and returns its client. Option errors come back as *sdk.ConfigError.
func Configure(ctx context.Context, conn grpc.ClientConnInterface, kind sdk.Kind, name string, opts sdk.Options) (Component, error) {
	return ConfigureWith(ctx, conn, kind, name, opts, ConfigureOptions{})
}

// ConfigureOptions are the host's side of a Configure.
type ConfigureOptions struct {
	// CheckOnly builds without provisioning; see ConfigureCheck.
	CheckOnly bool
	// EmbeddingCache is the broker id of the cache the host serves for the
	// component (Conn.ServeEmbeddingCache); 0: none.
	EmbeddingCache uint32
}

// ConfigureWith is Configure with the host's options.
func ConfigureWith(ctx context.Context, conn grpc.ClientConnInterface, kind sdk.Kind, name string, opts sdk.Options, co ConfigureOptions) (Component, error) {
	return configure(ctx, conn, &pb.ConfigureRequest{Kind: string(kind), Name: name, OptionsJson: opts, Protocol: Protocol,
		CheckOnly: co.CheckOnly, EmbeddingCache: co.EmbeddingCache})
}

// ConfigureCheck is Configure without provisioning (sdk.Set.Build): the
// component's options are checked, and nothing is started or contacted.
func ConfigureCheck(ctx context.Context, conn grpc.ClientConnInterface, kind sdk.Kind, name string, opts sdk.Options) (Component, error) {
	return ConfigureWith(ctx, conn, kind, name, opts, ConfigureOptions{CheckOnly: true})
}

func configure(ctx context.Context, conn grpc.ClientConnInterface, req *pb.ConfigureRequest) (Component, error) {
	kind, name := sdk.Kind(req.GetKind()), req.GetName()
	r := remote{lc: pb.NewLifecycleClient(conn), mux: newCallMux(conn)}
	resp, err := r.lc.Configure(ctx, req)
	if err != nil {
		return nil, fromStatus(ctx, err)
	}
	if resp.GetProtocol() != Protocol {
		return nil, fmt.Errorf("plugin %q speaks %s, this hayloft speaks %s", resp.GetPluginName(), resp.GetProtocol(), Protocol)
	}
	r.info = Info{
		Kind:             kind,
		Name:             name,
		Plugin:           resp.GetPluginName(),
		Version:          resp.GetPluginVersion(),
		Protocol:         resp.GetProtocol(),
		Capabilities:     resp.GetCapabilities(),
		Features:         resp.GetFeatures(),
		ServedModel:      resp.GetServedModel(),
		TransportOptions: resp.GetTransportOptions(),
	}
	switch kind {
	case sdk.KindTask:
		return &TaskClient{remote: r, c: pb.NewTaskClient(conn)}, nil
	case sdk.KindModel:
		return &ModelClient{remote: r, c: pb.NewModelClient(conn)}, nil
	case sdk.KindScorer:
		return &ScorerClient{remote: r, c: pb.NewScorerClient(conn)}, nil
	case sdk.KindRetriever:
		return &RetrieverClient{remote: r, c: pb.NewRetrieverClient(conn)}, nil
	}
	// The plugin accepted a kind we cannot speak to; release it.
	_, _ = r.lc.Close(ctx, &pb.CloseRequest{})
	return nil, fmt.Errorf("configure %s %q: unknown kind: %w", kind, name, sdk.ErrUnsupported)
}

// errNoResponse is a reply that carries neither a response of the call's
// kind nor an error: a plugin bug, not a transport failure.
var errNoResponse = errors.New("plugin replied with neither a response nor an error")

// closeTimeout bounds Close, which has no context of its own.
const closeTimeout = 10 * time.Second

type remote struct {
	lc   pb.LifecycleClient
	mux  *callMux // Generate, Score and Retrieve
	info Info
}

func (r *remote) Info() Info { return r.info }

func (r *remote) Validate(ctx context.Context) error {
	_, err := r.lc.Validate(ctx, &pb.ValidateRequest{})
	return fromStatus(ctx, err)
}

func (r *remote) Close() error {
	r.mux.close()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_, err := r.lc.Close(ctx, &pb.CloseRequest{})
	return fromStatus(ctx, err)
}

// ServedModel is the model the remote model answers as, when it said so
// (sdk.ServedModeler).
func (m *ModelClient) ServedModel() string { return m.info.ServedModel }

// TransportOptions are the remote model's options that never change an
// answer (sdk.TransportOptioner).
func (m *ModelClient) TransportOptions() []string { return m.info.TransportOptions }

// TaskClient is a remote sdk.Task.
type TaskClient struct {
	remote
	c pb.TaskClient
}

// Samples streams the remote task's samples. Stopping early (yield returning
// false) or cancelling ctx cancels the stream, which stops the remote task.
func (t *TaskClient) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		preq := &pb.SamplesRequest{}
		if req != nil {
			preq.Limit = int64(req.Limit)
		}
		stream, err := t.c.SampleBatches(sctx, preq)
		if err != nil {
			yield(nil, fromStatus(ctx, err))
			return
		}
		for first := true; ; first = false {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if first && status.Code(err) == codes.Unimplemented {
					t.samplesOneByOne(ctx, sctx, preq, yield)
					return
				}
				yield(nil, fromStatus(ctx, err))
				return
			}
			for _, item := range msg.GetItems() {
				// A batch may hold many samples that left the plugin before
				// the cancel reached it: the consumer sees the cancel, not them.
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
				if !yieldItem(item, yield) {
					return
				}
			}
		}
	}
}

// samplesOneByOne is Samples over the one-sample-per-message RPC, for
// plugins built before SampleBatches.
func (t *TaskClient) samplesOneByOne(ctx, sctx context.Context, req *pb.SamplesRequest, yield func(*sdk.Sample, error) bool) {
	stream, err := t.c.Samples(sctx, req)
	if err != nil {
		yield(nil, fromStatus(ctx, err))
		return
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			yield(nil, fromStatus(ctx, err))
			return
		}
		if !yieldItem(msg, yield) {
			return
		}
	}
}

// yieldItem passes one stream item on: a per-item error, or a sample.
func yieldItem(msg *pb.SamplesResponse, yield func(*sdk.Sample, error) bool) bool {
	if e := msg.GetError(); e != nil {
		return yield(nil, errorFromProto(e))
	}
	s, err := sampleFromProto(msg.GetSample())
	if err == nil && s == nil {
		err = errors.New("plugin sent an empty stream message")
	}
	return yield(s, err)
}

// ModelClient is a remote sdk.Model and sdk.Tokenizer.
type ModelClient struct {
	remote
	c pb.ModelClient
}

func (m *ModelClient) Generate(ctx context.Context, req *sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	p, err := generateRequestToProto(req)
	if err != nil {
		return nil, err
	}
	// The unary fallback has no interim replies: a caller that wants the
	// prefill hears of it from the answer, as with a model that does not
	// stream.
	call := &pb.Call{Request: &pb.Call_Generate{Generate: p}, WantPrefilled: sdk.WantsPrefill(ctx)}
	r, err := m.mux.muxCall(ctx, call, func() (*pb.Reply, error) {
		resp, err := m.c.Generate(ctx, p)
		return &pb.Reply{Response: &pb.Reply_Generate{Generate: resp}}, err
	})
	if err != nil {
		return nil, err
	}
	resp := r.GetGenerate()
	if resp == nil {
		return nil, errNoResponse
	}
	return generateResponseFromProto(resp), nil
}

// Tokenize returns an error wrapping sdk.ErrUnsupported when the remote
// model is not an sdk.Tokenizer.
func (m *ModelClient) Tokenize(ctx context.Context, req *sdk.TokenizeRequest) (*sdk.TokenizeResponse, error) {
	resp, err := m.c.Tokenize(ctx, &pb.TokenizeRequest{Texts: req.Texts})
	if err != nil {
		return nil, fromStatus(ctx, err)
	}
	return tokenizeResponseFromProto(resp), nil
}

// CountSamples asks the remote task how many samples it would yield;
// sdk.ErrUnsupported when it cannot tell.
func (t *TaskClient) CountSamples(ctx context.Context, req *sdk.SamplesRequest) (int, error) {
	var limit int64
	if req != nil {
		limit = int64(req.Limit)
	}
	resp, err := t.c.CountSamples(ctx, &pb.SamplesRequest{Limit: limit})
	if err != nil {
		return 0, fromStatus(ctx, err)
	}
	return int(resp.GetCount()), nil
}

// ScorerClient is a remote sdk.Scorer and sdk.Aggregator.
type ScorerClient struct {
	remote
	c pb.ScorerClient

	batchMu sync.Mutex
	noBatch bool // the plugin predates ScoreBatch
}

func (s *ScorerClient) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	smp, err := sampleToProto(req.Sample)
	if err != nil {
		return nil, err
	}
	p := &pb.ScoreRequest{Sample: smp, Prediction: req.Prediction, ForAggregate: req.ForAggregate}
	r, err := s.mux.muxCall(ctx, &pb.Call{Request: &pb.Call_Score{Score: p}}, func() (*pb.Reply, error) {
		resp, err := s.c.Score(ctx, p)
		return &pb.Reply{Response: &pb.Reply_Score{Score: resp}}, err
	})
	if err != nil {
		return nil, err
	}
	resp := r.GetScore()
	if resp == nil {
		return nil, errNoResponse
	}
	return scoreResponseFromProto(resp)
}

// Aggregate returns an error wrapping sdk.ErrUnsupported when the remote
// scorer is not an sdk.Aggregator; the caller then falls back to the mean.
func (s *ScorerClient) Aggregate(ctx context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	p := &pb.AggregateRequest{Scores: make([]*pb.ScoreResponse, len(req.Scores))}
	for i, sc := range req.Scores {
		var err error
		if p.Scores[i], err = scoreResponseToProto(sc); err != nil {
			return nil, fmt.Errorf("score %d: %w", i, err)
		}
	}
	resp, err := s.c.Aggregate(ctx, p)
	if err != nil {
		return nil, fromStatus(ctx, err)
	}
	return aggregateResponseFromProto(resp)
}

// BatchScorer is a scorer that scores many requests per call and
// aggregates their results as they came: ScorerClient, and the host's
// wrappers of it. Callers with many samples at hand (`hayloft score`) use it
// in place of one Score per sample.
type BatchScorer interface {
	sdk.Scorer
	ScoreBatch(ctx context.Context, reqs []*sdk.ScoreRequest) ([]ScoreResult, error)
	AggregateResults(ctx context.Context, in *AggregateInput) (*sdk.AggregateResponse, error)
}

// ScoreResult is one request's outcome in ScoreBatch: a response or an
// error. DetailsJSON is the response's Details as the plugin encoded them
// (a JSON object, or nil for none); Response.Details stays nil so a caller
// that only passes the details on never decodes them (Details decodes).
//
// ScoreJSON is set instead of DetailsJSON when the request asked for the
// score object (sdk.ScoreRequest.ScoreObject) and the plugin wrote it
// (ScoreObjectScorer): the details with "invalid" and "value" among them,
// ready to be written as they are.
type ScoreResult struct {
	Response    *sdk.ScoreResponse
	DetailsJSON []byte
	ScoreJSON   []byte
	Err         error

	mem *resultSlabs // on a batch's first result: its memory (ReleaseResults)
}

// Details decodes DetailsJSON, or the details in ScoreJSON.
func (r ScoreResult) Details() (map[string]any, error) {
	if r.DetailsJSON == nil && r.ScoreJSON != nil {
		m, err := decodeMap("score object", r.ScoreJSON)
		if m != nil {
			// The response's own fields, not details: ScoreObjectScorer
			// writes them in place of any detail of the same name.
			delete(m, "invalid")
			delete(m, "value")
		}
		return m, err
	}
	return decodeMap("score details", r.DetailsJSON)
}

// ScoreBatch scores reqs in one round trip; the plugin spreads them over
// its processors. The i-th result answers reqs[i]; a request that fails
// fails alone. The error is for the batch as a whole (the connection, the
// context). Plugins built before ScoreBatch are asked one call per
// request, concurrently, over the Calls stream.
func (s *ScorerClient) ScoreBatch(ctx context.Context, reqs []*sdk.ScoreRequest) ([]ScoreResult, error) {
	var results []ScoreResult // made when the answer is not the packed results themselves
	answered := false         // the plugin answered the batch
	s.batchMu.Lock()
	noBatch := s.noBatch
	s.batchMu.Unlock()
	var p *pb.ScoreBatchRequest
	var sent []int // index in reqs of each request sent
	if !noBatch && s.info.Serves(FeaturePackedScoreBatch) && len(reqs) > 0 && allPackable(reqs) {
		buf := packBufs.Get().(*[]byte)
		*buf = packScoreRequests((*buf)[:0], reqs)
		p = &pb.ScoreBatchRequest{Packed: *buf}
		defer func() {
			// Only an answered batch was surely sent (copied) in full: a
			// failed one may still sit in a queue, so its buffer is left
			// to the collector.
			if answered {
				packBufs.Put(buf)
			}
		}()
		sent = make([]int, len(reqs))
		for i := range sent {
			sent[i] = i
		}
	} else {
		results = make([]ScoreResult, len(reqs))
		p, sent = s.batchMessages(reqs, results)
	}
	if len(sent) == 0 {
		return results, nil
	}
	var resp *pb.ScoreBatchResponse
	var err error
	if s.info.Serves(FeatureScoreBatchCall) {
		resp, err = s.scoreBatchCall(ctx, p)
		if err != nil && !errors.Is(err, errNoCallStream) {
			return nil, err
		}
	}
	if resp == nil && !noBatch {
		resp, err = s.c.ScoreBatch(ctx, p)
		if status.Code(err) == codes.Unimplemented {
			s.batchMu.Lock()
			s.noBatch = true
			s.batchMu.Unlock()
			noBatch = true
		} else if err != nil {
			return nil, fromStatus(ctx, err)
		}
	}
	if resp == nil && noBatch {
		if results == nil {
			results = make([]ScoreResult, len(reqs))
		}
		if p.Packed != nil { // the plugin went back on its features
			p, sent = s.batchMessages(reqs, results)
		}
		s.scoreEach(ctx, p.Requests, sent, results)
		return results, nil
	}
	answered = true
	if b := resp.GetPacked(); len(b) > 0 {
		mem := resultMems.Get().(*resultSlabs)
		got, err := mem.unpack(b)
		if err == nil && len(got) != len(sent) {
			err = fmt.Errorf("%d results", len(got))
		}
		if err != nil {
			return nil, fmt.Errorf("plugin's answer to a batch of %d scores: %w", len(sent), err)
		}
		if len(sent) == len(reqs) {
			// Every request went (a packed batch sends them all), in
			// order: the decoded results are the answer, with their
			// memory to hand back.
			got[0].mem = mem
			mem.packed = b // the details share it: handed back with them
			return got, nil
		}
		if results == nil {
			results = make([]ScoreResult, len(reqs))
		}
		for k, r := range got {
			results[sent[k]] = r
		}
		return results, nil
	}
	if results == nil {
		results = make([]ScoreResult, len(reqs))
	}
	resps := make([]sdk.ScoreResponse, len(sent)) // one allocation for the batch's responses
	if len(resp.GetResults()) != len(sent) {
		return nil, fmt.Errorf("plugin answered %d of %d scores in a batch", len(resp.GetResults()), len(sent))
	}
	for k, r := range resp.GetResults() {
		results[sent[k]] = scoreResultInto(r, &resps[k])
	}
	return results, nil
}

// allPackable reports whether every request of a batch can travel packed.
func allPackable(reqs []*sdk.ScoreRequest) bool {
	for _, r := range reqs {
		if !packable(r) {
			return false
		}
	}
	return true
}

// batchMessages is reqs as a batch of messages; a request whose sample
// cannot be converted gets its error in results and is not sent. sent is
// the index in reqs of each message.
func (s *ScorerClient) batchMessages(reqs []*sdk.ScoreRequest, results []ScoreResult) (*pb.ScoreBatchRequest, []int) {
	p := &pb.ScoreBatchRequest{Requests: make([]*pb.ScoreRequest, 0, len(reqs))}
	sent := make([]int, 0, len(reqs))
	// The batch's messages come from two arrays instead of two
	// allocations a request.
	msgs := make([]pb.ScoreRequest, len(reqs))
	smps := make([]pb.Sample, len(reqs))
	for i, r := range reqs {
		m := &msgs[i]
		if r.Sample != nil {
			if err := sampleToProtoInto(&smps[i], r.Sample); err != nil {
				results[i].Err = err
				continue
			}
			m.Sample = &smps[i]
		}
		m.Prediction, m.ForAggregate, m.ScoreObject = r.Prediction, r.ForAggregate, r.ScoreObject
		p.Requests = append(p.Requests, m)
		sent = append(sent, i)
	}
	return p, sent
}

// scoreBatchCall is one ScoreBatch over the Calls stream, which the plugin
// serves (FeatureScoreBatchCall): the batch shares the stream's messages
// with whatever else is in flight instead of opening a stream of its own.
func (s *ScorerClient) scoreBatchCall(ctx context.Context, p *pb.ScoreBatchRequest) (*pb.ScoreBatchResponse, error) {
	r, err := s.mux.call(ctx, &pb.Call{Request: &pb.Call_ScoreBatch{ScoreBatch: p}})
	if err != nil {
		return nil, err // errNoCallStream: the caller asks by unary RPC
	}
	if e := r.GetError(); e != nil {
		return nil, errorFromProto(e)
	}
	resp := r.GetScoreBatch()
	if resp == nil {
		return nil, errNoResponse
	}
	return resp, nil
}

// scoreEach is ScoreBatch for plugins without it: concurrent calls, which
// the Calls stream still sends in batches.
func (s *ScorerClient) scoreEach(ctx context.Context, reqs []*pb.ScoreRequest, sent []int, results []ScoreResult) {
	var wg sync.WaitGroup
	for k, p := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.mux.muxCall(ctx, &pb.Call{Request: &pb.Call_Score{Score: p}}, func() (*pb.Reply, error) {
				resp, err := s.c.Score(ctx, p)
				return &pb.Reply{Response: &pb.Reply_Score{Score: resp}}, err
			})
			if err != nil {
				results[sent[k]].Err = err
				return
			}
			results[sent[k]] = scoreResultFromProto(&pb.ScoreResult{Response: r.GetScore()})
		}()
	}
	wg.Wait()
}

func scoreResultFromProto(r *pb.ScoreResult) ScoreResult {
	return scoreResultInto(r, &sdk.ScoreResponse{})
}

// scoreResultInto is scoreResultFromProto with the response written to
// dst, which the result then points to (unless it is an error).
func scoreResultInto(r *pb.ScoreResult, dst *sdk.ScoreResponse) ScoreResult {
	if e := r.GetError(); e != nil {
		return ScoreResult{Err: errorFromProto(e)}
	}
	p := r.GetResponse()
	if p == nil {
		return ScoreResult{Err: errNoResponse}
	}
	*dst = sdk.ScoreResponse{Value: p.GetValue(), Invalid: p.GetInvalid(), Stats: p.GetStats()}
	if p.GetScoreObject() {
		return ScoreResult{Response: dst, ScoreJSON: p.GetDetailsJson()}
	}
	return ScoreResult{Response: dst, DetailsJSON: p.GetDetailsJson()}
}

// OutOfProcess reports that the scorer runs in another process (the
// plugin's): its results, decoded from replies, share no memory with its
// requests, and it keeps none of theirs (kernel/scoreio reuses its input
// and gathers an aggregate's inputs batch by batch).
func (s *ScorerClient) OutOfProcess() bool { return true }

// AggregateResults is Aggregate over ScoreBatch's results, gathered in
// in: sent as they were gathered to a plugin that takes packed batches,
// else as messages with their details as the plugin encoded them.
func (s *ScorerClient) AggregateResults(ctx context.Context, in *AggregateInput) (*sdk.AggregateResponse, error) {
	if s.info.Serves(FeaturePackedScoreBatch) {
		resp, err := s.c.Aggregate(ctx, &pb.AggregateRequest{Packed: in.bytes()})
		if err != nil {
			return nil, fromStatus(ctx, err)
		}
		return aggregateResponseFromProto(resp)
	}
	results, err := in.Results()
	if err != nil {
		return nil, err
	}
	p := &pb.AggregateRequest{Scores: make([]*pb.ScoreResponse, 0, len(results))}
	msgs := make([]pb.ScoreResponse, len(results)) // one allocation, not one a score
	for i, r := range results {
		if r.Err != nil || r.Response == nil {
			continue
		}
		d := r.DetailsJSON
		if d == nil && r.ScoreJSON != nil {
			m, err := r.Details()
			if err != nil {
				return nil, err
			}
			if len(m) > 0 {
				if d, err = encodeMap("score details", m); err != nil {
					return nil, err
				}
			}
		} else if d == nil && len(r.Response.Details) > 0 {
			var err error
			if d, err = encodeMap("score details", r.Response.Details); err != nil {
				return nil, err
			}
		}
		m := &msgs[i]
		m.Value, m.Invalid, m.DetailsJson, m.Stats = r.Response.Value, r.Response.Invalid, d, r.Response.Stats
		p.Scores = append(p.Scores, m)
	}
	resp, err := s.c.Aggregate(ctx, p)
	if err != nil {
		return nil, fromStatus(ctx, err)
	}
	return aggregateResponseFromProto(resp)
}

// RetrieverClient is a remote sdk.Retriever.
type RetrieverClient struct {
	remote
	c pb.RetrieverClient
}

func (r *RetrieverClient) Retrieve(ctx context.Context, req *sdk.RetrieveRequest) (*sdk.RetrieveResponse, error) {
	smp, err := sampleToProto(req.Sample)
	if err != nil {
		return nil, err
	}
	p := &pb.RetrieveRequest{Sample: smp}
	reply, err := r.mux.muxCall(ctx, &pb.Call{Request: &pb.Call_Retrieve{Retrieve: p}}, func() (*pb.Reply, error) {
		resp, err := r.c.Retrieve(ctx, p)
		return &pb.Reply{Response: &pb.Reply_Retrieve{Retrieve: resp}}, err
	})
	if err != nil {
		return nil, err
	}
	resp := reply.GetRetrieve()
	if resp == nil {
		return nil, errNoResponse
	}
	return retrieveResponseFromProto(resp)
}
