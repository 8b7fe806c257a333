package scoreio

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/jsonscan"
	"github.com/hayloft/hayloft/sdk/plugin"
)

var scanCases = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a" : [1, 2.5e-3, -0, true, false, null, {"b": "c"}] }`,
	`{"a":"\u00e9\n\"\\\/"}`, `{"a":"é 中 \ud83d\ude00"}`, `{"a":"bad \x"}`, `{"a":"\u12"}`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":1e+}`, `{"a":1E-7}`,
	`{"a":tru}`, `{"a":nul}`, `{"a" 1}`, `{"a":1,}`, `{,}`, `{"a":1 "b":2}`, `{"a":[1,]}`,
	`{"a":[1 2]}`, `{"a":{"b"}}`, `{"a":{"b":1,}}`, "{\"a\":\"tab\there\"}", `{"a":1}x`,
	`{"a":1} {}`, `{"a":"x"`, `{"a`, `{`, `[]`, `"s"`, `{"<k>&":"v"}`, `{"k\u0041":1}`,
	"{\"a\":\"\xff\xfe\"}", `{"a":[[[[[]]]]],"b":{"c":{"d":{}}}}`, "{\"a\":\n[1,\r\n2]\t}",
	`{"a":[ "x\\\" y" , "z\\\\" , "\\\\\"" ,"]" ]}`, `{"a":{"k \" ]":[ "v" ]}}`,
}

// The hand-written scanner accepts exactly the objects encoding/json
// accepts, compacts them as json.Compact does and writes keys as
// json.Marshal does.
func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range scanCases {
		checkScan(t, []byte(in))
	}
}

func FuzzParseObject(f *testing.F) {
	for _, in := range scanCases {
		f.Add([]byte(in))
	}
	f.Fuzz(checkScan)
}

func checkScan(t *testing.T, in []byte) {
	fields, err := parseObject(in)
	var obj map[string]json.RawMessage
	valid := json.Valid(in) && json.Unmarshal(in, &obj) == nil && obj != nil // "null" decodes into a map, but is no object
	if valid != (err == nil) {
		// Duplicate keys are the one thing encoding/json allows and we do not.
		if !(valid && err != nil && bytes.Contains([]byte(err.Error()), []byte("duplicate field"))) {
			t.Fatalf("%q: scanner err = %v, encoding/json valid = %v", in, err, valid)
		}
		return
	}
	if err != nil {
		return
	}
	for _, f := range fields {
		key, _ := json.Marshal(f.key)
		if !bytes.Equal(f.keyOut, key) {
			t.Errorf("%q: key written %s, json.Marshal writes %s", in, f.keyOut, key)
		}
		if _, ok := obj[f.key]; !ok {
			t.Errorf("%q: key %q is not one encoding/json sees", in, f.key)
		}
	}
	// Values compact as json.Compact compacts them.
	var wantVals, gotVals []byte
	for _, f := range fields {
		gotVals = jsonscan.AppendCompact(gotVals, f.value)
		var c bytes.Buffer
		if err := json.Compact(&c, f.value); err != nil {
			t.Fatalf("%q: value %q does not compact: %v", in, f.value, err)
		}
		if f.compact != bytes.Equal(c.Bytes(), f.value) {
			t.Errorf("%q: value %q marked compact = %v", in, f.value, f.compact)
		}
		wantVals = append(wantVals, c.Bytes()...)
	}
	if !bytes.Equal(gotVals, wantVals) {
		t.Errorf("%q: values compact to %s, want %s", in, gotVals, wantVals)
	}
}

