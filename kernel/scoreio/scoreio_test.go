package scoreio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hayloft/hayloft/plugins/scorers/bleu"
	"github.com/hayloft/hayloft/plugins/scorers/exact"
	"github.com/hayloft/hayloft/plugins/scorers/rougel"
	"github.com/hayloft/hayloft/sdk"
)

var update = flag.Bool("update", false, "rewrite the golden files")

type factory func(context.Context, sdk.Options) (sdk.Scorer, error)

// metadataScorer reports what it finds in Metadata["references"]; it exists
// to show that object references reach the scorer intact.
type metadataScorer struct{}

func (metadataScorer) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	refs, ok := req.Sample.Metadata["references"].(map[string]any)
	if !ok {
		return nil, errors.New("no references object")
	}
	return &sdk.ScoreResponse{Value: float64(len(refs)), Details: map[string]any{"seen": refs, "targets": len(req.Sample.Targets)}}, nil
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name      string
		input     string
		newScorer factory
		opts      []string
		aggregate bool
	}{
		{"rougel", "rouge.jsonl", rougel.New, []string{"use_stemmer=true"}, false},
		{"rougelsum", "rouge.jsonl", rougel.NewSum, nil, false},
		{"bleu", "bleu.jsonl", bleu.New, nil, false},
		{"bleu_aggregate", "bleu.jsonl", bleu.New, []string{"seed=3"}, true},
		{"exact", "exact.jsonl", exact.New, []string{"lowercase=true", "remove_punctuation=true", "remove_articles=true", "normalize_whitespace=true"}, false},
		{"exact_aggregate", "exact.jsonl", exact.New, []string{"lowercase=true", "remove_punctuation=true", "remove_articles=true", "normalize_whitespace=true"}, true},
		{"metadata", "metadata.jsonl", func(context.Context, sdk.Options) (sdk.Scorer, error) { return metadataScorer{}, nil }, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := ParseOptions(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := tc.newScorer(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			in, err := os.Open(filepath.Join("testdata", tc.input))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			var out bytes.Buffer
			if err := Run(context.Background(), sc, in, &out, tc.aggregate); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.name+".golden.jsonl")
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("output differs from %s\n got:\n%s\nwant:\n%s", golden, out.Bytes(), want)
			}
		})
	}
}

// The golden files pin the format; these pin the numbers against the
// reference implementations independently of them.
func TestKnownValues(t *testing.T) {
	sc, _ := bleu.New(context.Background(), nil)
	in, _ := os.ReadFile(filepath.Join("testdata", "bleu.jsonl"))
	var out bytes.Buffer
	if err := Run(context.Background(), sc, bytes.NewReader(in), &out, true); err != nil {
		t.Fatal(err)
	}
	var agg sdk.AggregateResponse
	if err := json.Unmarshal(out.Bytes(), &agg); err != nil {
		t.Fatal(err)
	}
	// sacrebleu.corpus_bleu on these segments (its own test suite).
	if math.Abs(agg.Value-48.530827) > 1e-6 || agg.N != 3 || agg.Details["sys_len"] == nil {
		t.Errorf("corpus BLEU %+v, want 48.530827 over 3 segments", agg)
	}

	sc, _ = rougel.NewSum(context.Background(), nil)
	out.Reset()
	line := `{"prediction": "w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5", "references": "w1 w2 w3 w4 w5"}`
	if err := Run(context.Background(), sc, strings.NewReader(line), &out, false); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Prediction string
		Score      map[string]any
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Score["precision"] != 0.4 || got.Score["recall"] != 0.8 || got.Score["invalid"] != false || got.Prediction == "" {
		t.Errorf("rougeLsum line = %s", out.Bytes())
	}
}

