package plugin

import (
	"fmt"
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
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
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}
