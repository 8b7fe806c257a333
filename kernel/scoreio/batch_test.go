package scoreio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/plugins/scorers/bleu"
	"github.com/hayloft/hayloft/plugins/scorers/exact"
	"github.com/hayloft/hayloft/plugins/scorers/rougel"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

// manyLines repeats the lines of a testdata input n times, each copy with
// its own id and some whitespace the output must compact, so a run crosses
// many batch boundaries.
func manyLines(t *testing.T, name string, n int) []byte {
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	k := 0
	for range n {
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if strings.TrimSpace(l) == "" {
				continue
			}
			k++
			fmt.Fprintf(&b, `{ "n" : [ %d, {"k": "v w"} ] , %s`+"\n", k, strings.TrimPrefix(l, "{"))
		}
	}
	return b.Bytes()
}

// A scorer in a plugin, scored in batches over real gRPC with its details
// passed through as the plugin encoded them, writes the very bytes the
// same scorer writes in process, line by line and in aggregate.
func TestRemoteMatchesInProcess(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		new         func(context.Context, sdk.Options) (sdk.Scorer, error)
	}{
		{"bleu", "bleu.jsonl", bleu.New},
		{"rougel", "rouge.jsonl", rougel.New},
		{"exact", "exact.jsonl", exact.New},
	} {
		in := manyLines(t, tc.input, 400)
		set := sdk.NewSet("scoreio-test", "1.0.0")
		set.RegisterScorer(tc.name, tc.new)
		remote := sdktest.Scorer(t, set, tc.name, nil)
		local, err := tc.new(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, aggregate := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/aggregate=%v", tc.name, aggregate), func(t *testing.T) {
				var want, got bytes.Buffer
				if err := Run(context.Background(), local, bytes.NewReader(in), &want, aggregate); err != nil {
					t.Fatal(err)
				}
				if err := Run(context.Background(), remote, bytes.NewReader(in), &got, aggregate); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Errorf("remote output differs from in-process output\n got: %.600s\nwant: %.600s", got.Bytes(), want.Bytes())
				}
				if n := bytes.Count(want.Bytes(), []byte("\n")); !aggregate && n != bytes.Count(in, []byte("\n")) {
					t.Errorf("%d output lines for %d input lines", n, bytes.Count(in, []byte("\n")))
				}
				// Lines keep their order and their fields, compacted.
				if !aggregate && !bytes.HasPrefix(want.Bytes(), []byte(`{"n":[1,{"k":"v w"}],`)) {
					t.Errorf("first line: %.200s", want.Bytes())
				}
			})
		}
	}
}

// A line the plugin fails to score (no references) between lines it
// scores, under --on-error skip, over many batches: the batch replies
// unpacked, the gathered aggregate leaves the line out, and the output is
// still the in-process bytes, with and without --aggregate.
func TestRemoteMatchesInProcessWithFailedLines(t *testing.T) {
	var in bytes.Buffer
	for i := 1; i <= 3000; i++ {
		if i%411 == 0 {
			fmt.Fprintf(&in, `{"prediction": "no references %d"}`+"\n", i) // the scorer fails it
			continue
		}
		fmt.Fprintf(&in, `{"prediction": "the cat %d sat on the mat %d", "references": ["the cat sat on the mat %d", "a cat %d"]}`+"\n", i, i%7, i%13, i)
	}
	set := sdk.NewSet("scoreio-test", "1.0.0")
	set.RegisterScorer("bleu", bleu.New)
	remote := sdktest.Scorer(t, set, "bleu", nil)
	local, _ := bleu.New(context.Background(), nil)
	for _, agg := range []bool{true, false} {
		var want, got bytes.Buffer
		opts := Options{OnError: OnErrorSkip, Aggregate: agg}
		if err := Score(context.Background(), local, bytes.NewReader(in.Bytes()), &want, opts); err != nil {
			t.Fatal(err)
		}
		if err := Score(context.Background(), remote, bytes.NewReader(in.Bytes()), &got, opts); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(want.Bytes(), []byte(`"line":411,`)) {
			t.Errorf("setup: line 411 not skipped: %.300s", want.Bytes())
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("aggregate=%v: remote differs\n got: %.400s\nwant: %.400s", agg, got.Bytes(), want.Bytes())
		}
	}
}

// With --on-error skip a bad line is recorded in its place and the lines
// after it are scored; with stop (the default) the run ends at it, every
// line before it written.
func TestOnError(t *testing.T) {
	good := `{"prediction": "a", "references": "a"}`
	bad := `{"prediction": "a", "references": 7}`
	var in strings.Builder
	for i := 1; i <= 1000; i++ {
		if i == 600 || i == 601 {
			in.WriteString(bad + "\n")
			continue
		}
		in.WriteString(good + "\n")
	}
	local, _ := exact.New(context.Background(), nil)
	set := sdk.NewSet("scoreio-test", "1.0.0")
	set.RegisterScorer("exact", exact.New)
	remote := sdktest.Scorer(t, set, "exact", nil)
	for _, tc := range []struct {
		name      string
		opts      Options
		wantErr   string
		wantLines int
		check     func(out string) error
	}{
		{"stop", Options{}, "line 600: references: want string, list or object", 599, nil},
		{"skip", Options{OnError: OnErrorSkip}, "", 1000, func(out string) error {
			lines := strings.Split(out, "\n")
			want := `{"line":600,"error":"references: want string, list or object","input":"{\"prediction\": \"a\", \"references\": 7}"}`
			if lines[599] != want || !strings.HasPrefix(lines[600], `{"line":601,`) || !strings.Contains(lines[601], `"score":`) {
				return fmt.Errorf("lines 600-602:\n%s", strings.Join(lines[599:602], "\n"))
			}
			return nil
		}},
		{"skip aggregate", Options{OnError: OnErrorSkip, Aggregate: true}, "", 1, func(out string) error {
			if !strings.Contains(out, `"n":998,`) || !strings.Contains(out, `"skipped":[{"line":600,"error":"references: want string, list or object"`) {
				return fmt.Errorf("aggregate: %s", out)
			}
			return nil
		}},
		{"bad option", Options{OnError: "ignore"}, `on-error "ignore": want stop or skip`, 0, nil},
	} {
		// In process, and in a plugin, whose aggregate is gathered batch
		// by batch (plugin.AggregateInput) with the skipped lines apart.
		for where, sc := range map[string]sdk.Scorer{"in process": local, "plugin": remote} {
			t.Run(tc.name+"/"+where, func(t *testing.T) {
				var out bytes.Buffer
				err := Score(context.Background(), sc, strings.NewReader(in.String()), &out, tc.opts)
				if tc.wantErr != "" {
					if err == nil || err.Error() != tc.wantErr {
						t.Fatalf("err = %v, want %q", err, tc.wantErr)
					}
				} else if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(out.String(), "\n"); n != tc.wantLines {
					t.Errorf("%d lines written, want %d", n, tc.wantLines)
				}
				if tc.check != nil {
					if err := tc.check(out.String()); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
}

// An aggregate over no scored line is an error, not a score of 0.
func TestAggregateOfNothing(t *testing.T) {
	sc, _ := bleu.New(context.Background(), nil)
	for _, in := range []string{"", "\n\n", `{"prediction": 1}` + "\n"} {
		var out bytes.Buffer
		err := Score(context.Background(), sc, strings.NewReader(in), &out, Options{Aggregate: true, OnError: OnErrorSkip})
		if !errors.Is(err, ErrNothingToAggregate) || out.Len() != 0 {
			t.Errorf("%q: err = %v, out = %q; want ErrNothingToAggregate and no output", in, err, out.String())
		}
	}
}
