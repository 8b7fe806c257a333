package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

var seeds = []string{
	`{}`, ` { } `, `[]`, `{"a":1}`, `{"a":1,"a":2}`, `{"a" : [1, 2.5e-3, -0, "x"], "b":{"c":null,"d":true,"e":false}}`,
	`{"k\u00e9y":"v\n"}`, "{\"\xff\":1}", `{"a":"\ud83d\ude00"}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`,
	`{"a":1e}`, `{"a":1e+}`, `{"a":tru}`, `{"a":"x}`, "{\"a\":\"\x01\"}", `{"a":"\x"}`, `{"a":"\u12"}`,
	`{"a":1,}`, `{,}`, `{"a"}`, `{"a":1}x`, `{"a":1} {}`, `[1,]`, `[1 2]`, `null`, `"s"`, `12`, ``, ` `,
	`{"a":[[[[[]]]]]}`, strings.Repeat("[", 10001) + strings.Repeat("]", 10001), `{"a":"` + strings.Repeat("é", 100) + `"}`,
	"\ufeff{}", `{"a":1}` + "\n", `{"A":1,"a":2}`,
}

// TestAgreesWithEncodingJSON: every seed is judged as encoding/json judges
// it (FuzzAgreesWithEncodingJSON goes further).
func TestAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range seeds {
		agree(t, []byte(s))
	}
}

func FuzzAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(agree)
}

// agree checks Valid, Object and Array against encoding/json on b: same
// verdict, same members (the last of duplicates winning, as json decodes
// into a map), same elements.
func agree(t *testing.T, b []byte) {
	t.Helper()
	if got, want := Valid(b), json.Valid(b); got != want {
		t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
	}
	got := map[string]json.RawMessage{}
	objErr := Object(b, func(k, v []byte) error {
		got[string(k)] = bytes.Clone(v)
		return nil
	})
	var want map[string]json.RawMessage
	jsonErr := json.Unmarshal(b, &want)
	isObject := json.Valid(b) && bytes.TrimLeft(b, " \t\r\n")[0] == '{'
	switch {
	case objErr == nil && (jsonErr != nil || !isObject):
		t.Fatalf("Object(%q) accepted what encoding/json refuses: %v", b, jsonErr)
	case objErr != nil && isObject:
		t.Fatalf("Object(%q) = %v, encoding/json accepts it", b, objErr)
	case objErr != nil && !errors.Is(objErr, ErrSyntax):
		t.Fatalf("Object(%q) = %v, not ErrSyntax", b, objErr)
	case objErr == nil:
		if len(got) != len(want) {
			t.Fatalf("Object(%q) gave %d keys, encoding/json %d", b, len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("Object(%q)[%q] = %q, encoding/json %q", b, k, got[k], v)
			}
		}
	}
	var elems []json.RawMessage
	arrErr := Array(b, func(v []byte) error {
		elems = append(elems, bytes.Clone(v))
		return nil
	})
	var wantElems []json.RawMessage
	isArray := json.Valid(b) && bytes.TrimLeft(b, " \t\r\n")[0] == '['
	if (arrErr == nil) != isArray {
		t.Fatalf("Array(%q) = %v, is an array: %v", b, arrErr, isArray)
	}
	if arrErr == nil {
		if err := json.Unmarshal(b, &wantElems); err != nil || len(elems) != len(wantElems) {
			t.Fatalf("Array(%q) gave %d elements, encoding/json %d (%v)", b, len(elems), len(wantElems), err)
		}
		for i := range elems {
			if !bytes.Equal(elems[i], wantElems[i]) {
				t.Fatalf("Array(%q)[%d] = %q, encoding/json %q", b, i, elems[i], wantElems[i])
			}
		}
	}
	// Every string and integer value decodes as encoding/json decodes it.
	if objErr == nil {
		for k, v := range got {
			checkScalar(t, k, v)
		}
	}
	for i, v := range elems {
		checkScalar(t, strconv.Itoa(i), v)
	}
}

func checkScalar(t *testing.T, where string, v []byte) {
	t.Helper()
	switch KindOf(v) {
	case KindString:
		s, err := String(v)
		var want string
		if jerr := json.Unmarshal(v, &want); err != nil || jerr != nil || s != want {
			t.Fatalf("%s: String(%q) = %q, %v; encoding/json %q, %v", where, v, s, err, want, jerr)
		}
	case KindNumber:
		n, ok := Int(v)
		var want int64
		jerr := json.Unmarshal(v, &want)
		if ok != (jerr == nil) || ok && n != want {
			t.Fatalf("%s: Int(%q) = %d, %v; encoding/json %d, %v", where, v, n, ok, want, jerr)
		}
	}
}

func TestInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"42", 42, true}, {"-17", -17, true},
		{"9223372036854775807", 1<<63 - 1, true}, {"-9223372036854775808", -1 << 63, true},
		{"9223372036854775808", 0, false}, {"99999999999999999999", 0, false},
		{"1.0", 0, false}, {"1e3", 0, false}, {"", 0, false}, {"-", 0, false},
	} {
		n, ok := Int([]byte(tc.in))
		if n != tc.want || ok != tc.ok {
			t.Errorf("Int(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.want, tc.ok)
		}
	}
}

func TestKeysDecoded(t *testing.T) {
	var keys []string
	err := Object([]byte("{\"a\\u00e9\":1,\"\xff\":2,\"plain\":3}"), func(k, _ []byte) error {
		keys = append(keys, string(k))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"aé", "\uFFFD", "plain"}; strings.Join(keys, "|") != strings.Join(want, "|") {
		t.Errorf("keys %q, want %q", keys, want)
	}
}

func TestCallbackErrorStops(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := Object([]byte(`{"a":1,"b":2,"c":3}`), func(_, _ []byte) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Errorf("got %v after %d members, want stop after 2", err, n)
	}
}

func BenchmarkObject(b *testing.B) {
	line := []byte(`{"id":"s1","context":"The barn is red. The code for door 1 is 4821. The hay is dry.","question":"What is the code for door 1?","answers":["4821"]}`)
	b.Run("jsonscan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Object(line, func(k, v []byte) error {
				if KindOf(v) == KindString {
					String(v)
				}
				return nil
			})
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]json.RawMessage
			json.Unmarshal(line, &m)
			for _, v := range m {
				var s string
				json.Unmarshal(v, &s)
			}
		}
	})
}
