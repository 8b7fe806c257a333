package bleu

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/plugins/internal/intern"
	"github.com/hayloft/hayloft/plugins/internal/pytext"
	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/jsonstr"
	"github.com/hayloft/hayloft/sdk/sdktest"
)

// fused13aInputs are texts for the fused 13a scan: the Opticks, random
// strings of pieces (punctuation, digits, entities, Unicode whitespace and
// letters), and dense strings over the bytes the rules look at, where
// neighbouring matches interact.
func fused13aInputs(t *testing.T) []string {
	var inputs []string
	if b, err := os.ReadFile(sdktest.OpticksPath()); err == nil {
		inputs = append(inputs, strings.Split(string(b), "\n")...)
	}
	pieces := strings.Split("a b 1 2 . , - & ; ' \" ( ) [ ] { } < > / \\ : @ ! ? $ % ^ * + = | ~ `   \t \n \x1c \x0b &quot; &amp; &lt; &gt; <skipped> -\n 中 。 ‐ … € « » ١ ² Σ İ ÿ \u00a0 \u3000 \u2009 \u0085 \xff", " ")
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		var b strings.Builder
		for n := rng.IntN(30); n > 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		inputs = append(inputs, b.String())
	}
	for range 50000 {
		var b strings.Builder
		for n := rng.IntN(14); n > 0; n-- {
			b.WriteByte("1a.,- ,.9"[rng.IntN(9)])
		}
		inputs = append(inputs, b.String())
	}
	return inputs
}

func TestFused13aMatchesRules(t *testing.T) {
	for _, in := range fused13aInputs(t) {
		line := preprocess13a(pytext.RStrip(in))
		want := pytext.Fields(tokenize13a(pytext.RStrip(in)))
		spans := appendFields13a(nil, line)
		var got []string
		for k := 0; k < len(spans); k += 2 {
			got = append(got, line[spans[k]:spans[k+1]])
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("13a fields of %q:\n got %q\nwant %q", in, got, want)
		}
	}
}

// The packed counting (gramTable) gives the per-order tables' statistics,
// with one or several references, repeated n-grams, unknown hypothesis
// tokens and every max order it takes.
func TestPackedStatsMatchTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for round := range 3000 {
		order := 1 + rng.IntN(maxPackedOrder)
		vocab := 1 + rng.IntN(12)
		word := func() string { return string(rune('a' + rng.IntN(vocab))) }
		var refs [][]string
		for range 1 + rng.IntN(3) {
			var ref []string
			for range rng.IntN(20) {
				ref = append(ref, word())
			}
			refs = append(refs, ref)
		}
		var hyp []string
		for range rng.IntN(20) {
			hyp = append(hyp, word())
			if rng.IntN(8) == 0 {
				hyp = append(hyp, "unknown")
			}
		}
		want := newCounter(order).stats(hyp, refs)
		c := newCounter(order)
		c.vocab.Reset()
		for _, ref := range refs {
			c.words(ref, true)
			c.refIDs = append(c.refIDs, c.ids[0]...)
			c.refEnd = append(c.refEnd, len(c.refIDs))
		}
		c.words(hyp, false)
		c.hypIDs = append(c.hypIDs, c.ids[0]...)
		if got := c.packedStats(nil); !slices.Equal(got, want) {
			t.Fatalf("round %d: refs %q hyp %q order %d: packed %v, tables %v", round, refs, hyp, order, got, want)
		}
	}
}

// ScoreDetailsJSON writes json.Marshal's bytes of Score's details, in both
// modes, over smoothing methods, orders and inputs that score 0, 100 and
// between; and no details for a request that is only aggregated.
func TestScoreDetailsJSON(t *testing.T) {
	inputs := fused13aInputs(t)
	rng := rand.New(rand.NewPCG(11, 12))
	ctx := context.Background()
	for _, opts := range []map[string]any{
		nil, {"smooth_method": "floor"}, {"smooth_method": "add-k"}, {"smooth_method": "none"},
		{"max_ngram_order": 6}, {"use_effective_order": false}, {"tokenize": "char"},
		{"mode": "nltk"}, {"mode": "nltk", "smooth_method": "method4"}, {"mode": "nltk", "weights": []float64{0.5, 0.5}},
	} {
		s := newT(t, opts)
		for range 300 {
			ref := inputs[rng.IntN(len(inputs))]
			hyp := ref
			if rng.IntN(4) > 0 {
				hyp = inputs[rng.IntN(len(inputs))]
			}
			req := &sdk.ScoreRequest{Sample: &sdk.Sample{ID: "x", Targets: []string{ref}}, Prediction: hyp}
			want, werr := s.Score(ctx, req)
			got, js, gerr := s.ScoreDetailsJSON(ctx, req, nil)
			if (werr != nil) != (gerr != nil) {
				t.Fatalf("%v: errors %v and %v", opts, werr, gerr)
			}
			if werr != nil {
				continue
			}
			wantJS, err := json.Marshal(want.Details)
			if err != nil {
				if got.Details == nil || js != nil {
					t.Fatalf("%v %q %q: details JSON cannot hold, but got %s", opts, ref, hyp, js)
				}
				continue
			}
			if string(js) != string(wantJS) || got.Value != want.Value || !slices.Equal(got.Stats, want.Stats) || got.Details != nil {
				t.Fatalf("%v %q %q:\n got %s %v\nwant %s %v", opts, ref, hyp, js, got, wantJS, want)
			}
			// The score object: the details with the response's own
			// fields, as json.Marshal writes the merged map.
			want.Details["invalid"], want.Details["value"] = want.Invalid, want.Value
			wantObj, _ := json.Marshal(want.Details)
			req.ScoreObject = true
			if _, obj, _ := s.ScoreObjectJSON(ctx, req, nil); string(obj) != string(wantObj) {
				t.Fatalf("%v %q %q: score object\n got %s\nwant %s", opts, ref, hyp, obj, wantObj)
			}
			req.ForAggregate = true
			if _, obj, _ := s.ScoreObjectJSON(ctx, req, nil); obj != nil {
				t.Fatalf("score object for an aggregate-only request: %s", obj)
			}
			if _, js, _ := s.ScoreDetailsJSON(ctx, req, nil); js != nil {
				t.Fatalf("details for an aggregate-only request: %s", js)
			}
		}
	}
}

