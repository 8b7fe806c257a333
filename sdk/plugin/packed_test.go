package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/hayloft/hayloft/sdk"
	pb "github.com/hayloft/hayloft/sdk/plugin/proto/hayloft/plugin/v1"
)

// Only samples of an id, targets and a language travel packed.
func TestPackable(t *testing.T) {
	for _, tc := range []struct {
		sample *sdk.Sample
		want   bool
	}{
		{nil, false},
		{&sdk.Sample{}, true},
		{&sdk.Sample{ID: "line 1", Targets: []string{"a", "b"}, Language: "zh"}, true},
		{&sdk.Sample{ID: "x", Context: "c"}, false},
		{&sdk.Sample{ID: "x", Choices: []string{}}, false},
		{&sdk.Sample{ID: "x", Metadata: map[string]any{"references": map[string]any{}}}, false},
		{&sdk.Sample{ID: "x", Length: sdk.Length{Tokens: 3}}, false},
		{&sdk.Sample{ID: "x", Grid: &sdk.GridPoint{}}, false},
		{&sdk.Sample{ID: "x", Window: 8}, false},
	} {
		if got := packable(&sdk.ScoreRequest{Sample: tc.sample}); got != tc.want {
			t.Errorf("packable(%+v) = %v, want %v", tc.sample, got, tc.want)
		}
	}
}

// packable looks at every field of a sample: one that is set and not the
// id, targets or language keeps the sample from traveling packed. A field
// added to sdk.Sample fails here until packable knows it.
func TestPackableSeesEveryField(t *testing.T) {
	typ := reflect.TypeFor[sdk.Sample]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		s := sdk.Sample{}
		v := reflect.ValueOf(&s).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Int, reflect.Int64:
			v.SetInt(1)
		case reflect.Float64:
			v.SetFloat(math.Copysign(0, -1)) // even -0 is not the zero value
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 0, 0))
		case reflect.Map:
			v.Set(reflect.MakeMap(f.Type))
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		case reflect.Struct:
			v.Field(0).Set(reflect.ValueOf(1).Convert(f.Type.Field(0).Type))
		default:
			t.Fatalf("field %s: kind %s not covered by this test", f.Name, v.Kind())
		}
		want := f.Name == "ID" || f.Name == "Targets" || f.Name == "Language"
		if got := packable(&sdk.ScoreRequest{Sample: &s}); got != want {
			t.Errorf("sample with %s set: packable = %v, want %v", f.Name, got, want)
		}
	}
}

// A packed batch decodes to the requests it was made of, flags, empty
// strings, no targets and non-ASCII text included.
func TestPackedRoundTrip(t *testing.T) {
	reqs := []*sdk.ScoreRequest{
		{Sample: &sdk.Sample{ID: "line 1", Targets: []string{"the cat", "a cat"}}, Prediction: "the cat"},
		{Sample: &sdk.Sample{ID: "", Language: "zh"}, Prediction: "", ForAggregate: true},
		{Sample: &sdk.Sample{ID: "été", Targets: []string{"", "中文"}}, Prediction: "x\x00y", ScoreObject: true},
		{Sample: &sdk.Sample{ID: string(make([]byte, 300)), Targets: []string{string(make([]byte, 70000))}}, ForAggregate: true, ScoreObject: true},
	}
	got, err := unpackScoreRequests(packScoreRequests(nil, reqs))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(reqs) {
		t.Fatalf("%d requests, want %d", len(got), len(reqs))
	}
	for i, want := range reqs {
		if !reflect.DeepEqual(&got[i], want) {
			t.Errorf("request %d: got %+v, want %+v", i, got[i], *want)
		}
	}
}

// Decoded for a scorer that borrows them, a batch's requests go into the
// arrays given, which the next batch reuses, and their strings are cut
// from the packed bytes, not from a copy; they read as the requests
// packed.
func TestBorrowedRequestsShareMemory(t *testing.T) {
	var arrays requestArrays
	var first *sdk.ScoreRequest
	for round := range 3 {
		reqs := make([]*sdk.ScoreRequest, 20-round) // fewer: the arrays are big enough
		for i := range reqs {
			reqs[i] = &sdk.ScoreRequest{Sample: &sdk.Sample{ID: fmt.Sprint(round, i), Language: "en", Targets: []string{"t", strings.Repeat("u", i)}}, Prediction: strings.Repeat("p", round+i)}
		}
		b := packScoreRequests(nil, reqs)
		got, err := decodeScoreRequests(b, &arrays)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range reqs {
			if !reflect.DeepEqual(&got[i], want) {
				t.Fatalf("round %d request %d: got %+v, want %+v", round, i, got[i], *want)
			}
			if p := got[i].Sample.Targets[0]; !within(b, p) || !within(b, got[i].Sample.ID) {
				t.Fatalf("round %d request %d: strings not cut from the packed bytes", round, i)
			}
		}
		if round == 0 {
			first = &got[0]
		} else if &got[0] != first {
			t.Fatalf("round %d: the requests' array was not reused", round)
		}
	}
}

