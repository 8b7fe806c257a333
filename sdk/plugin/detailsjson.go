package plugin

import (
	"context"

	"google.golang.org/grpc/codes"

	"github.com/hayloft/hayloft/sdk"
	pb "github.com/hayloft/hayloft/sdk/plugin/proto/hayloft/plugin/v1"
)

// DetailsJSONScorer is an optional interface of a scorer a plugin serves:
// ScoreDetailsJSON is Score with the details appended to dst as the JSON
// object json.Marshal(resp.Details) would be, resp.Details left nil. The
// details cross the plugin boundary as JSON anyway, so a scorer whose
// details have a fixed shape writes them directly instead of building a map
// per sample for the server to encode. It may instead return nil JSON and
// resp.Details set (say, for a value JSON cannot hold), which the server
// then encodes as it does Score's.
type DetailsJSONScorer interface {
	sdk.Scorer
	ScoreDetailsJSON(ctx context.Context, req *sdk.ScoreRequest, dst []byte) (*sdk.ScoreResponse, []byte, error)
}

// ScoreObjectScorer is an optional interface of a DetailsJSONScorer:
// ScoreObjectJSON is ScoreDetailsJSON with the response's "invalid" and
// "value" written among the details, keys in json.Marshal's order (the two
// in place of any detail of the same name): the score object a caller that
// sets sdk.ScoreRequest.ScoreObject writes, sent whole so that the caller
// does not merge them into the details line by line. Like
// ScoreDetailsJSON, it may return nil JSON and resp.Details set instead.
type ScoreObjectScorer interface {
	DetailsJSONScorer
	ScoreObjectJSON(ctx context.Context, req *sdk.ScoreRequest, dst []byte) (*sdk.ScoreResponse, []byte, error)
}

// scoreToProto scores req with sc, through ScoreDetailsJSON when sc has it.
func scoreToProto(ctx context.Context, sc sdk.Scorer, req *sdk.ScoreRequest) (*pb.ScoreResponse, error) {
	out, _, err := scoreToProtoInto(ctx, sc, req, &pb.ScoreResponse{}, nil)
	return out, err
}

// scoreToProtoInto is scoreToProto with the response written to out when
// the details come as JSON (else a fresh message is returned), and the
// details appended to dst. rest is the room left in dst's buffer after
// them (capacity-limited details, so later appends never reach them), or
// nil when the details did not go there.
func scoreToProtoInto(ctx context.Context, sc sdk.Scorer, req *sdk.ScoreRequest, out *pb.ScoreResponse, dst []byte) (resp *pb.ScoreResponse, rest []byte, err error) {
	var r *sdk.ScoreResponse
	var details []byte
	object := false
	if so, ok := sc.(ScoreObjectScorer); ok && req.ScoreObject && !req.ForAggregate {
		r, details, err = so.ScoreObjectJSON(ctx, req, dst)
		object = true
	} else if js, ok := sc.(DetailsJSONScorer); ok {
		r, details, err = js.ScoreDetailsJSON(ctx, req, dst)
	} else {
		r, err = sc.Score(ctx, req)
	}
	if err != nil {
		return nil, nil, toStatus(err)
	}
	if r == nil {
		return nil, nil, plainStatus(codes.Internal, "scorer returned neither a response nor an error")
	}
	if details != nil {
		n := len(details)
		out.Value, out.Invalid, out.DetailsJson, out.Stats = r.Value, r.Invalid, details[:n:n], r.Stats
		out.ScoreObject = object
		if cap(dst) > 0 && cap(details) > 0 && &dst[:1][0] == &details[:1][0] {
			rest = details[n:n:cap(details)] // appended in place: dst's room goes on
		}
		return out, rest, nil
	}
	p, err := scoreResponseToProto(r)
	return p, nil, toStatus(err)
}
