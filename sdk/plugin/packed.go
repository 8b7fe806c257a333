package plugin

import (
	"errors"
	"fmt"
	"reflect"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/hayloft/hayloft/sdk"
)

// A packed score batch (ScoreBatchRequest.packed, FeaturePackedScoreBatch)
// carries requests whose samples hold only an id, targets and a language:
// a varint of flags, the id, prediction and language as length-prefixed
// bytes, a varint count of targets and the targets. A batch of such
// requests crosses as one bytes field, which each side copies once,
// instead of two messages and a few strings per request that the plugin
// allocates one by one.
const (
	packedForAggregate = 1 << iota
	packedScoreObject
)

// packable reports whether req can travel packed: a sample of an id,
// targets and a language and nothing else.
func packable(req *sdk.ScoreRequest) bool {
	if req.Sample == nil {
		return false
	}
	rest := *req.Sample
	rest.ID, rest.Targets, rest.Language = "", nil, ""
	return reflect.ValueOf(&rest).Elem().IsZero()
}

// packScoreRequests is the packed form of reqs, which packable accepts.
func packScoreRequests(reqs []*sdk.ScoreRequest) []byte {
	size := 0
	for _, r := range reqs {
		size += 1 + 3*maxVarint + len(r.Sample.ID) + len(r.Prediction) + len(r.Sample.Language) + maxVarint
		for _, t := range r.Sample.Targets {
			size += maxVarint + len(t)
		}
	}
	b := make([]byte, 0, size)
	for _, r := range reqs {
		var flags uint64
		if r.ForAggregate {
			flags |= packedForAggregate
		}
		if r.ScoreObject {
			flags |= packedScoreObject
		}
		b = protowire.AppendVarint(b, flags)
		b = protowire.AppendString(b, r.Sample.ID)
		b = protowire.AppendString(b, r.Prediction)
		b = protowire.AppendString(b, r.Sample.Language)
		b = protowire.AppendVarint(b, uint64(len(r.Sample.Targets)))
		for _, t := range r.Sample.Targets {
			b = protowire.AppendString(b, t)
		}
	}
	return b
}

// maxVarint bounds the length of a varint.
const maxVarint = 10

var errPacked = errors.New("packed score batch: truncated")

// unpackScoreRequests decodes a packed batch into requests and their
// samples. Their strings share b's memory, which is never written again
// (the decoded message's own copy); each is checked to be UTF-8 as a
// protobuf string would be.
func unpackScoreRequests(b []byte) ([]sdk.ScoreRequest, error) {
	var reqs []sdk.ScoreRequest
	var samples []sdk.Sample
	var targets []string // one slice for every request's targets
	type span struct{ req, start, end int }
	var spans []span
	for len(b) > 0 {
		k := len(reqs)
		flags, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return nil, fmt.Errorf("request %d: %w", k, errPacked)
		}
		b = b[n:]
		var strs [3]string // id, prediction, language
		for i := range strs {
			if strs[i], b, n = packedString(b); n < 0 {
				return nil, fmt.Errorf("request %d: %w", k, errPacked)
			}
		}
		count, n := protowire.ConsumeVarint(b)
		if n < 0 || count > uint64(len(b)) { // each target takes a byte at least
			return nil, fmt.Errorf("request %d: %w", k, errPacked)
		}
		b = b[n:]
		start := len(targets)
		for range count {
			var t string
			if t, b, n = packedString(b); n < 0 {
				return nil, fmt.Errorf("request %d: %w", k, errPacked)
			}
			targets = append(targets, t)
		}
		for i, s := range strs {
			if !utf8.ValidString(s) {
				return nil, fmt.Errorf("request %d: field %d is not UTF-8", k, i+1)
			}
		}
		for _, t := range targets[start:] {
			if !utf8.ValidString(t) {
				return nil, fmt.Errorf("request %d: a target is not UTF-8", k)
			}
		}
		samples = append(samples, sdk.Sample{ID: strs[0], Language: strs[2]})
		reqs = append(reqs, sdk.ScoreRequest{Prediction: strs[1], ForAggregate: flags&packedForAggregate != 0, ScoreObject: flags&packedScoreObject != 0})
		if count > 0 {
			spans = append(spans, span{k, start, len(targets)})
		}
	}
	// Pointers and target slices are set once the slabs stop moving.
	for i := range reqs {
		reqs[i].Sample = &samples[i]
	}
	for _, s := range spans {
		samples[s.req].Targets = targets[s.start:s.end:s.end]
	}
	return reqs, nil
}

// packedString consumes one length-prefixed string of b, sharing b's
// memory; n is negative when b is too short.
func packedString(b []byte) (s string, rest []byte, n int) {
	l, n := protowire.ConsumeVarint(b)
	if n < 0 || l > uint64(len(b)-n) {
		return "", b, -1
	}
	v := b[n : n+int(l)]
	return unsafe.String(unsafe.SliceData(v), len(v)), b[n+int(l):], n
}