// appendScore walks the details in place; it must write what decoding them
// into a map and encoding that with "value" and "invalid" writes.
func TestAppendScoreAgreesWithMap(t *testing.T) {
	for _, details := range []string{
		``, `{}`, `{"bp":1,"counts":[1,2],"score":33.5}`, `{ "a" : 1 , "z" : [ 1 , 2 ] }`,
		`{"value":7,"extra":"x"}`, `{"invalid":true}`, `{"z":1,"a":2}`, `{"a":1,"a":2}`,
		`{"k\u0041":1,"b":2}`, `{"<k>":1}`, `{"é":1,"a":2}`, `{"":1,"a":2}`, `{"w":{"a":[{"q":null}],"z":1}}`,
	} {
		for _, v := range []float64{0.25, 1e-7, 1e21, 100} {
			r := plugin.ScoreResult{Response: &sdk.ScoreResponse{Value: v, Invalid: v == 100}}
			if details != "" {
				r.DetailsJSON = []byte(details)
			}
			got, err := appendScore(nil, r)
			if err != nil {
				t.Fatalf("%s: %v", details, err)
			}
			d := r.DetailsJSON
			if d == nil {
				d = []byte(`{}`)
			}
			want, err := appendScoreSlow(nil, d, r)
			if err != nil || string(got) != string(want) {
				t.Errorf("%s, value %v:\n got %s\nwant %s (%v)", details, v, got, want, err)
			}
		}
	}
	if _, err := appendScore(nil, plugin.ScoreResult{Response: &sdk.ScoreResponse{Value: math.NaN()}}); err == nil {
		t.Error("NaN value written without error")
	}
}

// decodeString must decode every valid JSON string as encoding/json does,
// escapes, surrogates and invalid UTF-8 included.
func TestDecodeStringAgreesWithEncodingJSON(t *testing.T) {
	pieces := []string{`a`, `é`, `中`, `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u00e9`, `\u0000`,
		`\ud83d\ude00`, `\uD83D`, `\ude00`, `\ud83d\u0041`, `\ud83d\ud83d\ude00`, "\xff", "\xe4\xb8", `\u2028`, ` `}
	rng := rand.New(rand.NewPCG(9, 9))
	for range 20000 {
		var b strings.Builder
		b.WriteByte('"')
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		b.WriteByte('"')
		raw := []byte(b.String())
		var want string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		got, err := decodeString(raw)
		if err != nil || got != want {
			t.Fatalf("%s: got %q (%v), want %q", raw, got, err, want)
		}
		list, ok := stringList([]byte("[" + string(raw) + "," + string(raw) + "]"))
		if !ok || len(list) != 2 || list[0] != want || list[1] != want {
			t.Fatalf("[%s,…]: got %q, %v", raw, list, ok)
		}
	}
}

// Long strings with the bytes a string scan stops at (quotes, escapes,
// control characters) at every offset within a word: the word-at-a-time
// skip must stop where the byte loop would.
func TestScannerLongStrings(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	special := []string{`\"`, `\\`, `\u00e9`, "\x01", `"`, `\`, "é", "\x7f", "\xff", "!"}
	for range 3000 {
		var b strings.Builder
		b.WriteString(`{"a":"`)
		for range rng.IntN(60) {
			if rng.IntN(6) == 0 {
				b.WriteString(special[rng.IntN(len(special))])
			} else {
				b.WriteString(strings.Repeat("x", rng.IntN(20)))
			}
		}
		b.WriteString(`","b":[1]}`)
		checkScan(t, []byte(b.String()))
	}
}

// A score object the plugin wrote whole is written as it came; anything
// but an object is an error, not a broken output line.
func TestAppendScoreObject(t *testing.T) {
	obj := `{"bp":1,"invalid":false,"value":0.5}`
	r := plugin.ScoreResult{Response: &sdk.ScoreResponse{Value: 0.5}, ScoreJSON: []byte(obj)}
	if got, err := appendScore([]byte("x"), r); err != nil || string(got) != "x"+obj {
		t.Errorf("appendScore = %s, %v; want x%s", got, err, obj)
	}
	for _, bad := range []string{``, `[]`, `{`, `1`} {
		r.ScoreJSON = []byte(bad)
		if _, err := appendScore(nil, r); err == nil {
			t.Errorf("score object %q written without error", bad)
		}
	}
}
