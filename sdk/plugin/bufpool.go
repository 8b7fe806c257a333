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
	defer buf.Free()
	if cb, ok := m.(*pb.CallBatch); ok && decodeCallBatch(buf.ReadOnlyData(), cb) {
		return nil
	}
	return proto.Unmarshal(buf.ReadOnlyData(), m)
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
	var calls []*pb.Call
	var pooled [][]byte // packed batches copied so far, handed back on failure
	fail := func() bool {
		for _, p := range pooled {
			releasePacked(p)
		}
		return false
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			return fail()
		}
		b = b[n:]
		msg, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return fail()
		}
		b = b[n:]
		call, packed := decodePackedCall(msg)
		if call == nil {
			call = new(pb.Call)
			if proto.Unmarshal(msg, call) != nil {
				return fail()
			}
		} else {
			pooled = append(pooled, packed)
		}
		calls = append(calls, call)
	}
	proto.Reset(cb)
	cb.Calls = calls
	return true
}

// decodePackedCall decodes a Call of an id, a deadline, the cancel and
// want_prefilled flags and a score batch of packed requests only, the
// packed requests copied into a buffer of bufferPool (also returned); or
// nil, for a call of any other shape (other fields, a field twice, unknown
// fields).
func decodePackedCall(b []byte) (*pb.Call, []byte) {
	call := new(pb.Call)
	var seen uint16
	var payload []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > 8 || seen&(1<<num) != 0 {
			return nil, nil
		}
		seen |= 1 << num
		b = b[n:]
		switch {
		case typ == protowire.VarintType && (num == 1 || num == 2 || num == 3 || num == 7):
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, nil
			}
			b = b[n:]
			switch num {
			case 1:
				call.Id = v
			case 2:
				call.DeadlineUnixNano = int64(v)
			case 3:
				call.Cancel = v != 0
			case 7:
				call.WantPrefilled = v != 0
			}
		case typ == protowire.BytesType && num == 8:
			req, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, nil
			}
			b = b[n:]
			// ScoreBatchRequest: its packed field (2), alone.
			num, typ, n := protowire.ConsumeTag(req)
			if n < 0 || num != 2 || typ != protowire.BytesType {
				return nil, nil
			}
			p, m := protowire.ConsumeBytes(req[n:])
			if m < 0 || n+m != len(req) || len(p) == 0 {
				return nil, nil
			}
			payload = p
		default:
			return nil, nil
		}
	}
	if payload == nil {
		return nil, nil
	}
	buf := bufferPool.Get(len(payload))
	copy(*buf, payload)
	call.Request = &pb.Call_ScoreBatch{ScoreBatch: &pb.ScoreBatchRequest{Packed: *buf}}
	return call, *buf
}

// releasePacked hands the packed requests of a score batch that is done
// with to bufferPool: the batch's arrays no longer refer to them (its
// reply is packed, a copy), and nothing else does, whichever decoder made
// them (the pool keeps a buffer whose capacity is one of its tiers).
func releasePacked(b []byte) {
	b = b[:cap(b)]
	bufferPool.Put(&b)
}
