package plugin

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/hayloft/hayloft/sdk"
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

// decodeCallBatch reads every CallBatch as proto.Unmarshal does: calls of
// packed score batches itself, any other call through proto.Unmarshal, and
// bytes that are not a CallBatch it reads not at all.
func TestDecodeCallBatchMatchesProto(t *testing.T) {
	packed := packScoreRequests(nil, []*sdk.ScoreRequest{
		{Sample: &sdk.Sample{ID: "a", Targets: []string{"x y"}}, Prediction: "x", ScoreObject: true},
		{Sample: &sdk.Sample{ID: "b", Targets: []string{"p", "q"}, Language: "en"}, Prediction: "p q", ForAggregate: true},
	})
	batches := []*pb.CallBatch{
		{},
		{Calls: []*pb.Call{{Id: 1, Request: &pb.Call_ScoreBatch{ScoreBatch: &pb.ScoreBatchRequest{Packed: packed}}}}},
		{Calls: []*pb.Call{
			{Id: 7, DeadlineUnixNano: 1 << 62, WantPrefilled: true, Request: &pb.Call_ScoreBatch{ScoreBatch: &pb.ScoreBatchRequest{Packed: packed}}},
			{Id: 8, DeadlineUnixNano: -5, Request: &pb.Call_ScoreBatch{ScoreBatch: &pb.ScoreBatchRequest{Packed: packed[:3]}}},
			{Id: 9, Cancel: true},
			{Id: 10, Request: &pb.Call_Score{Score: &pb.ScoreRequest{Prediction: "p"}}},
			{Id: 11, Request: &pb.Call_ScoreBatch{ScoreBatch: &pb.ScoreBatchRequest{Requests: []*pb.ScoreRequest{{Prediction: "r"}}}}},
			{Id: 12, Request: &pb.Call_ScoreBatch{ScoreBatch: &pb.ScoreBatchRequest{}}},
			{Id: 13, Request: &pb.Call_Generate{Generate: &pb.GenerateRequest{}}},
		}},
	}
	for i, want := range batches {
		b, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		// A call with a field it does not know (from a newer host) goes
		// through proto.Unmarshal, which keeps it.
		withUnknown := protowire.AppendTag(nil, 1, protowire.BytesType)
		call := protowire.AppendTag(nil, 1, protowire.VarintType)
		call = protowire.AppendVarint(call, 5)
		call = protowire.AppendTag(call, 99, protowire.VarintType)
		call = protowire.AppendVarint(call, 1)
		withUnknown = protowire.AppendBytes(withUnknown, call)
		for k, in := range [][]byte{b, append(b, withUnknown...)} {
			var fromProto, got pb.CallBatch
			if err := proto.Unmarshal(in, &fromProto); err != nil {
				t.Fatal(err)
			}
			if !decodeCallBatch(in, &got) {
				t.Fatalf("batch %d/%d: not decoded", i, k)
			}
			if !proto.Equal(&got, &fromProto) {
				t.Errorf("batch %d/%d: decoded %v, proto.Unmarshal %v", i, k, &got, &fromProto)
			}
		}
	}
	good, _ := proto.Marshal(batches[2])
	for _, bad := range [][]byte{good[:len(good)-1], {0xff}, append([]byte{0x10, 1}, good...)} {
		var got pb.CallBatch
		if decodeCallBatch(bad, &got) {
			t.Errorf("%x: decoded as %v", bad, &got)
		}
	}
}

