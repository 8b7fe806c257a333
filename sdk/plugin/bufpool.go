package plugin

import (
	"fmt"
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/hayloft/hayloft/sdk/plugin/proto/hayloft/plugin/v1"
)

// bufferPool is the gRPC buffer pool of both ends of the plugin protocol.
// gRPC's default pool has no tier between 32 KiB and 1 MiB and zeroes every
// buffer it hands out, so each message of a batch (a few hundred KiB) cost
// clearing a whole MiB, four times per round trip: a tenth of `hayloft
// score`'s CPU. Here every power of two from 256 B to 16 MiB is a tier, and
// buffers are not cleared: gRPC writes every byte of a buffer before it
// reads it (it marshals into it or reads the message into it), which is
// why gRPC itself offers non-zeroing pools.
var bufferPool mem.BufferPool = &tieredPool{}

const (
	minPoolShift = 8
	maxPoolShift = 24
)

type tieredPool struct {
	tiers [maxPoolShift + 1]sync.Pool // tiers[k] holds buffers of capacity 1<<k
}

// tier is the smallest k with 1<<k >= size.
func tier(size int) int { return max(minPoolShift, bits.Len(uint(size-1))) }

func (p *tieredPool) Get(size int) *[]byte {
	k := tier(size)
	if size <= 0 || k > maxPoolShift {
		b := make([]byte, size)
		return &b
	}
	if b, ok := p.tiers[k].Get().(*[]byte); ok {
		*b = (*b)[:size]
		return b
	}
	b := make([]byte, size, 1<<k)
	return &b
}

func (p *tieredPool) Put(b *[]byte) {
	c := cap(*b)
	if c < 1<<minPoolShift || c > 1<<maxPoolShift || c&(c-1) != 0 {
		return // not one of ours
	}
	p.tiers[bits.Len(uint(c))-1].Put(b)
}

// codec is gRPC's proto codec on bufferPool: gRPC's own takes the process
// default pool whatever the connection was given, so without it the pool
// above would serve only the transport's frames. Messages are the protocol's
// generated (APIv2) types.
type codec struct{}

func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("proto: cannot marshal %T, want proto.Message", v)
	}
	if a, ok := m.(*pb.AggregateRequest); ok && len(a.GetScores()) == 0 && len(a.GetPacked()) > 0 && len(a.ProtoReflect().GetUnknown()) == 0 {
		// A corpus's packed scores (AggregateInput's bytes, a megabyte
		// for 10,000 BLEU lines) go out as they are, after their field's
		// tag and length, rather than copied into a fresh buffer: the
		// caller writes them no more.
		p := a.GetPacked()
		head := protowire.AppendVarint(protowire.AppendTag(make([]byte, 0, 1+maxVarint), aggregatePacked, protowire.BytesType), uint64(len(p)))
		return mem.BufferSlice{mem.SliceBuffer(head), mem.SliceBuffer(p)}, nil
	}
	size := proto.Size(m)
	buf := bufferPool.Get(size)
	// UseCachedSize: the Size call just above filled the cache.
	out, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend((*buf)[:0], m)
	if err != nil {
		bufferPool.Put(buf)
		return nil, err
	}
	*buf = out
	return mem.BufferSlice{mem.NewBuffer(buf, bufferPool)}, nil
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("proto: cannot unmarshal into %T, want proto.Message", v)
	}
	buf := data.MaterializeToBuffer(bufferPool)
	if a, ok := m.(*pb.AggregateRequest); ok {
		if p, ok := soleBytesField(buf.ReadOnlyData(), aggregatePacked); ok {
			// A corpus's packed scores are read where they arrived, not
			// copied out: the buffer is the request's from now on, never
			// handed back, and the collector frees it with the request.
			a.Packed = p
			return nil
		}
	}
	defer buf.Free()
	switch m := m.(type) {
	case *pb.CallBatch:
		if decodeCallBatch(buf.ReadOnlyData(), m) {
			return nil
		}
	case *pb.ReplyBatch:
		if decodeReplyBatch(buf.ReadOnlyData(), m) {
			return nil
		}
	}
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// soleBytesField is the value of the bytes field num when it is all of
// the message b, as proto.Unmarshal would read it (a field given twice
// is not).
func soleBytesField(b []byte, num protowire.Number) ([]byte, bool) {
	n, typ, l := protowire.ConsumeTag(b)
	if l < 0 || n != num || typ != protowire.BytesType {
		return nil, false
	}
	v, m := protowire.ConsumeBytes(b[l:])
	if m < 0 || l+m != len(b) || len(v) == 0 {
		return nil, false
	}
	return v[:len(v):len(v)], true
}

