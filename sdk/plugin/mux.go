package plugin

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hayloft/hayloft/sdk"
	pb "github.com/hayloft/hayloft/sdk/plugin/proto/hayloft/plugin/v1"
)

// maxBatchBytes bounds the encoded size of one batch message: calls beyond
// it wait for the next message, so a burst of long-context prompts never
// builds one message near MaxMessageSize. A single larger call still goes,
// alone.
//
// 1 MB: a thousand short calls fit, so short ones still share messages, and
// long-context prompts (some 500 KB each at 128K tokens) go one or two to a
// message, so that neither side holds buffers of many prompts at once.
const maxBatchBytes = 1 << 20

// takeBatch removes from the front of *queue as many messages as fit in
// maxBatchBytes (at least one) and returns them.
func takeBatch[M proto.Message](queue *[]M) []M {
	q := *queue
	n, size := 0, 0
	for n < len(q) {
		size += proto.Size(q[n])
		if n > 0 && size > maxBatchBytes {
			break
		}
		n++
	}
	batch := q[:n:n]
	*queue = q[n:]
	if len(*queue) == 0 {
		*queue = nil // let the sent batch's backing array go
	}
	return batch
}

// errNoCallStream is what a mux reports when the plugin does not serve the
// Calls service (an SDK from before it): the caller uses the unary RPC.
var errNoCallStream = errors.New("plugin does not serve the Calls stream")

// callMux is the host side of the Calls stream of one component. Concurrent
// calls are queued and sent together; one goroutine sends, one receives and
// hands each reply to its waiting caller. The stream is opened on the first
// call and again after it breaks.
type callMux struct {
	client pb.CallsClient

	mu          sync.Mutex
	cur         *muxStream
	unsupported bool
	closed      bool
}

func newCallMux(conn grpc.ClientConnInterface) *callMux {
	return &callMux{client: pb.NewCallsClient(conn)}
}

// muxStream is one open Calls stream and the calls waiting on it.
type muxStream struct {
	mux    *callMux
	stream grpc.BidiStreamingClient[pb.CallBatch, pb.ReplyBatch]
	cancel context.CancelFunc
	wake   chan struct{} // capacity 1: "the queue is not empty"

	mu      sync.Mutex
	nextID  uint64
	queue   []*pb.Call
	pending map[uint64]waiter
	err     error // why the stream ended; set once
	gotOne  bool  // a reply arrived: the plugin serves Calls
}

// waiter is a call waiting for its reply; prefill, when set, is the
// caller's context whose prefill hook an interim reply calls.
type waiter struct {
	ch      chan *pb.Reply
	prefill context.Context
}

// call sends c and waits for its reply. Transport failures come back as the
// unary RPC's would (see fromStatus); errNoCallStream means "use unary".
func (m *callMux) call(ctx context.Context, c *pb.Call) (*pb.Reply, error) {
	s, err := m.stream()
	if err != nil {
		return nil, err
	}
	ch := make(chan *pb.Reply, 1)
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return nil, s.callError(ctx, err)
	}
	s.nextID++
	id := s.nextID
	c.Id = id
	if dl, ok := ctx.Deadline(); ok {
		c.DeadlineUnixNano = dl.UnixNano()
	}
	w := waiter{ch: ch}
	if c.GetWantPrefilled() {
		w.prefill = ctx
	}
	s.pending[id] = w
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	s.signal()

	select {
	case r, ok := <-ch:
		if !ok {
			s.mu.Lock()
			err := s.err
			s.mu.Unlock()
			return nil, s.callError(ctx, err)
		}
		return r, nil
	case <-ctx.Done():
		s.mu.Lock()
		if _, waiting := s.pending[id]; waiting && s.err == nil {
			delete(s.pending, id)
			s.queue = append(s.queue, &pb.Call{Id: id, Cancel: true})
		}
		s.mu.Unlock()
		s.signal()
		return nil, ctx.Err()
	}
}

// callError turns the stream's end into what the caller sees.
func (s *muxStream) callError(ctx context.Context, err error) error {
	if errors.Is(err, errNoCallStream) {
		return err
	}
	if errors.Is(err, io.EOF) || err == nil {
		err = status.Error(codes.Unavailable, "plugin closed the calls stream")
	}
	return fromStatus(ctx, err)
}

