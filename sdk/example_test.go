package sdk_test

import (
	"context"
	"fmt"
	"iter"

	"github.com/hayloft/hayloft/sdk"
)

// greetings is a task with one option, decoded strictly.
type greetings struct{ n int }

func newGreetings(_ context.Context, opts sdk.Options) (sdk.Task, error) {
	var o struct {
		Count int `json:"count"`
	}
	if err := opts.Decode(&o); err != nil {
		return nil, err
	}
	if o.Count < 1 {
		return nil, sdk.Configf("count", "must be at least 1, got %d", o.Count)
	}
	return greetings{o.Count}, nil
}

func (g greetings) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		for i := range req.Limited(g.n) {
			s := &sdk.Sample{ID: fmt.Sprint(i), Question: "Say hello.", Targets: []string{"hello"}, Depth: -1}
			if !yield(s, nil) {
				return
			}
		}
	}
}

// A plugin registers its components in a Set; its main then calls
// plugin.Main(set). Here the Set builds the task directly, as the plugin
// does when hayloft configures it.
func ExampleSet() {
	set := sdk.NewSet("acme", "1.0.0")
	set.RegisterTask("greetings", newGreetings)

	task, err := set.New(context.Background(), sdk.KindTask, "greetings", sdk.MustOptions(map[string]any{"count": 2}))
	if err != nil {
		panic(err)
	}
	for s, err := range task.(sdk.Task).Samples(context.Background(), &sdk.SamplesRequest{}) {
		fmt.Println(s.ID, s.Question, err)
	}

	// A typo in the config comes back naming the option, with a suggestion.
	_, err = set.New(context.Background(), sdk.KindTask, "greetings", sdk.Options(`{"cuont": 2}`))
	fmt.Println(err)
	// Output:
	// 0 Say hello. <nil>
	// 1 Say hello. <nil>
	// cuont: unknown option; did you mean "count"?
}
