package jsonstr

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Decode and Append must agree with encoding/json on every input: the same
// text for a valid literal (escapes, surrogate pairs, lone surrogates,
// bytes that are not UTF-8), an error for an invalid one.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`""`, `"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`,
		`"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ude00\ud83d"`, `"\ud83d\ud83d\ude00"`,
		"\"caf\xc3\xa9 \xff \xed\xa0\x80 \xe4\xb8\"", `"\x"`, `"\u12"`, `"\u12g4"`, `"\'"`,
		"\"tab\there\"", `"a"b"`, `"end\"`, `"\uDBFF\uDFFF"`, `"\ud83d\u12"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
			t.Skip("callers hand over a literal from quote to quote")
		}
		var want string
		jerr := json.Unmarshal(raw, &want)
		got, err := Decode(raw)
		if (err != nil) != (jerr != nil) {
			t.Fatalf("Decode(%q): err %v, encoding/json: %v", raw, err, jerr)
		}
		if err == nil && got != want {
			t.Fatalf("Decode(%q) = %q, encoding/json %q", raw, got, want)
		}
		app, aerr := Append([]byte("prefix:"), raw[1:len(raw)-1])
		if (aerr != nil) != (jerr != nil) {
			t.Fatalf("Append(%q): err %v, encoding/json: %v", raw, aerr, jerr)
		}
		if aerr == nil && !bytes.Equal(app, []byte("prefix:"+want)) {
			t.Fatalf("Append(%q) = %q, want prefix:%q", raw, app, want)
		}
	})
}

func TestDecodeRefusesNonLiteral(t *testing.T) {
	for _, raw := range []string{``, `"`, `abc`, `"abc`, `abc"`} {
		if _, err := Decode([]byte(raw)); err == nil {
			t.Errorf("Decode(%q): no error", raw)
		}
	}
}

// The decoded text is allocated once, at its length, escapes and all.
func TestDecodeAllocatesOnce(t *testing.T) {
	raw := []byte(`"line one\n\nline \"two\" é \u2028 \ud83d\ude00 \ud800 x` + "\xff" + `"`)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := Decode(raw); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Fatalf("%v allocations per decode, want 1", allocs)
	}
}

func TestHex4(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want rune
	}{{"00e9", 0xe9}, {"FFFF", 0xffff}, {"d83D", 0xd83d}, {"12g4", -1}, {"12", -1}, {"12345", 0x1234}} {
		if got := Hex4([]byte(tc.in)); got != tc.want {
			t.Errorf("Hex4(%q) = %#x, want %#x", tc.in, got, tc.want)
		}
	}
}
