package plugin

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hayloft/hayloft/sdk"
	pb "github.com/hayloft/hayloft/sdk/plugin/proto/hayloft/plugin/v1"
	"github.com/hayloft/hayloft/sdk/workers"
)

// callsServer serves the Calls stream: every call runs in its own goroutine,
// as a unary RPC would, through the same handlers; replies queue and go back
// in batches, like calls do on the host side.
type callsServer struct {
	pb.UnimplementedCallsServer
	s *Server
}

func (cs callsServer) Stream(stream grpc.BidiStreamingServer[pb.CallBatch, pb.ReplyBatch]) error {
	ctx, cancelAll := context.WithCancel(stream.Context())
	defer cancelAll()
	out := &replyQueue{wake: make(chan struct{}, 1)}

	var (
		mu      sync.Mutex
		running = map[uint64]context.CancelFunc{}
		calls   sync.WaitGroup
		// Calls run on reusable goroutines (see package workers); the
		// host bounds how many are in flight.
		pool = workers.New(0)
	)
	recvDone := make(chan error, 1)
	go func() {
		// The only caller of pool.Go: it stops the pool once it stops
		// taking calls.
		defer pool.Wait()
		for {
			b, err := stream.Recv()
			if err != nil {
				recvDone <- err
				return
			}
			for _, c := range b.GetCalls() {
				if c.GetCancel() {
					mu.Lock()
					if cancel, ok := running[c.GetId()]; ok {
						cancel()
					}
					mu.Unlock()
					continue
				}
				cctx, cancel := callContext(ctx, c.GetDeadlineUnixNano())
				var prefill *interim
				if c.GetWantPrefilled() {
					prefill = &interim{id: c.GetId(), out: out}
					cctx = sdk.WithPrefillHook(cctx, prefill.send)
				}
				mu.Lock()
				running[c.GetId()] = cancel
				mu.Unlock()
				calls.Add(1)
				id := c.GetId()
				pool.Go(func() {
					defer calls.Done()
					// Nothing here refers to c after run has it: its
					// request (a long prompt, say) can go as soon as the
					// component has what it needs of it.
					r := cs.run(cctx, c)
					prefill.close() // before the final reply is queued
					mu.Lock()
					delete(running, id)
					mu.Unlock()
					cancel()
					out.push(r)
				})
			}
		}
	}()

	// allDone closes once the host has closed its side and every call it
	// made has been answered.
	allDone := make(chan struct{})
	var recvErr error
	for {
		select {
		case <-out.wake:
			// As on the host side (muxStream.send): let the calls that are
			// about to finish queue their replies into this message.
			runtime.Gosched()
			for {
				batch := out.take()
				if len(batch) == 0 {
					break
				}
				if err := sendReplies(stream, batch); err != nil {
					return err
				}
			}
		case recvErr = <-recvDone:
			if !errors.Is(recvErr, io.EOF) {
				return recvErr // the host went away: cancelAll stops the calls
			}
			go func() {
				calls.Wait()
				close(allDone)
			}()
		case <-allDone:
			if batch := out.take(); len(batch) > 0 {
				if err := sendReplies(stream, batch); err != nil {
					return err
				}
				continue
			}
			return nil
		}
	}
}

// sendReplies sends a batch of replies. Send has encoded them when it
// returns, so the packed score batches among them go back to packedReplies
// for the next batches to be packed into.
func sendReplies(stream grpc.BidiStreamingServer[pb.CallBatch, pb.ReplyBatch], batch []*pb.Reply) error {
	err := stream.Send(&pb.ReplyBatch{Replies: batch})
	for _, r := range batch {
		if sb := r.GetScoreBatch(); sb != nil && sb.Packed != nil {
			putPackedReply(sb.Packed)
			sb.Packed = nil
		}
	}
	return err
}

func callContext(parent context.Context, deadline int64) (context.Context, context.CancelFunc) {
	if deadline == 0 {
		return context.WithCancel(parent)
	}
	return context.WithDeadline(parent, time.Unix(0, deadline))
}

// run answers one call through the unary handler of its kind, so both paths
// behave alike.
func (cs callsServer) run(ctx context.Context, c *pb.Call) *pb.Reply {
	r := &pb.Reply{Id: c.GetId()}
	if err := cs.dispatch(ctx, c, r); err != nil {
		r.Response, r.Error = nil, replyError(err)
	}
	return r
}

// dispatch fills r's response; a panic in component code becomes the
// call's error, as the unary interceptor makes it for unary calls.
func (cs callsServer) dispatch(ctx context.Context, c *pb.Call, r *pb.Reply) (err error) {
	defer recoverPanic(cs.s.logger, "/hayloft.plugin.v1.Calls/Stream", &err)
	switch req := c.GetRequest().(type) {
	case *pb.Call_Generate:
		resp, err := modelServer{s: cs.s}.Generate(ctx, req.Generate)
		r.Response = &pb.Reply_Generate{Generate: resp}
		return err
	case *pb.Call_Score:
		resp, err := scorerServer{s: cs.s}.Score(ctx, req.Score)
		r.Response = &pb.Reply_Score{Score: resp}
		return err
	case *pb.Call_Retrieve:
		resp, err := retrieverServer{s: cs.s}.Retrieve(ctx, req.Retrieve)
		r.Response = &pb.Reply_Retrieve{Retrieve: resp}
		return err
	case *pb.Call_ScoreBatch:
		resp, err := scorerServer{s: cs.s}.ScoreBatch(ctx, req.ScoreBatch)
		r.Response = &pb.Reply_ScoreBatch{ScoreBatch: resp}
		return err
	}
	return plainStatus(codes.Unimplemented, "call %d: no request of a known kind", c.GetId())
}

// replyError is the *pb.Error a unary handler's status error carries.
func replyError(err error) *pb.Error {
	if st, ok := status.FromError(err); ok {
		for _, d := range st.Details() {
			if e, ok := d.(*pb.Error); ok {
				return e
			}
		}
		return &pb.Error{Message: st.Message()}
	}
	return errorToProto(err)
}

// interim queues a call's interim prefilled reply, only while the call
// runs: the host must see it before the final reply, and a model that
// reports late (from a goroutine outliving Generate) is ignored.
type interim struct {
	id     uint64
	out    *replyQueue
	mu     sync.Mutex
	closed bool
}

func (p *interim) send() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.out.push(&pb.Reply{Id: p.id, Prefilled: true})
	}
}

func (p *interim) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

// replyQueue collects finished calls' replies for the sending loop.
type replyQueue struct {
	wake chan struct{} // capacity 1
	mu   sync.Mutex
	q    []*pb.Reply
}

func (q *replyQueue) push(r *pb.Reply) {
	q.mu.Lock()
	q.q = append(q.q, r)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *replyQueue) take() []*pb.Reply {
	q.mu.Lock()
	defer q.mu.Unlock()
	return takeBatch(&q.q)
}
