// Package none is the control retriever: it sends the full context, so an
// eval can list it beside real retrievers and report their deltas.
package none

import (
	"context"

	"github.com/hayloft/hayloft/sdk"
)

// Name is the component name.
const Name = "none"

type retriever struct{}

// New builds the retriever; it takes no options.
func New(_ context.Context, opts sdk.Options) (sdk.Retriever, error) {
	var o struct{}
	if err := opts.Decode(&o); err != nil {
		return nil, err
	}
	return retriever{}, nil
}

func (retriever) Retrieve(_ context.Context, req *sdk.RetrieveRequest) (*sdk.RetrieveResponse, error) {
	return &sdk.RetrieveResponse{Context: req.Sample.Context}, nil
}
