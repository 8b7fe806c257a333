package plugin

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/hayloft/hayloft/sdk"
	pb "github.com/hayloft/hayloft/sdk/plugin/proto/hayloft/plugin/v1"
)

// A packed score batch (ScoreBatchRequest.packed, FeaturePackedScoreBatch)
// carries requests whose samples hold only an id, targets and a language:
// a varint count of requests, then per request a varint of flags, the id, prediction and language as length-prefixed
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
// TestPackableSeesEveryField holds it to every field of sdk.Sample.
func packable(req *sdk.ScoreRequest) bool {
	s := req.Sample
	return s != nil && s.Context == "" && s.Question == "" && s.Messages == nil && s.Choices == nil &&
		s.Length == (sdk.Length{}) && math.Float64bits(s.Depth) == 0 && s.Subtask == "" && s.Grid == nil &&
		s.MaxNewTokens == 0 && s.Window == 0 && s.Metadata == nil
}

// packBufs holds the buffers of packed batches already sent: each is a
// batch's worth of text, which fresh would cost its page faults again.
var packBufs = sync.Pool{New: func() any { return new([]byte) }}

// packScoreRequests appends the packed form of reqs, which packable
// accepts, to b.
func packScoreRequests(b []byte, reqs []*sdk.ScoreRequest) []byte {
	size := 0
	for _, r := range reqs {
		size += 1 + 3*maxVarint + len(r.Sample.ID) + len(r.Prediction) + len(r.Sample.Language) + maxVarint
		for _, t := range r.Sample.Targets {
			size += maxVarint + len(t)
		}
	}
	b = slices.Grow(b, size+maxVarint)
	b = protowire.AppendVarint(b, uint64(len(reqs)))
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

var errPacked = errors.New("packed score batch: truncated or too long")

// unpackScoreRequests decodes a packed batch into requests and their
// samples; each string is checked to be UTF-8 as a protobuf string would
// be. What it returns (requests, samples, targets, strings) is fresh for
// every batch and never written again: a scorer may keep any of it past
// its call (sdk.Scorer; rougel's stem cache keeps pieces of predictions).
// The packed bytes themselves go back to bufferPool once the reply is sent
// (releasePacked), so the strings are cut from one copy of them, not from
// them: cut from them, they once gave rougel with stemming other batches'
// stems (TestPackedRequestsOutliveTheirBatch).
func unpackScoreRequests(b []byte) ([]sdk.ScoreRequest, error) {
	return decodeScoreRequests(b, nil)
}

// requestArrays are the arrays a packed batch's requests are decoded into
// when its scorer only borrows them (sdk.Borrower): the next batch's
// requests reuse them.
type requestArrays struct {
	reqs    []sdk.ScoreRequest
	samples []sdk.Sample
	targets []string
}

// decodeScoreRequests decodes a packed batch into fresh arrays and one
// copy of b (into nil: unpackScoreRequests), or, for a scorer that keeps
// nothing of its requests (sdk.Borrower), into into's arrays with the
// strings cut from b itself: those requests are good until b and into are
// reused, once the batch's reply is packed.
func decodeScoreRequests(b []byte, into *requestArrays) ([]sdk.ScoreRequest, error) {
	count, n := protowire.ConsumeVarint(b)
	if n < 0 || count > uint64(len(b)-n)/5 { // a request takes 5 bytes at least
		return nil, errPacked
	}
	b = b[n:]
	// Sized to the count, so the requests' pointers into samples stay
	// put. A request's targets are a capped piece of one slice: should
	// appending move that slice, earlier pieces keep the old array, which
	// nothing writes again until the arrays are reused.
	var reqs []sdk.ScoreRequest
	var samples []sdk.Sample
	var targets []string
	if into == nil {
		// One copy of the batch, never written: the strings below share it.
		own := string(b)
		b = unsafe.Slice(unsafe.StringData(own), len(own))
		reqs = make([]sdk.ScoreRequest, 0, count)
		samples = make([]sdk.Sample, 0, count)
		targets = make([]string, 0, count)
	} else {
		reqs = reuse(into.reqs, int(count))
		samples = reuse(into.samples, int(count))
		targets = reuse(into.targets, int(count))
		defer func() { into.reqs, into.samples, into.targets = reqs, samples, targets }()
	}
	for k := range int(count) {
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
		nt, n := protowire.ConsumeVarint(b)
		if n < 0 || nt > uint64(len(b)) { // each target takes a byte at least
			return nil, fmt.Errorf("request %d: %w", k, errPacked)
		}
		b = b[n:]
		start := len(targets)
		for range nt {
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
		smp := sdk.Sample{ID: strs[0], Language: strs[2]}
		if nt > 0 {
			smp.Targets = targets[start:len(targets):len(targets)]
		}
		samples = append(samples, smp)
		reqs = append(reqs, sdk.ScoreRequest{Sample: &samples[k], Prediction: strs[1], ForAggregate: flags&packedForAggregate != 0, ScoreObject: flags&packedScoreObject != 0})
	}
	if len(b) > 0 {
		return nil, fmt.Errorf("%d bytes after %d requests: %w", len(b), count, errPacked)
	}
	return reqs, nil
}

// reuse is s emptied and cleared, with room for n, reallocated if it has
// too little.
func reuse[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	clear(s[:cap(s)])
	return s[:0]
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

// The results of a packed batch whose requests all succeeded go back
// packed too (ScoreBatchResponse.packed), and so do the scores of an
// aggregate to a plugin that takes packed batches (AggregateRequest.packed):
// a varint count of results, then per result a varint of flags, the value's 8 bytes, the details as
// length-prefixed bytes, a varint count of stats and their 8 bytes each.
// The receiver then decodes them with one copy and an array of numbers
// instead of two messages, a details copy and a stats slice per result.
const (
	packedInvalid = 1 << iota
	packedObject
)

// packedResultSize bounds the packed size of one result.
func packedResultSize(details []byte, stats []float64) int {
	return 1 + 8 + maxVarint + len(details) + maxVarint + 8*len(stats)
}

// appendPackedResult appends one packed result.
func appendPackedResult(b []byte, value float64, invalid, object bool, details []byte, stats []float64) []byte {
	var flags uint64
	if invalid {
		flags |= packedInvalid
	}
	if object {
		flags |= packedObject
	}
	b = protowire.AppendVarint(b, flags)
	b = protowire.AppendFixed64(b, math.Float64bits(value))
	b = protowire.AppendBytes(b, details)
	b = protowire.AppendVarint(b, uint64(len(stats)))
	for _, v := range stats {
		b = protowire.AppendFixed64(b, math.Float64bits(v))
	}
	return b
}

// packScoreResults is the packed form of results, or nil when one of them
// is an error (errors travel as messages).
func packScoreResults(results []*pb.ScoreResult) []byte {
	size := 0
	for _, r := range results {
		p := r.GetResponse()
		if r.GetError() != nil || p == nil {
			return nil
		}
		size += packedResultSize(p.GetDetailsJson(), p.GetStats())
	}
	b := packedReply(size + maxVarint)
	b = protowire.AppendVarint(b, uint64(len(results)))
	for _, r := range results {
		p := r.GetResponse()
		b = appendPackedResult(b, p.GetValue(), p.GetInvalid(), p.GetScoreObject(), p.GetDetailsJson(), p.GetStats())
	}
	return b
}

// packedReplies holds the buffers of packed score batches already sent
// (sendReplies): each is a batch's worth of details, which fresh would
// cost its page faults again.
var packedReplies = sync.Pool{}

// packedReply is an empty buffer of at least size bytes, reused if a
// free one is big enough.
func packedReply(size int) []byte {
	if b, ok := packedReplies.Get().(*[]byte); ok {
		if cap(*b) >= size {
			return (*b)[:0]
		}
		packedReplies.Put(b)
	}
	// A quarter more than asked, so that the next batches, a little
	// larger or smaller, fit the same buffer.
	return make([]byte, 0, size+size/4)
}

// putPackedReply hands back the buffer of a packed reply that is sent.
func putPackedReply(b []byte) {
	b = b[:0]
	packedReplies.Put(&b)
}

// AggregateInput is what an aggregate reads of ScoreBatch's results
// (value, invalid, details, statistics), gathered batch by batch in the
// packed form AggregateResults sends to a plugin that takes packed batches
// (AggregateRequest.packed). A caller aggregating a stream (`hayloft score
// --aggregate`) adds each batch's results as they come and then releases
// them (ReleaseResults), for the next batch to reuse, rather than keeping
// every batch's arrays to the end and copying them all into one message
// there: on a machine where a page fault costs microseconds, that was a
// tenth of corpus BLEU's time. Failed results are left out, as an
// aggregate leaves them out. The zero value is empty and ready.
type AggregateInput struct {
	packed []byte // maxVarint bytes for the count, then the packed results
	n      int
	// counted is 1 + the count last written into packed's room: bytes
	// writes it only when it changed, so that a retried send (a plugin
	// restarted mid-aggregate) never writes into bytes that the first
	// one's connection may still be reading.
	counted int
}

// Add appends what an aggregate reads of results, copied: results may be
// released once Add returns.
func (in *AggregateInput) Add(results []ScoreResult) error {
	size := 0
	for _, r := range results {
		if r.Err == nil && r.Response != nil {
			size += packedResultSize(r.DetailsJSON, r.Response.Stats) + len(r.ScoreJSON)
		}
	}
	if cap(in.packed)-len(in.packed) < size {
		// Doubled, not grown as append grows a large slice (by a
		// quarter): the arrays outgrown are fresh memory too, and a
		// quarter at a time they added up to four times the final one.
		grown := make([]byte, max(maxVarint, len(in.packed)), max(2*cap(in.packed), maxVarint+len(in.packed)+size))
		copy(grown, in.packed)
		in.packed = grown
	}
	for _, r := range results {
		if r.Err != nil || r.Response == nil {
			continue
		}
		d, object := r.DetailsJSON, false
		switch {
		case d == nil && r.ScoreJSON != nil:
			d, object = r.ScoreJSON, true
		case d == nil && len(r.Response.Details) > 0:
			var err error
			if d, err = encodeMap("score details", r.Response.Details); err != nil {
				return err
			}
		}
		in.packed = appendPackedResult(in.packed, r.Response.Value, r.Response.Invalid, object, d, r.Response.Stats)
		in.n++
	}
	return nil
}

// Len is the number of results added (failed ones are not).
func (in *AggregateInput) Len() int { return in.n }

// bytes is the packed form, the count then the results, sharing in's
// memory: the count is written into the room left for it.
func (in *AggregateInput) bytes() []byte {
	if in.packed == nil {
		return protowire.AppendVarint(nil, 0)
	}
	count := protowire.AppendVarint(make([]byte, 0, maxVarint), uint64(in.n))
	start := maxVarint - len(count)
	if in.counted != in.n+1 {
		copy(in.packed[start:], count)
		in.counted = in.n + 1
	}
	return in.packed[start:]
}

// Results decodes the gathered results, for an aggregate that does not
// take the packed form: their responses' Details stay nil (DetailsJSON or
// ScoreJSON hold them, as ScoreBatch's results do).
func (in *AggregateInput) Results() ([]ScoreResult, error) {
	return unpackScoreResults(in.bytes())
}

// AggregateInputOf gathers results in one go.
func AggregateInputOf(results []ScoreResult) (*AggregateInput, error) {
	in := new(AggregateInput)
	return in, in.Add(results)
}

// unpackScoreResults decodes packed results, their responses in one array.
// Details share b's memory, which is never written again; the stats of all
// share one array.
func unpackScoreResults(b []byte) ([]ScoreResult, error) {
	return new(resultSlabs).unpack(b)
}

// resultSlabs are the arrays unpack decodes packed results into. A host
// reuses them batch after batch (resultMems) once the caller hands the
// results back (ReleaseResults): a batch's worth of fresh memory costs
// its page faults.
type resultSlabs struct {
	results []ScoreResult
	resps   []sdk.ScoreResponse
	stats   []float64
	packed  []byte // the packed answer the results' details share
}

// resultMems holds the resultSlabs of results handed back.
var resultMems = sync.Pool{New: func() any { return new(resultSlabs) }}

// ReleaseResults hands back the memory of results that ScorerClient's
// ScoreBatch decoded from a packed answer (the slice and the responses and
// statistics it points to), for the batches after it; the caller must
// have done with all of them, copies included. Other results are left to
// the collector. Results are valid until released, so a caller that
// keeps them (an aggregate) just never releases them.
func ReleaseResults(results []ScoreResult) {
	if len(results) == 0 || results[0].mem == nil {
		return
	}
	m := results[0].mem
	results[0].mem = nil
	if m.packed != nil {
		releasePacked(m.packed)
		m.packed = nil
	}
	resultMems.Put(m)
}

// unpack is unpackScoreResults into m's arrays.
func (m *resultSlabs) unpack(b []byte) ([]ScoreResult, error) {
	want, n := protowire.ConsumeVarint(b)
	if n < 0 || want > uint64(len(b)-n)/11 { // a result takes 11 bytes at least
		return nil, errPackedResults
	}
	b = b[n:]
	results := reuse(m.results, int(want))
	resps := reuse(m.resps, int(want))
	// resps holds want, so the results' pointers into it stay put. A
	// response's stats are a capped piece of one slice: should appending
	// move that slice, earlier pieces keep the old array, which nothing
	// writes again (m keeps the new one).
	stats := m.stats[:0] // every element is written before it is read
	defer func() { m.results, m.resps, m.stats = results, resps, stats }()
	for k := range int(want) {
		flags, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return nil, fmt.Errorf("result %d: %w", k, errPackedResults)
		}
		b = b[n:]
		bits, n := protowire.ConsumeFixed64(b)
		if n < 0 {
			return nil, fmt.Errorf("result %d: %w", k, errPackedResults)
		}
		b = b[n:]
		details, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, fmt.Errorf("result %d: %w", k, errPackedResults)
		}
		b = b[n:]
		count, n := protowire.ConsumeVarint(b)
		if n < 0 || count > uint64(len(b)-n)/8 {
			return nil, fmt.Errorf("result %d: %w", k, errPackedResults)
		}
		b = b[n:]
		if len(stats) == 0 && count > 0 && cap(stats) < int(count)*(int(want)-k) {
			// Results mostly have as many statistics as the first; no
			// more than the rest of b can hold, whatever a bad reply says.
			stats = make([]float64, 0, min(int(count)*(int(want)-k), len(b)/8))
		}
		start := len(stats)
		for range count {
			v, _ := protowire.ConsumeFixed64(b)
			b = b[8:]
			stats = append(stats, math.Float64frombits(v))
		}
		resp := sdk.ScoreResponse{Value: math.Float64frombits(bits), Invalid: flags&packedInvalid != 0}
		if count > 0 {
			resp.Stats = stats[start:len(stats):len(stats)]
		}
		resps = append(resps, resp)
		if len(details) == 0 {
			details = nil // as a message's absent bytes field reads
		} else {
			details = details[:len(details):len(details)]
		}
		r := ScoreResult{Response: &resps[k], DetailsJSON: details}
		if flags&packedObject != 0 {
			r = ScoreResult{Response: &resps[k], ScoreJSON: details}
		}
		results = append(results, r)
	}
	if len(b) > 0 {
		return nil, fmt.Errorf("%d bytes after %d results: %w", len(b), want, errPackedResults)
	}
	return results, nil
}

var errPackedResults = errors.New("packed score results: truncated or too long")
