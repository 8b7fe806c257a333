package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

func fullSample() *sdk.Sample {
	return &sdk.Sample{
		ID:           "s1",
		Context:      "a long document",
		Question:     "who?",
		Messages:     []sdk.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: sdk.ContextSlot}},
		Choices:      []string{"A", "B"},
		Targets:      []string{"宝玉", ""},
		Length:       sdk.Length{Tokens: 4096, Tokenizer: "cl100k_base"},
		Depth:        0.25,
		Language:     "zh",
		Subtask:      "qa",
		Grid:         &sdk.GridPoint{Length: 0, Depth: -1},
		MaxNewTokens: 32,
		Window:       8192,
		Metadata: map[string]any{
			"stars": []any{1.0, 2.0}, "ok": true, "none": nil, "name": "x",
			"nested": map[string]any{"k": []any{"v", map[string]any{}}},
		},
	}
}

func TestInputRoundTrip(t *testing.T) {
	cases := []struct {
		name    string
		sample  *sdk.Sample
		options string
	}{
		{name: "every field", sample: fullSample(), options: `{"min_length":3}`},
		{name: "empty sample", sample: &sdk.Sample{}},
		{name: "zero grid point is kept", sample: &sdk.Sample{ID: "g", Grid: &sdk.GridPoint{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := AppendInput(nil, tc.sample, "pred", []byte(tc.options))
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeInput(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&got.Sample, tc.sample) {
				t.Errorf("sample\n got %+v\nwant %+v", got.Sample, *tc.sample)
			}
			if got.Prediction != "pred" || string(got.Options) != tc.options {
				t.Errorf("prediction %q options %q", got.Prediction, got.Options)
			}
		})
	}
}

// Metadata of types without a tag of their own goes as JSON and comes back
// as encoding/json decodes it into an any.
func TestValueAsJSON(t *testing.T) {
	type point struct{ X, Y int }
	s := &sdk.Sample{Metadata: map[string]any{"p": point{1, 2}, "raw": json.RawMessage(`[1,"a"]`), "n": 7, "f": []float64{0.5}}}
	b, err := AppendInput(nil, s, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeInput(b)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	raw, _ := json.Marshal(s.Metadata)
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Sample.Metadata, want) {
		t.Errorf("metadata %#v, want %#v", got.Sample.Metadata, want)
	}
}

func TestOutputRoundTrip(t *testing.T) {
	cases := []Output{
		{Value: 0.75, HasValue: true, Details: map[string]any{"found": []any{"a"}, "n": 3.0}, Stats: []float64{3, 4}},
		{Value: 0, HasValue: true},
		{Invalid: true},
		{Error: "no references"},
		{},
	}
	for _, want := range cases {
		b, err := AppendOutput(nil, &want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeOutput(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
	}
}

func TestAppendOutputRefusesNonFinite(t *testing.T) {
	for _, o := range []Output{
		{Value: math.NaN(), HasValue: true},
		{Value: 1, HasValue: true, Stats: []float64{math.Inf(1)}},
		{Value: 1, HasValue: true, Details: map[string]any{"x": []any{math.Inf(-1)}}},
		{Value: 1, HasValue: true, Details: map[string]any{"f": func() {}}},
	} {
		if _, err := AppendOutput(nil, &o); err == nil {
			t.Errorf("%+v encoded", o)
		}
	}
}

// le builds wire bytes by hand: bytes as they are, ints as u32, float64s as
// 8 bytes.
func le(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch p := p.(type) {
		case byte:
			b = append(b, p)
		case int:
			b = binary.LittleEndian.AppendUint32(b, uint32(p))
		case float64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p))
		case string:
			b = append(b, p...)
		}
	}
	return b
}