// within reports whether s's bytes lie in b.
func within(b []byte, s string) bool {
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p+uintptr(len(s)) <= lo+uintptr(len(b))
}

// A packed batch that is cut short or holds text that is not UTF-8 is an
// error, never a panic or a wrong request.
func TestUnpackBad(t *testing.T) {
	good := packScoreRequests(nil, []*sdk.ScoreRequest{{Sample: &sdk.Sample{ID: "a", Targets: []string{"bc", "d"}}, Prediction: "ef"}})
	for n := range len(good) {
		if reqs, err := unpackScoreRequests(good[:n]); err == nil {
			t.Errorf("cut at %d of %d: no error (%+v)", n, len(good), reqs)
		}
	}
	if _, err := unpackScoreRequests(append(good, 0)); err == nil {
		t.Error("a byte too many: no error")
	}
	bad := packScoreRequests(nil, []*sdk.ScoreRequest{{Sample: &sdk.Sample{ID: "a", Targets: []string{"b\xff"}}}})
	if _, err := unpackScoreRequests(bad); err == nil {
		t.Error("a target that is not UTF-8: no error")
	}
	bad = packScoreRequests(nil, []*sdk.ScoreRequest{{Sample: &sdk.Sample{ID: "a"}, Prediction: "\xc3"}})
	if _, err := unpackScoreRequests(bad); err == nil {
		t.Error("a prediction that is not UTF-8: no error")
	}
}

// A served scorer answers a packed batch as it answers the same requests
// as messages: a batch of plain samples goes packed, one with a richer
// sample goes as messages, and both give the same results.
func TestPackedBatchServed(t *testing.T) {
	sc := serveScorer(t, objectScorer{})
	if !sc.Info().Serves(FeaturePackedScoreBatch) {
		t.Fatalf("features %v: no %s", sc.Info().Features, FeaturePackedScoreBatch)
	}
	plain := []*sdk.ScoreRequest{
		{Sample: &sdk.Sample{ID: "s0", Targets: []string{"t"}}, Prediction: "xx", ScoreObject: true},
		{Sample: &sdk.Sample{ID: "s1"}, Prediction: "fail"},
		{Sample: &sdk.Sample{ID: "s2", Language: "en"}, Prediction: "xyz"},
	}
	rich := append(plain[:3:3], &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "s3", Context: "c"}, Prediction: "q"})
	if !allPackable(plain) || allPackable(rich) {
		t.Fatal("the batches do not cover both forms")
	}
	ctx := context.Background()
	packed, err := sc.ScoreBatch(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	messages, err := sc.ScoreBatch(ctx, rich)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range packed {
		m := messages[i]
		if (p.Err != nil) != (m.Err != nil) || (p.Err == nil && (p.Response.Value != m.Response.Value ||
			string(p.ScoreJSON) != string(m.ScoreJSON) || string(p.DetailsJSON) != string(m.DetailsJSON))) {
			t.Errorf("request %d: packed %+v %s %s %v, as messages %+v %s %s %v", i,
				p.Response, p.ScoreJSON, p.DetailsJSON, p.Err, m.Response, m.ScoreJSON, m.DetailsJSON, m.Err)
		}
	}
	if r := packed[0]; r.Err != nil || string(r.ScoreJSON) != `{"invalid":false,"own":"s0","value":2}` {
		t.Errorf("packed score object: %s, %v", r.ScoreJSON, r.Err)
	}
	if packed[1].Err == nil {
		t.Error("packed failing request: no error")
	}
	// Without a failure the answer comes packed too, and reads the same.
	ok := []*sdk.ScoreRequest{plain[0], plain[2]}
	packed, err = sc.ScoreBatch(ctx, ok)
	if err != nil {
		t.Fatal(err)
	}
	for k, i := range []int{0, 2} {
		p, m := packed[k], messages[i]
		if p.Err != nil || p.Response.Value != m.Response.Value || string(p.ScoreJSON) != string(m.ScoreJSON) || string(p.DetailsJSON) != string(m.DetailsJSON) {
			t.Errorf("request %d: packed answer %+v %s %s %v, as messages %+v %s %s", i, p.Response, p.ScoreJSON, p.DetailsJSON, p.Err, m.Response, m.ScoreJSON, m.DetailsJSON)
		}
	}
}