// decodeCallBatch is proto.Unmarshal of a CallBatch whose calls carry
// packed score batches (what `hayloft score` sends), with each packed
// batch copied into a buffer of bufferPool instead of fresh memory:
// ScoreBatch hands it back once its reply is packed (releasePacked), so
// batch after batch reuses the same few buffers instead of costing a page
// fault per 4 KiB. A call of any other shape is decoded by proto.Unmarshal
// itself; false (nothing decoded) for bytes that are not a CallBatch as
// this reads it, which proto.Unmarshal then decodes or refuses.
func decodeCallBatch(b []byte, cb *pb.CallBatch) bool {
	calls, ok := decodeBatch(b, func(msg []byte) (*pb.Call, []byte) {
		call := new(pb.Call)
		scalars := uint16(1<<callID | 1<<callDeadline | 1<<callCancel | 1<<callWantPrefilled)
		payload := scanPacked(msg, scalars, callScoreBatch, func(num protowire.Number, v uint64) {
			switch num {
			case callID:
				call.Id = v
			case callDeadline:
				call.DeadlineUnixNano = int64(v)
			case callCancel:
				call.Cancel = v != 0
			case callWantPrefilled:
				call.WantPrefilled = v != 0
			}
		})
		if payload == nil {
			return nil, nil
		}
		call.Request = &pb.Call_ScoreBatch{ScoreBatch: &pb.ScoreBatchRequest{Packed: payload}}
		return call, payload
	})
	if ok {
		proto.Reset(cb)
		cb.Calls = calls
	}
	return ok
}

// decodeReplyBatch is decodeCallBatch for the replies: a reply of a packed
// score batch's results has them copied into a buffer of bufferPool,
// which plugin.ReleaseResults hands back with the results.
func decodeReplyBatch(b []byte, rb *pb.ReplyBatch) bool {
	replies, ok := decodeBatch(b, func(msg []byte) (*pb.Reply, []byte) {
		reply := new(pb.Reply)
		payload := scanPacked(msg, 1<<replyID|1<<replyPrefilled, replyScoreBatch, func(num protowire.Number, v uint64) {
			switch num {
			case replyID:
				reply.Id = v
			case replyPrefilled:
				reply.Prefilled = v != 0
			}
		})
		if payload == nil {
			return nil, nil
		}
		reply.Response = &pb.Reply_ScoreBatch{ScoreBatch: &pb.ScoreBatchResponse{Packed: payload}}
		return reply, payload
	})
	if ok {
		proto.Reset(rb)
		rb.Replies = replies
	}
	return ok
}

// Field numbers of plugin.proto that the decoders (and Marshal) read
// (TestDecoderFieldNumbers holds them to the generated descriptors).
const (
	batchElems                                          = 1 // CallBatch.calls, ReplyBatch.replies
	callID, callDeadline, callCancel, callWantPrefilled = 1, 2, 3, 7
	callScoreBatch                                      = 8
	replyID, replyPrefilled, replyScoreBatch            = 1, 6, 7
	batchPacked                                         = 2 // ScoreBatchRequest.packed, ScoreBatchResponse.packed
	aggregatePacked                                     = 2 // AggregateRequest.packed
)

// decodeBatch reads the repeated field 1 of a CallBatch or ReplyBatch:
// each element through packed, or when packed returns nil, through
// proto.Unmarshal. ok is false, and the buffers packed took handed back,
// for anything else.
func decodeBatch[T any, P interface {
	*T
	proto.Message
}](b []byte, packed func(msg []byte) (P, []byte)) (elems []P, ok bool) {
	var pooled [][]byte // payloads copied so far
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num != batchElems || typ != protowire.BytesType {
			break
		}
		b = b[n:]
		msg, n := protowire.ConsumeBytes(b)
		if n < 0 {
			break
		}
		b = b[n:]
		e, payload := packed(msg)
		if e == nil {
			e = P(new(T))
			if proto.Unmarshal(msg, e) != nil {
				break
			}
		} else {
			pooled = append(pooled, payload)
		}
		elems = append(elems, e)
	}
	if len(b) > 0 {
		for _, p := range pooled {
			releasePacked(p)
		}
		return nil, false
	}
	return elems, true
}

// scanPacked reads a Call or Reply of varint fields (the numbers in
// varints, each at most once, handed to set) and the field sub, a score
// batch message of only its packed field (2, not empty): that field's
// bytes, copied into a buffer of bufferPool. Nil for a message of any
// other shape (other fields, a field twice, unknown fields), and then
// nothing is taken from the pool.
func scanPacked(b []byte, varints uint16, sub protowire.Number, set func(num protowire.Number, v uint64)) []byte {
	var seen uint16
	var payload []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > 15 || seen&(1<<num) != 0 {
			return nil
		}
		seen |= 1 << num
		b = b[n:]
		switch {
		case typ == protowire.VarintType && varints&(1<<num) != 0:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil
			}
			b = b[n:]
			set(num, v)
		case typ == protowire.BytesType && num == sub:
			msg, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil
			}
			b = b[n:]
			num, typ, n := protowire.ConsumeTag(msg)
			if n < 0 || num != batchPacked || typ != protowire.BytesType {
				return nil
			}
			p, m := protowire.ConsumeBytes(msg[n:])
			if m < 0 || n+m != len(msg) || len(p) == 0 {
				return nil
			}
			payload = p
		default:
			return nil
		}
	}
	if payload == nil {
		return nil
	}
	buf := bufferPool.Get(len(payload))
	copy(*buf, payload)
	return *buf
}

// releasePacked hands a packed batch that is done with to bufferPool. b
// is the packed field of a message the codec decoded, never a buffer a
// caller still owns: scanPacked's copy (from the pool) or proto.Unmarshal's
// (fresh, and as dead); the pool keeps it if its capacity is one of its
// tiers. (A registry of scanPacked's copies would hold the ones never
// handed back, an aggregate's, for the life of the process.)
func releasePacked(b []byte) {
	b = b[:cap(b)]
	bufferPool.Put(&b)
}
