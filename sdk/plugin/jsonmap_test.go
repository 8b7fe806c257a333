package plugin

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// appendJSONMap must write json.Marshal's bytes exactly, or hand over.
func TestAppendJSONMapMatchesMarshal(t *testing.T) {
	for name, m := range map[string]map[string]any{
		"bleu": {"score": 33.74998731987136, "counts": []float64{31, 17, 9, 6}, "totals": []float64{40, 39, 38, 37},
			"precisions": []float64{77.5, 43.58974358974359, 23.68421052631579, 16.216216216216218}, "bp": 1.0, "sys_len": 40.0, "ref_len": 37.0},
		"floats":   {"a": 1e-7, "b": -1e-7, "c": 1e21, "d": 1e20, "e": 123456789.125, "f": math.Copysign(0, -1), "g": 5e-324, "h": math.MaxFloat64, "i": 0.000001, "j": 1.5e-10},
		"scalars":  {"n": nil, "t": true, "f": false, "i": 42, "j": int64(-7), "s": "plain text", "empty": ""},
		"escapes":  {"html": "<b>&</b>", "quote": `a"b`, "back": `a\b`, "ctl": "a\nb\tc\x01", "uni": "héllo 北京", "ls": "a\u2028b", "bad": "a\xffb"},
		"key<esc>": {"k\"ey": 1.0, "ü": 2.0},
		"nested":   {"m": map[string]any{"z": 1.0, "a": []any{"x", 2.0, nil, true, map[string]any{"q": []float64{}}}}, "nil_list": []float64(nil), "nil_any": []any(nil), "nil_map": map[string]any(nil)},
		"many":     {"k01": 1.0, "k02": 2.0, "k03": 3.0, "k04": 4.0, "k05": 5.0, "k06": 6.0, "k07": 7.0, "k08": 8.0, "k09": 9.0, "k10": 10.0, "k11": 11.0, "k12": 12.0, "k13": 13.0, "k14": 14.0, "k15": 15.0, "k16": 16.0, "k17": 17.0, "K": 0.0, "_": 0.0},
		"other":    {"u": uint8(3), "s": []string{"a"}},
	} {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeMap(name, m)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s:\n got %s, %v\nwant %s", name, got, err, want)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := encodeMap("bad", map[string]any{"x": []float64{1, bad}}); err == nil {
			t.Errorf("%v encoded without error", bad)
		}
	}
}

// Whole numbers, where AppendJSONFloat takes its integer path, and the
// edges of that path (2^53, -0, beyond int64).
func TestAppendJSONFloatWhole(t *testing.T) {
	fs := []float64{0, math.Copysign(0, -1), 1e15, 1e16, 1e20, 1e21, -1e21, 1 << 62, 1 << 63, -(1 << 63), 1e300}
	for i := range 100000 {
		fs = append(fs, float64(i), -float64(i))
	}
	for e := range 64 {
		for d := -3.0; d <= 3; d++ {
			fs = append(fs, math.Ldexp(1, e)+d, -math.Ldexp(1, e)-d)
		}
	}
	for _, f := range fs {
		want, err := json.Marshal(f)
		got, ok := AppendJSONFloat(nil, f)
		if err != nil || !ok || string(got) != string(want) {
			t.Fatalf("%v: got %s (%v), want %s (%v)", f, got, ok, want, err)
		}
	}
}

// Floats of every magnitude, from random bit patterns.
func TestAppendJSONFloatRandom(t *testing.T) {
	x := uint64(88172645463325252)
	for range 200000 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		f := math.Float64frombits(x)
		want, err := json.Marshal(f)
		got, ok := AppendJSONFloat(nil, f)
		if (err == nil) != ok || (ok && string(got) != string(want)) {
			t.Fatalf("%v: got %s (%v), want %s (%v)", f, got, ok, want, err)
		}
	}
}

var mapSeeds = []string{
	`{"match":true,"target":0}`, `{"match":false}`, `{}`, ` {"a" : null , "b":"x\u00e9\n", "c":-1.5e3}`,
	`{"n":[1,"a",{"b":null}],"o":{"p":true}}`, `{"a":1,"a":"dup"}`, `{"big":1e400}`, `{"k\"":0.1}`,
	"{\"\xff\":\"\xfe\"}", `null`, `[]`, `"s"`, `{"a":1`, `{"a":01}`, `{"a":1}x`,
}

// decodeJSONMap must give json.Unmarshal's map exactly, or hand over.
func TestDecodeJSONMapMatchesUnmarshal(t *testing.T) {
	for _, s := range mapSeeds {
		agreeMap(t, []byte(s))
	}
	if _, ok := decodeJSONMap([]byte(`{"match":true,"target":0}`)); !ok {
		t.Error("a scorer's usual details took the slow path")
	}
}

func FuzzDecodeJSONMapMatchesUnmarshal(f *testing.F) {
	for _, s := range mapSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(agreeMap)
}

func agreeMap(t *testing.T, b []byte) {
	t.Helper()
	got, ok := decodeJSONMap(b)
	if !ok {
		return
	}
	var want map[string]any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("decodeJSONMap took %q, json.Unmarshal: %v", b, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeJSONMap(%q) = %#v, json.Unmarshal %#v", b, got, want)
	}
}

// BenchmarkDecodeMap: a scorer's usual details, as the host decodes them
// for every score, against encoding/json.
func BenchmarkDecodeMap(b *testing.B) {
	details := []byte(`{"match":true,"target":0}`)
	b.Run("decodeMap", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeMap("score details", details); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal(details, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