// decodeReplyBatch reads every ReplyBatch as proto.Unmarshal does.
func TestDecodeReplyBatchMatchesProto(t *testing.T) {
	packed := packScoreResults([]*pb.ScoreResult{{Response: &pb.ScoreResponse{Value: 2, DetailsJson: []byte(`{"a":1}`), Stats: []float64{1, 2}}}})
	batches := []*pb.ReplyBatch{
		{},
		{Replies: []*pb.Reply{{Id: 1, Response: &pb.Reply_ScoreBatch{ScoreBatch: &pb.ScoreBatchResponse{Packed: packed}}}}},
		{Replies: []*pb.Reply{
			{Id: 2, Prefilled: true},
			{Id: 3, Response: &pb.Reply_ScoreBatch{ScoreBatch: &pb.ScoreBatchResponse{Packed: packed}}},
			{Id: 4, Error: &pb.Error{Message: "no"}},
			{Id: 5, Response: &pb.Reply_ScoreBatch{ScoreBatch: &pb.ScoreBatchResponse{Results: []*pb.ScoreResult{{Response: &pb.ScoreResponse{Value: 1}}}}}},
			{Id: 6, Response: &pb.Reply_Score{Score: &pb.ScoreResponse{Value: 3}}},
			{Id: 7, Error: &pb.Error{Message: "x"}, Response: &pb.Reply_ScoreBatch{ScoreBatch: &pb.ScoreBatchResponse{Packed: packed}}},
		}},
	}
	for i, want := range batches {
		b, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var fromProto, got pb.ReplyBatch
		if err := proto.Unmarshal(b, &fromProto); err != nil {
			t.Fatal(err)
		}
		if !decodeReplyBatch(b, &got) {
			t.Fatalf("batch %d: not decoded", i)
		}
		if !proto.Equal(&got, &fromProto) {
			t.Errorf("batch %d: decoded %v, proto.Unmarshal %v", i, &got, &fromProto)
		}
	}
	good, _ := proto.Marshal(batches[2])
	var got pb.ReplyBatch
	if decodeReplyBatch(good[:len(good)-2], &got) {
		t.Errorf("a cut batch decoded as %v", &got)
	}
}

// The decoders' field numbers are plugin.proto's.
func TestDecoderFieldNumbers(t *testing.T) {
	for _, f := range []struct {
		msg  proto.Message
		name string
		want protowire.Number
	}{
		{&pb.CallBatch{}, "calls", batchElems},
		{&pb.ReplyBatch{}, "replies", batchElems},
		{&pb.Call{}, "id", callID},
		{&pb.Call{}, "deadline_unix_nano", callDeadline},
		{&pb.Call{}, "cancel", callCancel},
		{&pb.Call{}, "want_prefilled", callWantPrefilled},
		{&pb.Call{}, "score_batch", callScoreBatch},
		{&pb.Reply{}, "id", replyID},
		{&pb.Reply{}, "prefilled", replyPrefilled},
		{&pb.Reply{}, "score_batch", replyScoreBatch},
		{&pb.ScoreBatchRequest{}, "packed", batchPacked},
		{&pb.ScoreBatchResponse{}, "packed", batchPacked},
		{&pb.AggregateRequest{}, "packed", aggregatePacked},
	} {
		fd := f.msg.ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(f.name))
		if fd == nil || fd.Number() != f.want {
			t.Errorf("%T.%s: number %v, the decoders read %d", f.msg, f.name, fd, f.want)
		}
	}
	// A Call or Reply with a field the decoders do not know of goes to
	// proto.Unmarshal: every field of theirs is either read or refused.
	known := map[protoreflect.FullName]map[protowire.Number]bool{
		"hayloft.plugin.v1.Call":  {callID: true, callDeadline: true, callCancel: true, callWantPrefilled: true, callScoreBatch: true, 4: true, 5: true, 6: true},
		"hayloft.plugin.v1.Reply": {replyID: true, replyPrefilled: true, replyScoreBatch: true, 2: true, 3: true, 4: true, 5: true},
	}
	for _, m := range []proto.Message{&pb.Call{}, &pb.Reply{}} {
		d := m.ProtoReflect().Descriptor()
		for i := range d.Fields().Len() {
			if n := d.Fields().Get(i).Number(); !known[d.FullName()][n] {
				t.Errorf("%s has field %d (%s), new to this test: check decodeCallBatch and decodeReplyBatch", d.FullName(), n, d.Fields().Get(i).Name())
			}
		}
	}
}