func TestBadLines(t *testing.T) {
	good := `{"prediction": "a", "references": "a"}` + "\n"
	for _, tc := range []struct {
		line, want string
	}{
		{`{"prediction": "a", "references": 7}`, "line 3: references: want string, list or object"},
		{`{"prediction": "a", "references": [1, 2]}`, "line 3: references: want a list of strings"},
		{`{"references": "a"}`, "line 3: prediction: missing"},
		{`{"prediction": 5, "references": "a"}`, "line 3: prediction: want a string"},
		{`{"prediction": "a", "references": "a"`, "line 3: invalid JSON"},
		{`["prediction"]`, "line 3: want a JSON object"},
		{`{"prediction": "a", "references": "a"} {}`, "line 3: invalid JSON: data after the object"},
		{`{"prediction": "a", "sample": {"targetz": ["a"]}}`, `line 3: sample: json: unknown field "targetz"`},
		{`{"prediction": "a"}`, `line 3: score: exact: sample "line 3" has no targets`},
		{`{"prediction": "a", "target": "a"}`, `line 3: score: exact: sample "line 3" has no targets (the line's "target" is not read: name the targets "references")`},
		{`{"prediction": "a", "answers": ["a"], "id": 3}`, `line 3: score: exact: sample "line 3" has no targets (the line's "answers" is not read`},
		{`{"prediction": "a", "references": "a", "score": 1}`, `line 3: score: the input already has a "score" field`},
		{`{"prediction": "a", "prediction": "b", "references": "a"}`, "line 3: prediction: duplicate field"},
	} {
		sc, _ := exact.New(context.Background(), nil)
		var out bytes.Buffer
		// Line 2 is blank: blank lines are skipped but still counted.
		err := Run(context.Background(), sc, strings.NewReader(good+"\n"+tc.line+"\n"+good), &out, false)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want prefix %q", tc.line, err, tc.want)
		}
		if n := strings.Count(out.String(), "\n"); n != 1 || !strings.Contains(out.String(), `"score":`) {
			t.Errorf("%s: want the first line written before the error, got %q", tc.line, out.String())
		}
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sc, _ := exact.New(ctx, nil)
	if err := Run(ctx, sc, strings.NewReader(`{"prediction":"a","references":"a"}`), &bytes.Buffer{}, false); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    string
		wantErr string
	}{
		{nil, `{}`, ""},
		{[]string{"tokenize=13a", "mode=nltk"}, `{"tokenize":"13a","mode":"nltk"}`, ""},
		{[]string{"use_stemmer=true", "max_ngram_order=3", "smooth_value=0.5"}, `{"use_stemmer":true,"max_ngram_order":3,"smooth_value":0.5}`, ""},
		{[]string{"weights=[0.5, 0.5]", `extra={"a": 1}`}, `{"weights":[0.5,0.5],"extra":{"a":1}}`, ""},
		{[]string{`name="true"`, "empty=", "text=hello world", "eq=a=b"}, `{"name":"true","empty":"","text":"hello world","eq":"a=b"}`, ""},
		{[]string{"nullish=null"}, `{"nullish":null}`, ""},
		{[]string{"novalue"}, "", `option "novalue": want key=value`},
		{[]string{"=5"}, "", `option "=5": want key=value`},
		{[]string{"a=1", "a=2"}, "", `option "a=2": a given twice`},
	} {
		got, err := ParseOptions(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%q = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	// Options built this way decode strictly in a real scorer.
	opts, _ := ParseOptions([]string{"tokenize=intl", "smooth_method=floor"})
	if _, err := bleu.New(context.Background(), opts); err != nil {
		t.Errorf("bleu rejected parsed options: %v", err)
	}
	opts, _ = ParseOptions([]string{"tokenise=intl"})
	var ce *sdk.ConfigError
	if _, err := bleu.New(context.Background(), opts); !errors.As(err, &ce) || ce.Field != "tokenise" {
		t.Errorf("misspelt option: %v", err)
	}
}

// remoteScorer stands for a scorer in a plugin process (as
// pluginhost.Scorer says of one), under which the input's chunks are reused.
type remoteScorer struct{ sdk.Scorer }

func (remoteScorer) OutOfProcess() bool { return true }

// Past a few chunks of input, chunks and slabs are reused once their lines
// are written: every output line still carries its own input's text.
func TestReuseKeepsLines(t *testing.T) {
	exactScorer, _ := exact.New(context.Background(), nil)
	sc := remoteScorer{exactScorer}
	var in strings.Builder
	const n = 12000 // about 4 MiB: chunks of 1 MiB are reused
	for i := range n {
		word := fmt.Sprintf("w%06d", i)
		text := strings.Repeat(word+" ", 40)
		fmt.Fprintf(&in, `{"prediction": %q, "references": [%q], "n": %d}`+"\n", text, text, i)
	}
	var out bytes.Buffer
	if err := Run(context.Background(), sc, strings.NewReader(in.String()), &out, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		var got struct {
			Prediction string   `json:"prediction"`
			References []string `json:"references"`
			N          int      `json:"n"`
			Score      struct {
				Value float64 `json:"value"`
			} `json:"score"`
		}
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, l)
		}
		text := strings.Repeat(fmt.Sprintf("w%06d ", i), 40)
		if got.N != i || got.Score.Value != 1 || got.Prediction != text || len(got.References) != 1 || got.References[0] != text {
			t.Fatalf("line %d is not its input's: %.120s", i+1, l)
		}
	}
}

// keeper keeps every prediction it is given, as a scorer with a cache of
// pieces of its input does, beside a copy of how it read when given.
type keeper struct {
	mu   sync.Mutex
	kept [][2]string // as kept, as given
}

func (k *keeper) Score(_ context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kept = append(k.kept, [2]string{req.Prediction, strings.Clone(req.Prediction)})
	return &sdk.ScoreResponse{Value: 1}, nil
}

// A scorer in this process may keep what it is given (sdk.Scorer): the
// input's chunks, which its strings share, are then never reused.
func TestInProcessScorerKeepsItsStrings(t *testing.T) {
	var in strings.Builder
	const n = 12000 // about 4 MiB: past several chunks
	for i := range n {
		text := strings.Repeat(fmt.Sprintf("w%06d ", i), 40)
		fmt.Fprintf(&in, `{"prediction": %q, "references": ["x"]}`+"\n", text)
	}
	for _, aggregate := range []bool{false, true} {
		k := new(keeper)
		if err := Run(context.Background(), k, strings.NewReader(in.String()), io.Discard, aggregate); err != nil {
			t.Fatal(err)
		}
		if len(k.kept) != n {
			t.Fatalf("aggregate %v: kept %d predictions, want %d", aggregate, len(k.kept), n)
		}
		for _, p := range k.kept {
			if p[0] != p[1] {
				t.Fatalf("aggregate %v: a kept prediction changed after its call: %.40q, given as %.40q", aggregate, p[0], p[1])
			}
		}
	}
}