// Packed results decode to what the messages they were made of read as,
// and a packed answer cut short or too long is an error.
func TestPackedResults(t *testing.T) {
	msgs := []*pb.ScoreResult{
		{Response: &pb.ScoreResponse{Value: 0.5, DetailsJson: []byte(`{"a":1}`), Stats: []float64{1, 2, 3}}},
		{Response: &pb.ScoreResponse{Value: math.Inf(-1), Invalid: true}},
		{Response: &pb.ScoreResponse{Value: 2, DetailsJson: []byte(`{"invalid":false,"value":2}`), ScoreObject: true, Stats: []float64{-0.0}}},
	}
	b := packScoreResults(msgs)
	got, err := unpackScoreResults(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(msgs) {
		t.Fatalf("%d results, want %d", len(got), len(msgs))
	}
	for i, m := range msgs {
		want := scoreResultFromProto(m)
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("result %d: got %+v %+v, want %+v %+v", i, got[i], *got[i].Response, want, *want.Response)
		}
	}
	for n := range len(b) {
		if got, err := unpackScoreResults(b[:n]); err == nil {
			t.Errorf("cut at %d of %d: no error (%d results)", n, len(b), len(got))
		}
	}
	if _, err := unpackScoreResults(append(b, 0)); err == nil {
		t.Error("a byte too many: no error")
	}
	if packScoreResults(append(msgs, &pb.ScoreResult{Error: &pb.Error{Message: "x"}})) != nil {
		t.Error("results with an error packed")
	}
}

// objectAggregator is objectScorer whose aggregate reads the details.
type objectAggregator struct{ objectScorer }

func (objectAggregator) Aggregate(_ context.Context, req *sdk.AggregateRequest) (*sdk.AggregateResponse, error) {
	for _, s := range req.Scores {
		if _, ok := s.Details["own"]; !ok || s.Details["value"] != nil || s.Details["invalid"] != nil || len(s.Stats) != 2 {
			return nil, fmt.Errorf("want the details alone and the stats, got %+v", s)
		}
	}
	return &sdk.AggregateResponse{N: len(req.Scores)}, nil
}

// Scores sent back packed for an aggregate reach an aggregator that reads
// details with their details (a score object's without the response's
// own fields) and their statistics.
func TestPackedAggregate(t *testing.T) {
	sc := serveScorer(t, objectAggregator{})
	ctx := context.Background()
	results, err := sc.ScoreBatch(ctx, []*sdk.ScoreRequest{
		{Sample: &sdk.Sample{ID: "s0"}, Prediction: "xx", ScoreObject: true},
		{Sample: &sdk.Sample{ID: "s1"}, Prediction: "xyz"},
		{Sample: &sdk.Sample{ID: "s2"}, Prediction: "fail"},
	})
	if err != nil {
		t.Fatal(err)
	}
	agg, err := sc.AggregateResults(ctx, gather(t, results))
	if err != nil || agg.N != 2 {
		t.Fatalf("aggregate = %+v, %v; want 2 scores", agg, err)
	}
}

// A plugin reuses a packed batch's memory (requests, results, details,
// the packed reply) for the batches after it: batches of every size, in
// flight together or one after another, with and without a failing
// request (whose reply is not packed and keeps its memory), each get
// their own answers. So does a scorer that only borrows its requests
// (sdk.Borrower), which gets them in reused arrays with strings cut from
// the received bytes.
func TestPackedBatchMemoryReused(t *testing.T) {
	for name, scorer := range map[string]sdk.Scorer{"keeps": objectScorer{}, "borrows": borrowingScorer{}} {
		t.Run(name, func(t *testing.T) { testPackedBatchMemoryReused(t, scorer) })
	}
}

// borrowingScorer is objectScorer, which copies what it returns and keeps
// nothing, saying so.
type borrowingScorer struct{ objectScorer }

func (borrowingScorer) BorrowsInput() {}