// A packed aggregate request is marshalled, and read back, without a copy
// of its scores, and as proto.Marshal's encoding of it; one with scores as
// messages is marshalled as ever.
func TestMarshalPackedAggregate(t *testing.T) {
	packed := bytes.Repeat([]byte{1, 2, 3}, 100000)
	for _, m := range []*pb.AggregateRequest{
		{Packed: packed},
		{Packed: packed[:5]},
		{Scores: []*pb.ScoreResponse{{Value: 1}}},
		{Scores: []*pb.ScoreResponse{{Value: 1}}, Packed: packed[:7]},
	} {
		got, err := codec{}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Materialize(), want) {
			t.Errorf("%d scores, %d packed bytes: marshalled differently from proto.Marshal", len(m.Scores), len(m.Packed))
		}
		if len(m.Scores) == 0 && &got[len(got)-1].ReadOnlyData()[0] != &m.Packed[0] {
			t.Errorf("%d packed bytes: copied", len(m.Packed))
		}
		// Received, it is one buffer (or frames gathered into one).
		wire := got.Materialize()
		got.Free()
		var back pb.AggregateRequest
		if err := (codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, &back); err != nil || !proto.Equal(&back, m) {
			t.Errorf("%d scores, %d packed bytes: read back %v", len(m.Scores), len(m.Packed), err)
		}
		if len(m.Scores) == 0 && &back.Packed[0] != &wire[len(wire)-len(m.Packed)] {
			t.Errorf("%d packed bytes: copied out of the received buffer", len(m.Packed))
		}
	}
}

// A message is read in place only when the one bytes field is all of it.
func TestSoleBytesField(t *testing.T) {
	field := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	one := field(2, []byte("abc"))
	for _, c := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"alone", one, true},
		{"twice", append(one, one...), false},
		{"another field first", append(field(1, []byte("x")), one...), false},
		{"another field after", append(one[:len(one):len(one)], field(1, []byte("x"))...), false},
		{"cut short", one[:len(one)-1], false},
		{"empty", field(2, nil), false},
		{"varint", protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 3), false},
		{"nothing", nil, false},
	} {
		v, ok := soleBytesField(c.b, 2)
		if ok != c.ok || ok && string(v) != "abc" {
			t.Errorf("%s: %q, %v; want ok %v", c.name, v, ok, c.ok)
		}
	}
}

// countingPool is a mem.BufferPool that counts what is handed back.
type countingPool struct{ puts atomic.Int64 }

func (p *countingPool) Get(n int) *[]byte { b := make([]byte, n); return &b }
func (p *countingPool) Put(*[]byte)       { p.puts.Add(1) }

// The codec reads a packed AggregateRequest in place. gRPC frees the
// BufferSlice once Unmarshal returns (rpc_util.go recv: defer data.Free());
// the codec's own reference (MaterializeToBuffer Refs a lone buffer, or
// copies several into one it never frees) must keep those bytes out of the
// pool for as long as the request lives.
func TestCodecAggregateKeepsItsBuffer(t *testing.T) {
	packed := []byte{2, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}
	wire, err := proto.Marshal(&pb.AggregateRequest{Packed: packed})
	if err != nil {
		t.Fatal(err)
	}
	for _, pieces := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(pieces), func(t *testing.T) {
			pool := &countingPool{}
			var data mem.BufferSlice
			rest := wire
			for k := range pieces {
				n := len(rest)
				if k < pieces-1 {
					n = len(wire) / pieces
				}
				b := pool.Get(n)
				copy(*b, rest[:n])
				rest = rest[n:]
				data = append(data, mem.NewBuffer(b, pool))
			}
			var a pb.AggregateRequest
			if err := (codec{}).Unmarshal(data, &a); err != nil {
				t.Fatal(err)
			}
			data.Free() // as gRPC does after Unmarshal
			if pieces == 1 && pool.puts.Load() != 0 {
				t.Errorf("the received buffer went back to the pool while the request reads it")
			}
			if string(a.GetPacked()) != string(packed) {
				t.Errorf("packed = %v, want %v", a.GetPacked(), packed)
			}
		})
	}
}
