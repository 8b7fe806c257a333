package plugin

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// jsonScorer is lenScorer that writes its details itself, except for
// predictions it gives a NaN detail: those it hands back as a map.
type jsonScorer struct{ lenScorer }

func (j jsonScorer) ScoreDetailsJSON(ctx context.Context, req *sdk.ScoreRequest, dst []byte) (*sdk.ScoreResponse, []byte, error) {
	resp, err := j.Score(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	resp.Details = nil
	switch req.Prediction {
	case "nan":
		resp.Details = map[string]any{"bad": math.NaN()}
		return resp, nil, nil
	case "map":
		resp.Details = map[string]any{"z": 1.5, "a": "b"}
		return resp, nil, nil
	}
	return resp, append(dst, fmt.Sprintf(`{"own":%q}`, req.Sample.ID)...), nil
}

// A served DetailsJSONScorer's JSON reaches the host as it was written, by
// Score and by ScoreBatch; details it leaves in the map are encoded as
// Score's are, errors included.
func TestDetailsJSONScorer(t *testing.T) {
	sc := serveScorer(t, jsonScorer{})
	ctx := context.Background()
	reqs := []*sdk.ScoreRequest{
		{Sample: &sdk.Sample{ID: "s0"}, Prediction: "xx"},
		{Sample: &sdk.Sample{ID: "s1"}, Prediction: "map"},
		{Sample: &sdk.Sample{ID: "s2"}, Prediction: "nan"},
		{Sample: &sdk.Sample{ID: "s3"}, Prediction: "fail"},
	}
	results, err := sc.ScoreBatch(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if r := results[0]; r.Err != nil || r.Response.Value != 2 || string(r.DetailsJSON) != `{"own":"s0"}` {
		t.Errorf("own JSON: %+v %s %v", r.Response, r.DetailsJSON, r.Err)
	}
	if r := results[1]; r.Err != nil || string(r.DetailsJSON) != `{"a":"b","z":1.5}` {
		t.Errorf("map details: %s %v", r.DetailsJSON, r.Err)
	}
	if r := results[2]; r.Err == nil {
		t.Errorf("NaN detail: no error")
	}
	if r := results[3]; r.Err == nil {
		t.Errorf("failing request: no error")
	}
	resp, err := sc.Score(ctx, reqs[0])
	if err != nil || resp.Details["own"] != "s0" {
		t.Errorf("Score: %+v, %v", resp, err)
	}
}

// A batch's workers append many samples' details to one buffer each: every
// result keeps its own details, across buffers (a batch of thousands of
// long IDs fills several), between the map and error cases that write
// nothing there, and with samples sent without metadata or length.
func TestDetailsJSONScorerSharedBuffers(t *testing.T) {
	sc := serveScorer(t, jsonScorer{})
	const n = 3000
	reqs := make([]*sdk.ScoreRequest, n)
	for i := range reqs {
		pred := "xx"
		switch i % 7 {
		case 3:
			pred = "map"
		case 5:
			pred = "fail"
		}
		id := fmt.Sprintf("sample-%d-%s", i, strings.Repeat("x", i%50))
		smp := &sdk.Sample{ID: id}
		if i%11 == 0 {
			smp.Length = sdk.Length{Tokens: i, Tokenizer: "t"}
			smp.Metadata = map[string]any{"i": float64(i)}
		}
		reqs[i] = &sdk.ScoreRequest{Sample: smp, Prediction: pred}
	}
	results, err := sc.ScoreBatch(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		switch i % 7 {
		case 3:
			if r.Err != nil || string(r.DetailsJSON) != `{"a":"b","z":1.5}` {
				t.Errorf("%d: map details %s, %v", i, r.DetailsJSON, r.Err)
			}
		case 5:
			if r.Err == nil {
				t.Errorf("%d: failing request: no error", i)
			}
		default:
			want := fmt.Sprintf(`{"own":%q}`, reqs[i].Sample.ID)
			if r.Err != nil || string(r.DetailsJSON) != want || r.Response.Value != 2 {
				t.Errorf("%d: details %s, want %s (%v)", i, r.DetailsJSON, want, r.Err)
			}
		}
	}
}

// objectScorer is jsonScorer that also writes the whole score object.
type objectScorer struct{ jsonScorer }

func (o objectScorer) ScoreObjectJSON(ctx context.Context, req *sdk.ScoreRequest, dst []byte) (*sdk.ScoreResponse, []byte, error) {
	resp, err := o.Score(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	resp.Details = nil
	return resp, append(dst, fmt.Sprintf(`{"invalid":false,"own":%q,"value":%v}`, req.Sample.ID, resp.Value)...), nil
}

// A ScoreObjectScorer's object reaches the host whole, as ScoreJSON, only
// for requests that ask for it and are not only aggregated; the others get
// the details as before. Details() gives the details without the response's
// own fields.
func TestScoreObjectScorer(t *testing.T) {
	sc := serveScorer(t, objectScorer{})
	reqs := []*sdk.ScoreRequest{
		{Sample: &sdk.Sample{ID: "s0"}, Prediction: "xx", ScoreObject: true},
		{Sample: &sdk.Sample{ID: "s1"}, Prediction: "xx"},
		{Sample: &sdk.Sample{ID: "s2"}, Prediction: "xx", ScoreObject: true, ForAggregate: true},
	}
	results, err := sc.ScoreBatch(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if r := results[0]; r.Err != nil || r.DetailsJSON != nil || string(r.ScoreJSON) != `{"invalid":false,"own":"s0","value":2}` {
		t.Errorf("score object: %s / %s, %v", r.ScoreJSON, r.DetailsJSON, r.Err)
	}
	if d, err := results[0].Details(); err != nil || len(d) != 1 || d["own"] != "s0" {
		t.Errorf("Details() of a score object: %v, %v", d, err)
	}
	if r := results[1]; r.Err != nil || r.ScoreJSON != nil || string(r.DetailsJSON) != `{"own":"s1"}` {
		t.Errorf("details: %s / %s, %v", r.ScoreJSON, r.DetailsJSON, r.Err)
	}
	if r := results[2]; r.Err != nil || r.ScoreJSON != nil || string(r.DetailsJSON) != `{"own":"s2"}` {
		t.Errorf("aggregate-only request: %s / %s, %v", r.ScoreJSON, r.DetailsJSON, r.Err)
	}
}
