package runner

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// BenchmarkRunPath is the kernel's own path per sample, in process: a
// task of short samples, a model that answers at once, a batched scorer,
// the real journal; one b.N-sample run per benchmark, so ns/op and
// allocs/op are per sample (with the run's start and end spread over
// them). What the plugin processes and the model server cost is not in it.
func BenchmarkRunPath(b *testing.B) {
	set := sdk.NewSet("test", "1")
	n := b.N
	set.RegisterTask("counting", func(context.Context, sdk.Options) (sdk.Task, error) { return counting{n}, nil })
	set.RegisterModel("good", func(context.Context, sdk.Options) (sdk.Model, error) { return &echoModel{}, nil })
	sc := &batchMatch{}
	set.RegisterScorer("batched", func(context.Context, sdk.Options) (sdk.Scorer, error) { return sc, nil })
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "j.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	cfg, err := config.Parse("bench.hcl", []byte(oneEval("good", " max_concurrency = 64 ", "batched")), config.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	res, err := New(Options{Opener: setOpener{set}, Store: st}).Run(context.Background(), cfg)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if ev := res.Evals[0]; ev.Samples != n || ev.Error != "" {
		b.Fatalf("%d of %d samples, error %q", ev.Samples, n, ev.Error)
	}
}