// What a hostile guest may return: every malformed output fails to decode
// with an error, without a panic and without allocating for the lengths it
// claims.
func TestDecodeOutputMalformed(t *testing.T) {
	deep := bytes.Repeat([]byte{TagArray, 1, 0, 0, 0}, MaxDepth+1)
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"truncated number", le(OutValue, TagNumber, byte(1), byte(2)), "truncated"},
		{"value of the wrong type", le(OutValue, TagString, 1, "x"), "want 3"},
		{"NaN", le(OutValue, TagNumber, math.NaN()), "not a finite number"},
		{"infinite stat", le(OutStats, TagArray, 1, TagNumber, math.Inf(1)), "not a finite number"},
		{"string longer than the output", le(OutError, TagString, 1<<31, "abc"), "exceeds"},
		{"huge array count", le(OutStats, TagArray, 0x7fffffff), "exceeds"},
		{"huge object count", le(OutDetails, TagObject, 0xffffffff, 0), "exceeds"},
		{"huge key", le(OutDetails, TagObject, 1, 0x7fffffff, TagNull), "exceeds"},
		{"nested too deep", append([]byte{OutDetails, TagObject, 1, 0, 0, 0, 1, 0, 0, 0, 'k'}, deep...), "nested more than"},
		{"unknown tag", le(OutDetails, TagObject, 1, 1, "k", byte(99)), "unknown tag"},
		{"bad json", le(OutDetails, TagObject, 1, 1, "k", TagJSON, 2, "{x"), "json value"},
		{"unknown field, truncated", le(byte(200), TagString, 10, "ab"), "exceeds"},
		{"invalid not a boolean", le(OutInvalid, TagNumber, 1.0), "want a boolean"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeOutput(tc.b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestUnknownFieldsAreSkipped(t *testing.T) {
	b := le(byte(99), TagObject, 1, 1, "k", TagArray, 1, TagTrue, OutValue, TagNumber, 0.5, byte(98), TagNull)
	got, err := DecodeOutput(b)
	if err != nil || got.Value != 0.5 || !got.HasValue {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// Whatever the bytes, decoding returns or errs; it never panics, and what
// it returns encodes again to an output that decodes the same.
func FuzzDecodeOutput(f *testing.F) {
	good, _ := AppendOutput(nil, &Output{Value: 1, HasValue: true, Details: map[string]any{"a": []any{"b", 1.0, nil, true}}, Stats: []float64{1}})
	f.Add(good)
	f.Add(le(OutDetails, TagObject, 1, 1, "k", TagJSON, 2, "{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := DecodeOutput(b)
		if err != nil || o.Error != "" {
			return
		}
		// Empty details and stats are left out, so they come back nil.
		if len(o.Details) == 0 {
			o.Details = nil
		}
		if len(o.Stats) == 0 {
			o.Stats = nil
		}
		again, err := AppendOutput(nil, &o)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", o, err)
		}
		o2, err := DecodeOutput(again)
		if err != nil || !reflect.DeepEqual(o, o2) {
			t.Fatalf("round trip: %+v then %+v (%v)", o, o2, err)
		}
	})
}

func FuzzDecodeInput(f *testing.F) {
	good, _ := AppendInput(nil, fullSample(), "p", []byte(`{}`))
	f.Add(good)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeInput(b)
	})
}

// A hostile output whose nested arrays each claim every byte left makes a
// decode allocate a small multiple of its length, as a flat array of nulls
// does (16 bytes an element, and room to grow), not that times its depth:
// sized by every level's count, 63 levels took some 1,000 times the input.
// (The nested one fails, truncated, once its innermost array has taken
// every null.)
func TestNestedCountsDoNotMultiplyAllocation(t *testing.T) {
	const n = 256 << 10
	header := []byte{OutDetails, TagObject, 1, 0, 0, 0, 1, 0, 0, 0, 'k'}
	nested := append([]byte(nil), header...)
	for range MaxDepth - 1 {
		nested = append(nested, TagArray, 0, 0, 0, 0)
		binary.LittleEndian.PutUint32(nested[len(nested)-4:], uint32(n-len(nested)))
	}
	nested = append(nested, make([]byte, n-len(nested))...)
	flat := append(append([]byte(nil), header...), TagArray, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(flat[len(flat)-4:], uint32(n-len(flat)))
	flat = append(flat, make([]byte, n-len(flat))...)
	allocated := func(b []byte, wantErr bool) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := DecodeOutput(b); (err != nil) != wantErr {
			t.Fatalf("decode: %v", err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	a, f := allocated(nested, true), allocated(flat, false)
	t.Logf("%d KiB: nested %d KiB, flat %d KiB", n>>10, a>>10, f>>10)
	if a > 200*n || f > 200*n {
		t.Errorf("nested arrays allocated %d KiB for %d KiB of output, a flat array %d KiB: the declared counts of each level are allocated", a>>10, n>>10, f>>10)
	}
}