func testPackedBatchMemoryReused(t *testing.T, scorer sdk.Scorer) {
	sc := serveScorer(t, scorer)
	ctx := context.Background()
	batch := func(tag string, n int, failAt int) error {
		reqs := make([]*sdk.ScoreRequest, n)
		for i := range reqs {
			pred := strings.Repeat("x", 1+(i*7)%300) // details of many sizes: chunks fill up
			if i == failAt {
				pred = "fail"
			}
			reqs[i] = &sdk.ScoreRequest{Sample: &sdk.Sample{ID: fmt.Sprintf("%s-%d", tag, i), Targets: []string{"t"}}, Prediction: pred, ScoreObject: true}
		}
		results, err := sc.ScoreBatch(ctx, reqs)
		if err != nil {
			return err
		}
		for i, r := range results {
			if i == failAt {
				if r.Err == nil {
					return fmt.Errorf("%s request %d: no error", tag, i)
				}
				continue
			}
			want := fmt.Sprintf(`{"invalid":false,"own":%q,"value":%d}`, reqs[i].Sample.ID, len(reqs[i].Prediction))
			if r.Err != nil || string(r.ScoreJSON) != want {
				return fmt.Errorf("%s request %d: %s, %v; want %s", tag, i, r.ScoreJSON, r.Err, want)
			}
		}
		return nil
	}
	for round := range 3 {
		errs := make(chan error, 6)
		for k, n := range []int{300, 7, 1, 256, 40, 300} {
			failAt := -1
			if k == 4 {
				failAt = 3
			}
			go func() { errs <- batch(fmt.Sprintf("r%d-b%d", round, k), n, failAt) }()
		}
		for range 6 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	}
}

