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

// scoreToProto scores req with sc, through ScoreDetailsJSON when sc has it.
func scoreToProto(ctx context.Context, sc sdk.Scorer, req *sdk.ScoreRequest) (*pb.ScoreResponse, error) {
	var resp *sdk.ScoreResponse
	var details []byte
	var err error
	if js, ok := sc.(DetailsJSONScorer); ok {
		resp, details, err = js.ScoreDetailsJSON(ctx, req, nil)
	} else {
		resp, err = sc.Score(ctx, req)
	}
	if err != nil {
		return nil, toStatus(err)
	}
	if resp == nil {
		return nil, plainStatus(codes.Internal, "scorer returned neither a response nor an error")
	}
	if details != nil {
		return &pb.ScoreResponse{Value: resp.Value, Invalid: resp.Invalid, DetailsJson: details, Stats: resp.Stats}, nil
	}
	out, err := scoreResponseToProto(resp)
	return out, toStatus(err)
}
