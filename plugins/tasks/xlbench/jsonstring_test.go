package xlbench

import (
	"encoding/json"
	"testing"
)

// decodeString must agree with encoding/json on every input: the same
// text for a valid literal (escapes, surrogate pairs, lone surrogates,
// bytes that are not UTF-8), an error for an invalid one.
func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{
		`""`, `"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`,
		`"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ude00\ud83d"`, `"\ud83d\ud83d\ude00"`,
		"\"caf\xc3\xa9 \xff \xed\xa0\x80 \xe4\xb8\"", `"\x"`, `"\u12"`, `"\u12g4"`, `"\'"`,
		"\"tab\there\"", `"a"b"`, `"end\"`, `"\uDBFF\uDFFF"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
			t.Skip("cutContext hands over a literal from quote to quote")
		}
		var want string
		jerr := json.Unmarshal(raw, &want)
		got, err := decodeString(raw)
		if (err != nil) != (jerr != nil) {
			t.Fatalf("decodeString(%q): err %v, encoding/json: %v", raw, err, jerr)
		}
		if err == nil && got != want {
			t.Fatalf("decodeString(%q) = %q, encoding/json %q", raw, got, want)
		}
	})
}

// The decoded document is allocated once, at its length, escapes and all.
func TestDecodeStringAllocatesOnce(t *testing.T) {
	raw := []byte(`"line one\n\nline \"two\" é \u2028 \ud83d\ude00 \ud800 x` + "\xff" + `"`)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := decodeString(raw); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Fatalf("%v allocations per decode, want 1", allocs)
	}
}
