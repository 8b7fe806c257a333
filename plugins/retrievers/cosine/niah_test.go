package cosine

import (
	"context"
	"github.com/hayloft/hayloft/sdk/sdktest"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/plugins/retrievers/bm25"
	"github.com/hayloft/hayloft/plugins/tasks/niah"
	"github.com/hayloft/hayloft/sdk"
)

// TestNIAHSamples runs both retrievers of the offline ablation over real
// samples of the niah task: at every length and depth the needle must be
// among the five chunks kept.
func TestNIAHSamples(t *testing.T) {
	ctx := context.Background()
	opticks(t) // skips without the text
	task, err := niah.New(ctx, sdk.MustOptions(map[string]any{
		"haystack": sdktest.OpticksPath(),
		"lengths":  []int{2000, 16000, 48000},
		"depths":   []float64{0, 33, 66, 100},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := task.(sdk.Provisioner); ok {
		if err := p.Provision(ctx); err != nil {
			t.Fatal(err)
		}
	}
	dense := newRetriever(t, nil)
	lexical, err := bm25.New(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for s, err := range task.Samples(ctx, &sdk.SamplesRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		for name, r := range map[string]sdk.Retriever{"cosine": dense, "bm25": lexical} {
			resp, err := r.Retrieve(ctx, &sdk.RetrieveRequest{Sample: s})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(resp.Context, strings.TrimSpace(niah.DefaultNeedle)) {
				t.Errorf("%s, sample %s (length %d, depth %v): needle not kept", name, s.ID, s.Length.Tokens, s.Depth)
			}
		}
	}
	if n != 12 {
		t.Errorf("%d samples, want 12", n)
	}
}