// Results handed back with ReleaseResults are reused for later batches;
// results not yet handed back stay as they were, whatever is scored
// meanwhile, and a second release, or one of results from elsewhere, does
// nothing.
func TestReleaseResults(t *testing.T) {
	sc := serveScorer(t, objectScorer{})
	ctx := context.Background()
	score := func(tag string, n int) []ScoreResult {
		reqs := make([]*sdk.ScoreRequest, n)
		for i := range reqs {
			reqs[i] = &sdk.ScoreRequest{Sample: &sdk.Sample{ID: fmt.Sprintf("%s-%d", tag, i), Targets: []string{"t"}},
				Prediction: strings.Repeat("y", 1+i%50), ScoreObject: true}
		}
		results, err := sc.ScoreBatch(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		return results
	}
	check := func(tag string, results []ScoreResult) {
		t.Helper()
		for i, r := range results {
			want := fmt.Sprintf(`{"invalid":false,"own":"%s-%d","value":%d}`, tag, i, 1+i%50)
			if r.Err != nil || string(r.ScoreJSON) != want || r.Response.Value != float64(1+i%50) || len(r.Response.Stats) != 2 {
				t.Fatalf("%s result %d: %s %+v %v; want %s", tag, i, r.ScoreJSON, r.Response, r.Err, want)
			}
		}
	}
	kept := score("kept", 300)
	for k := range 20 {
		tag := fmt.Sprintf("b%d", k)
		r := score(tag, 1+k*37%300)
		check(tag, r)
		ReleaseResults(r)
		ReleaseResults(r) // twice: nothing more
	}
	check("kept", kept)
	ReleaseResults([]ScoreResult{{Response: &sdk.ScoreResponse{}}}) // not a batch's: left alone
	ReleaseResults(nil)
}

// keepingScorer keeps every request it is given, as a scorer with a cache
// keyed or valued by pieces of its input does, and checks on each call
// that what it kept still reads as it did.
type keepingScorer struct {
	mu   sync.Mutex
	kept []keptRequest
}

type keptRequest struct {
	req                            *sdk.ScoreRequest
	id, prediction, target, prefix string // copies, and a piece kept uncopied
	piece                          string
}

func (s *keepingScorer) Score(_ context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.kept {
		if k.req.Sample.ID != k.id || k.req.Prediction != k.prediction || k.req.Sample.Targets[0] != k.target || k.piece != k.prefix {
			return nil, fmt.Errorf("a kept request changed: id %q prediction %q target %q piece %q, given %q %q %q %q",
				k.req.Sample.ID, k.req.Prediction, k.req.Sample.Targets[0], k.piece, k.id, k.prediction, k.target, k.prefix)
		}
	}
	s.kept = append(s.kept, keptRequest{req: req, id: strings.Clone(req.Sample.ID), prediction: strings.Clone(req.Prediction),
		target: strings.Clone(req.Sample.Targets[0]), prefix: strings.Clone(req.Prediction[:3]), piece: req.Prediction[:3]})
	return &sdk.ScoreResponse{Value: 1}, nil
}

// What a packed batch hands a scorer outlives the batch: requests,
// samples, targets and strings (pieces of them included) read the same in
// later batches, whose packed bytes reuse the earlier ones' buffers. They
// once did not, and rougel's stem cache, which keeps pieces of
// predictions, gave other batches' stems.
func TestPackedRequestsOutliveTheirBatch(t *testing.T) {
	keeper := new(keepingScorer)
	sc := serveScorer(t, keeper)
	if !sc.Info().Serves(FeaturePackedScoreBatch) {
		t.Fatalf("features %v: no %s", sc.Info().Features, FeaturePackedScoreBatch)
	}
	ctx := context.Background()
	for b := range 8 {
		reqs := make([]*sdk.ScoreRequest, 20)
		for i := range reqs {
			c := string(rune('a' + (b*20+i)%26))
			reqs[i] = &sdk.ScoreRequest{Sample: &sdk.Sample{ID: fmt.Sprintf("b%d-%d", b, i), Targets: []string{strings.Repeat(c, 40)}},
				Prediction: strings.Repeat(c, 30+b)}
		}
		if !allPackable(reqs) {
			t.Fatal("the batch would not go packed")
		}
		results, err := sc.ScoreBatch(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range results {
			if r.Err != nil {
				t.Fatalf("batch %d request %d: %v", b, i, r.Err)
			}
		}
		ReleaseResults(results)
	}
	if len(keeper.kept) != 160 {
		t.Errorf("kept %d requests, want 160", len(keeper.kept))
	}
}

// Results gathered batch by batch are the results gathered in one go,
// failed ones left out, and decode to what was gathered.
func TestAggregateInputGathers(t *testing.T) {
	var all []ScoreResult
	for i := range 50 {
		r := ScoreResult{Response: &sdk.ScoreResponse{Value: float64(i), Invalid: i%7 == 0, Stats: []float64{float64(i), 1}}}
		switch i % 5 {
		case 1:
			r.DetailsJSON = []byte(fmt.Sprintf(`{"i":%d}`, i))
		case 2:
			r.ScoreJSON = []byte(fmt.Sprintf(`{"invalid":false,"value":%d}`, i))
		case 3:
			r.Response.Details = map[string]any{"i": i}
		case 4:
			r = ScoreResult{Err: errors.New("failed")}
		}
		all = append(all, r)
	}
	whole := gather(t, all)
	var parts AggregateInput
	for start := 0; start < len(all); start += 13 {
		if err := parts.Add(all[start:min(start+13, len(all))]); err != nil {
			t.Fatal(err)
		}
	}
	if whole.Len() != 40 || parts.Len() != 40 || !bytes.Equal(whole.bytes(), parts.bytes()) {
		t.Fatalf("gathered %d in one go, %d in parts, same bytes %v; want 40 each", whole.Len(), parts.Len(), bytes.Equal(whole.bytes(), parts.bytes()))
	}
	got, err := parts.Results()
	if err != nil || len(got) != 40 {
		t.Fatalf("decoded %d results, %v", len(got), err)
	}
	k := 0
	for _, want := range all {
		if want.Err != nil {
			continue
		}
		g := got[k]
		k++
		wd, _ := want.Details()
		if wd == nil {
			wd = want.Response.Details
		}
		gd, err := g.Details()
		if err != nil || g.Response.Value != want.Response.Value || g.Response.Invalid != want.Response.Invalid ||
			!reflect.DeepEqual(g.Response.Stats, want.Response.Stats) || fmt.Sprint(gd) != fmt.Sprint(wd) {
			t.Errorf("result %d: %+v details %v (%v), want %+v details %v", k-1, g.Response, gd, err, want.Response, wd)
		}
	}
	var empty AggregateInput
	if r, err := empty.Results(); err != nil || len(r) != 0 || empty.Len() != 0 {
		t.Errorf("empty: %d results, %v", len(r), err)
	}
}

// The bytes a send reads are not written again by a second send of the
// same input (a retry after a plugin restart, while the first one's
// connection may still read them: the race detector sees a write), and a
// later Add still updates the count.
func TestAggregateInputBytesStable(t *testing.T) {
	one := []ScoreResult{{Response: &sdk.ScoreResponse{Value: 1, Stats: []float64{1, 2}}}}
	in := gather(t, one)
	sent := in.bytes()
	done := make(chan int)
	go func() {
		sum := 0
		for _, b := range sent {
			sum += int(b)
		}
		done <- sum
	}()
	again := in.bytes()
	<-done
	if !bytes.Equal(sent, again) || &sent[0] != &again[0] {
		t.Fatalf("a second send is not the same bytes")
	}
	if err := in.Add(one); err != nil {
		t.Fatal(err)
	}
	if got, err := in.Results(); err != nil || len(got) != 2 {
		t.Fatalf("after a second Add: %d results, %v; want 2", len(got), err)
	}
}

// gather is AggregateInputOf, failing t on an error.
func gather(t *testing.T, results []ScoreResult) *AggregateInput {
	t.Helper()
	in, err := AggregateInputOf(results)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// verifyingBorrower checks, while each call runs (across yields and
// sleeps, so that other batches on the stream make progress meanwhile),
// that its borrowed request still reads what it read on entry: the
// prediction is "p:"+id and the one target "t:"+id. A batch's memory
// reused under a running call would show as a mismatch. Some requests
// fail, some panic, so that their batches reply unpacked.
type verifyingBorrower struct{ bad atomic.Int64 }

func (*verifyingBorrower) BorrowsInput() {}

func (v *verifyingBorrower) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	id := req.Sample.ID
	ok := func() bool {
		return req.Prediction == "p:"+id && len(req.Sample.Targets) == 1 && req.Sample.Targets[0] == "t:"+id
	}
	if !ok() {
		v.bad.Add(1)
		return &sdk.ScoreResponse{Value: -1}, nil
	}
	switch {
	case strings.HasSuffix(id, "-fail"):
		return nil, errors.New("failing on purpose")
	case strings.HasSuffix(id, "-panic"):
		panic("panicking on purpose")
	}
	for range 3 {
		runtime.Gosched()
		if rand.IntN(8) == 0 {
			time.Sleep(50 * time.Microsecond)
		}
		if !ok() || req.Sample.ID != id {
			v.bad.Add(1)
			return &sdk.ScoreResponse{Value: -1}, nil
		}
	}
	return &sdk.ScoreResponse{Value: float64(len(id))}, nil
}

// Concurrent packed batches on one Calls stream, some with a failing or
// panicking request, some cancelled part way: no borrowed request is
// reused while its call runs, and every answered batch gets its own
// answers.
func TestBorrowedBatchesNotReusedWhileRunning(t *testing.T) {
	v := &verifyingBorrower{}
	sc := serveScorer(t, v)
	if !sc.Info().Serves(FeaturePackedScoreBatch) || !sc.Info().Serves(FeatureScoreBatchCall) {
		t.Fatalf("features %v", sc.Info().Features)
	}
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 25 {
				n := 1 + rand.IntN(200)
				reqs := make([]*sdk.ScoreRequest, n)
				for i := range reqs {
					id := fmt.Sprintf("g%d-r%d-%d-%s", g, round, i, strings.Repeat("z", rand.IntN(40)))
					switch {
					case round%5 == 1 && i == n/2:
						id += "-fail"
					case round%7 == 3 && i == n/3:
						id += "-panic"
					}
					reqs[i] = &sdk.ScoreRequest{Sample: &sdk.Sample{ID: id, Targets: []string{"t:" + id}}, Prediction: "p:" + id}
				}
				ctx := context.Background()
				var cancel context.CancelFunc = func() {}
				if round%6 == 5 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rand.IntN(300))*time.Microsecond)
				}
				results, err := sc.ScoreBatch(ctx, reqs)
				cancel()
				if err != nil {
					continue // cancelled
				}
				for i, r := range results {
					id := reqs[i].Sample.ID
					if strings.HasSuffix(id, "-fail") || strings.HasSuffix(id, "-panic") {
						if r.Err == nil {
							wrong.Add(1)
						}
						continue
					}
					if r.Err != nil {
						if ctx.Err() == nil {
							wrong.Add(1)
							t.Errorf("%s: %v", id, r.Err)
						}
						continue
					}
					if r.Response.Value != float64(len(id)) {
						wrong.Add(1)
					}
				}
				ReleaseResults(results)
			}
		}()
	}
	wg.Wait()
	if b := v.bad.Load(); b > 0 {
		t.Errorf("%d borrowed requests changed under a running call", b)
	}
	if w := wrong.Load(); w > 0 {
		t.Errorf("%d wrong answers", w)
	}
}