// stream returns the open stream, opening one if there is none.
func (m *callMux) stream() (*muxStream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.unsupported:
		return nil, errNoCallStream
	case m.closed:
		return nil, fromStatus(context.Background(), status.Error(codes.Canceled, "plugin client closed"))
	case m.cur != nil:
		return m.cur, nil
	}
	// The stream outlives any one caller: it has its own context, ended by
	// close or by the connection's end.
	ctx, cancel := context.WithCancel(context.Background())
	st, err := m.client.Stream(ctx)
	if err != nil {
		cancel()
		return nil, fromStatus(context.Background(), err)
	}
	s := &muxStream{
		mux:     m,
		stream:  st,
		cancel:  cancel,
		wake:    make(chan struct{}, 1),
		pending: map[uint64]waiter{},
	}
	m.cur = s
	go s.send()
	go s.receive()
	return s, nil
}

func (s *muxStream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// send writes whatever has queued since the last message as one batch.
// While a Send is under way more calls queue up, so batches grow with load
// and a lone call goes out at once.
func (s *muxStream) send() {
	for {
		select {
		case <-s.wake:
		case <-s.stream.Context().Done():
			return
		}
		// Let the goroutines that are ready to run first: under load they
		// are callers about to queue calls, which then share this message.
		// Without it nearly every call went alone (1.03 calls a message at
		// zero latency), and each message costs a write, a read and
		// wake-ups on both sides; with it, 4 or more. An idle process
		// has nothing else to run, so a lone call is not held back.
		runtime.Gosched()
		for {
			s.mu.Lock()
			if s.err != nil {
				s.mu.Unlock()
				return
			}
			batch := takeBatch(&s.queue)
			s.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			if err := s.stream.Send(&pb.CallBatch{Calls: batch}); err != nil {
				// The real error comes from Recv; make it return.
				s.cancel()
				return
			}
		}
	}
}

// receive hands replies to their callers until the stream ends, then fails
// every call still waiting.
func (s *muxStream) receive() {
	var err error
	for {
		var b *pb.ReplyBatch
		if b, err = s.stream.Recv(); err != nil {
			break
		}
		var prefilled []context.Context
		s.mu.Lock()
		s.gotOne = true
		for _, r := range b.GetReplies() {
			w, ok := s.pending[r.GetId()]
			switch {
			case !ok:
			case r.GetPrefilled():
				// Interim: the call goes on waiting for its answer.
				if w.prefill != nil {
					prefilled = append(prefilled, w.prefill)
				}
			default:
				delete(s.pending, r.GetId())
				w.ch <- r
			}
		}
		s.mu.Unlock()
		// Hooks are the caller's code: run them outside the lock.
		for _, ctx := range prefilled {
			sdk.Prefilled(ctx)
		}
	}
	s.mu.Lock()
	if status.Code(err) == codes.Unimplemented && !s.gotOne {
		err = errNoCallStream
	}
	s.err = err
	pending := s.pending
	s.pending = nil
	s.queue = nil
	s.mu.Unlock()
	s.cancel()

	s.mux.mu.Lock()
	if s.mux.cur == s {
		s.mux.cur = nil
	}
	if errors.Is(err, errNoCallStream) {
		s.mux.unsupported = true
	}
	s.mux.mu.Unlock()
	for _, w := range pending {
		close(w.ch)
	}
}

// close ends the stream; calls still waiting fail as on a lost connection.
func (m *callMux) close() {
	m.mu.Lock()
	m.closed = true
	s := m.cur
	m.mu.Unlock()
	if s != nil {
		s.cancel()
	}
}

// muxCall runs c over the Calls stream, or over unary when the plugin does
// not serve it, and returns the reply's error as the component's error.
func (m *callMux) muxCall(ctx context.Context, c *pb.Call, unary func() (*pb.Reply, error)) (*pb.Reply, error) {
	r, err := m.call(ctx, c)
	if errors.Is(err, errNoCallStream) {
		r, err = unary()
		if err != nil {
			return nil, fromStatus(ctx, err)
		}
	}
	if err != nil {
		return nil, err
	}
	if e := r.GetError(); e != nil {
		return nil, errorFromProto(e)
	}
	return r, nil
}