// nonWord flags exactly the bytes that are not cWord, whatever their
// neighbours (a carry or borrow between bytes would show as a wrong flag
// next to an extreme byte).
func TestNonWord(t *testing.T) {
	for pos := range 8 {
		for c := range 256 {
			for _, fill := range []byte{0, 'a', 'z', '0', '9', '\'', 0x7f, 0x80, 0xff, ' '} {
				var b [8]byte
				for i := range b {
					b[i] = fill
				}
				b[pos] = byte(c)
				m := nonWord(le64(string(b[:])))
				for i, x := range b {
					if got, want := m>>(8*i+7)&1 == 1, class13a[x] != cWord; got != want {
						t.Fatalf("nonWord(% x): byte %d (%#x) flagged %v, want %v", b, i, x, got, want)
					}
				}
			}
		}
	}
}

// tokenHead is intern.Head of every field, wherever it sits in its line.
func TestTokenHead(t *testing.T) {
	for _, in := range fused13aInputs(t) {
		line := preprocess13a(pytext.RStrip(in))
		spans := appendFields13a(nil, line)
		for k := 0; k < len(spans); k += 2 {
			start, end := int(spans[k]), int(spans[k+1])
			if got, want := tokenHead(line, start, end), intern.Head([]byte(line[start:end])); got != want {
				t.Fatalf("tokenHead(%q, %d, %d) = %#x, want %#x", line, start, end, got, want)
			}
		}
	}
}

// appendFields merges the response's own fields in key order, in place of
// details of the same name, as json.Marshal writes the merged map.
func TestAppendFieldsMergesResponse(t *testing.T) {
	for _, tc := range []struct {
		fields []jsonField
		resp   *sdk.ScoreResponse
		want   string
	}{
		{[]jsonField{{key: `"a":`, nums: []float64{1}}}, nil, `{"a":1}`},
		{nil, &sdk.ScoreResponse{Value: 0.5}, `{"invalid":false,"value":0.5}`},
		{[]jsonField{{key: `"a":`, nums: []float64{1}}, {key: `"z":`, nums: []float64{2, 3}, list: true}}, &sdk.ScoreResponse{Value: 7, Invalid: true},
			`{"a":1,"invalid":true,"value":7,"z":[2,3]}`},
		{[]jsonField{{key: `"invalid":`, nums: []float64{9}}, {key: `"m":`, list: true}, {key: `"value":`, nums: []float64{9}}}, &sdk.ScoreResponse{Value: 1},
			`{"invalid":false,"m":null,"value":1}`},
	} {
		for _, nums := range []*numCache{nil, new(numCache)} {
			got, ok := appendFields(nil, tc.resp, nums, tc.fields)
			if !ok || string(got) != tc.want {
				t.Errorf("appendFields(%v, %+v) = %s, %v; want %s", tc.fields, tc.resp, got, ok, tc.want)
			}
		}
	}
}

// A numCache writes every number as jsonstr.AppendFloat does, whether it
// has the number, another number in its slot, or nothing there.
func TestNumCacheWritesAppendFloat(t *testing.T) {
	var c numCache
	rng := rand.New(rand.NewPCG(1, 2))
	var nums []float64
	for c := 1; c <= 60; c++ {
		for t := c; t <= 60; t++ {
			nums = append(nums, 100*float64(c)/float64(t), 100/(4*float64(t)))
		}
	}
	for range 2000 {
		nums = append(nums, rng.Float64(), rng.NormFloat64()*1e25, rng.NormFloat64()*1e-9, float64(rng.IntN(1000)))
	}
	nums = append(nums, math.Copysign(0, -1), math.Inf(1), math.NaN(), 5e-324, math.MaxFloat64)
	for round := range 3 {
		for _, f := range nums {
			want, wantOK := jsonstr.AppendFloat([]byte("x"), f)
			got, ok := c.appendFloat([]byte("x"), f)
			if ok != wantOK || (ok && string(got) != string(want)) {
				t.Fatalf("round %d: %v: %s, %v; want %s, %v", round, f, got, ok, want, wantOK)
			}
		}
		rng.Shuffle(len(nums), func(i, j int) { nums[i], nums[j] = nums[j], nums[i] })
	}
}
