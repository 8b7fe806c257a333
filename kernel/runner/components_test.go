package runner

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// closingModel is an echoModel that records its Close.
type closingModel struct {
	echoModel
	closed chan struct{}
}

func (m *closingModel) Close() error {
	close(m.closed)
	return nil
}

// TestEvalComponentsOpenAtOnce checks that an eval's components are opened
// together, not one after another: each open here waits until every other
// one has begun, which in series would never happen (the wait then gives
// up and the eval fails). Every component is closed at the end.
func TestEvalComponentsOpenAtOnce(t *testing.T) {
	f := newFixture(t, 5, nil)
	const opens = 4 // the task, two models, the scorer
	var begun sync.WaitGroup
	begun.Add(opens)
	all := make(chan struct{})
	go func() { begun.Wait(); close(all) }()
	await := func(ctx context.Context) error {
		begun.Done()
		select {
		case <-all:
			return nil
		case <-time.After(30 * time.Second):
			return errors.New("opened one after another: the other components never began to open")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	models := map[string]*closingModel{}
	for _, name := range []string{"a", "b"} {
		m := &closingModel{closed: make(chan struct{})}
		models[name] = m
		f.set.RegisterModel(name, func(ctx context.Context, _ sdk.Options) (sdk.Model, error) {
			if err := await(ctx); err != nil {
				return nil, err
			}
			return m, nil
		})
	}
	f.set.RegisterTask("slow", func(ctx context.Context, _ sdk.Options) (sdk.Task, error) {
		if err := await(ctx); err != nil {
			return nil, err
		}
		return counting{5}, nil
	})
	f.set.RegisterScorer("slowmatch", func(ctx context.Context, _ sdk.Options) (sdk.Scorer, error) {
		if err := await(ctx); err != nil {
			return nil, err
		}
		return matchScorer{}, nil
	})
	res, err := f.run(t, context.Background(), `
task "slow" "t" {}
model "a" "a" {}
model "b" "b" {}
eval "e" {
  task    = task.slow.t
  models  = [model.a.a, model.b.b]
  scorers = ["slowmatch"]
}
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range res.Evals {
		if ev.Error != "" || ev.Samples != 5 {
			t.Errorf("%s: %d samples, error %q", ev.Model, ev.Samples, ev.Error)
		}
	}
	for name, m := range models {
		select {
		case <-m.closed:
		default:
			t.Errorf("model %s not closed after the run", name)
		}
	}
}
