package plugin

import (
	"strings"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	pb "github.com/hayloft/hayloft/sdk/plugin/proto/hayloft/plugin/v1"
)

func TestTieredPool(t *testing.T) {
	p := &tieredPool{}
	for _, size := range []int{0, 1, 255, 256, 257, 40000, 1 << 20, 1<<20 + 1, 1 << 24, 1<<24 + 1} {
		b := p.Get(size)
		if len(*b) != size || cap(*b) < size {
			t.Fatalf("Get(%d): len %d cap %d", size, len(*b), cap(*b))
		}
		for i := range *b {
			(*b)[i] = 0xff
		}
		p.Put(b)
		// A buffer put back serves the next Get of its tier, whatever its
		// length was.
		if size > 0 && size <= 1<<24 {
			if c := p.Get(size - size/3); cap(*c) < size-size/3 || len(*c) != size-size/3 {
				t.Fatalf("Get after Put(%d): len %d cap %d", size, len(*c), cap(*c))
			}
		}
	}
	p.Put(&[]byte{}) // foreign buffers are dropped, not pooled
	odd := make([]byte, 3000)
	p.Put(&odd)
}

// The codec round-trips messages of every size, from one buffer or from
// several (as frames arrive), through pooled buffers that are reused dirty.
func TestCodecRoundTrip(t *testing.T) {
	c := codec{}
	for _, n := range []int{0, 1, 100, 40000, 2 << 20} {
		in := &pb.ScoreRequest{Prediction: strings.Repeat("x", n), Sample: &pb.Sample{Id: "s", Targets: []string{"a", strings.Repeat("é", n/4)}}}
		data, err := c.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		flat := data.Materialize()
		data.Free()
		for _, split := range []int{len(flat), len(flat) / 3} {
			var parts mem.BufferSlice
			if split > 0 && split < len(flat) {
				parts = mem.BufferSlice{mem.SliceBuffer(flat[:split]), mem.SliceBuffer(flat[split:])}
			} else {
				parts = mem.BufferSlice{mem.SliceBuffer(flat)}
			}
			out := &pb.ScoreRequest{}
			if err := c.Unmarshal(parts, out); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(in, out) {
				t.Fatalf("size %d split %d: round trip changed the message", n, split)
			}
		}
	}
	if _, err := c.Marshal("not a message"); err == nil {
		t.Error("marshalled a string")
	}
}
