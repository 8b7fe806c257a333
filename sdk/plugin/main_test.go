package plugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

func TestDescribeJSON(t *testing.T) {
	set := sdk.NewSet("acme", "1.0.0")
	set.RegisterScorer("b", func(context.Context, sdk.Options) (sdk.Scorer, error) { return nil, nil })
	set.RegisterTask("a", func(context.Context, sdk.Options) (sdk.Task, error) { return nil, nil })
	b, err := json.Marshal(Describe(set))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"acme","version":"1.0.0","protocol":"hayloft.plugin.v1","components":[{"kind":"task","name":"a"},{"kind":"scorer","name":"b"}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestServeComponentRefusesUnknown(t *testing.T) {
	set := sdk.NewSet("acme", "1.0.0")
	if err := ServeComponent(set, sdk.KindModel, "gpt"); err == nil {
		t.Error("serving a component the set lacks did not fail")
	}
}

func TestCPUProfileIsWritten(t *testing.T) {
	dir := t.TempDir()
	stop, err := startCPUProfile(dir, sdk.KindScorer, "exact")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	matches, _ := filepath.Glob(filepath.Join(dir, "scorer-exact-*.pprof"))
	if len(matches) != 1 {
		t.Fatalf("profiles: %v", matches)
	}
	if fi, err := os.Stat(matches[0]); err != nil || fi.Size() == 0 {
		t.Fatalf("empty profile: %v", err)
	}
	allocs, _ := filepath.Glob(filepath.Join(dir, "allocs-scorer-exact-*.pprof"))
	if len(allocs) != 1 {
		t.Fatalf("allocation profiles: %v", allocs)
	}
	if fi, err := os.Stat(allocs[0]); err != nil || fi.Size() == 0 {
		t.Fatalf("empty allocation profile: %v", err)
	}
}
