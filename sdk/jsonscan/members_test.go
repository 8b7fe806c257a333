package jsonscan

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// membersCases add whitespace in every place JSON allows it, and strings
// holding what looks like structure, to the seeds.
var membersCases = []string{
	"{\"a\":\n[1,\r\n2]\t}", `{"a":[ "x\\\" y" , "z\\\\" , "\\\\\"" ,"]" ]}`, `{"a":{"k \" ]":[ "v" ]}}`,
	`{"<k>&":"v"}`, `{"k\u0041":1}`, `{"a":[ "x" , [1, "]"] , {"b":"}"} , -1.5e3 , true ,null,"\\"]}`, "{\"a\":\"\xff\xfe\"}", `{"a" : { "b" : [ ] } , "c":"d e"}`,
}

// Members agrees with Object and encoding/json: same verdict, members in
// order with RawKey decoding to Key, Compact exactly when json.Compact
// leaves the value alone, and AppendCompact writing what json.Compact
// writes.
func TestMembersAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range append(append([]string{}, seeds...), membersCases...) {
		checkMembers(t, []byte(s))
	}
}

func FuzzMembers(f *testing.F) {
	for _, s := range append(append([]string{}, seeds...), membersCases...) {
		f.Add([]byte(s))
	}
	f.Fuzz(checkMembers)
}

func checkMembers(t *testing.T, b []byte) {
	t.Helper()
	var keys, values [][]byte
	objErr := Object(b, func(k, v []byte) error {
		keys, values = append(keys, bytes.Clone(k)), append(values, bytes.Clone(v))
		return nil
	})
	n := 0
	err := Members(b, func(m Member) error {
		if n >= len(keys) || !bytes.Equal(m.Key, keys[n]) || !bytes.Equal(m.Value, values[n]) {
			t.Fatalf("Members(%q): member %d is %q: %q, Object's is different", b, n, m.Key, m.Value)
		}
		n++
		var key string
		if err := json.Unmarshal(m.RawKey, &key); err != nil || key != string(m.Key) {
			t.Fatalf("Members(%q): raw key %q decodes to %q (%v), key is %q", b, m.RawKey, key, err, m.Key)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, m.Value); err != nil {
			t.Fatalf("Members(%q): value %q: %v", b, m.Value, err)
		}
		if m.Compact != bytes.Equal(want.Bytes(), m.Value) {
			t.Fatalf("Members(%q): %q compact = %v, json.Compact gives %q", b, m.Value, m.Compact, want.Bytes())
		}
		if got := AppendCompact([]byte("x"), m.Value); !bytes.Equal(got[1:], want.Bytes()) || got[0] != 'x' {
			t.Fatalf("AppendCompact(%q) = %q, json.Compact gives %q", m.Value, got[1:], want.Bytes())
		}
		if KindOf(m.Value) == KindArray {
			// Elements walks the validated array as Array does.
			var want, got [][]byte
			Array(m.Value, func(v []byte) error { want = append(want, v); return nil })
			Elements(m.Value, func(v []byte) error { got = append(got, v); return nil })
			if len(got) != len(want) {
				t.Fatalf("Elements(%q) = %q, Array gives %q", m.Value, got, want)
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("Elements(%q) = %q, Array gives %q", m.Value, got, want)
				}
			}
		}
		return nil
	})
	if (err == nil) != (objErr == nil) || err == nil && n != len(keys) {
		t.Fatalf("Members(%q) = %v after %d members, Object = %v after %d", b, err, n, objErr, len(keys))
	}
}

// Long strings with the bytes a string scan stops at (quotes, escapes,
// control characters) and bytes past ASCII at every offset within a word:
// the word-at-a-time skip must stop where a byte loop would, and a key is
// plain exactly when it has neither escapes nor bytes past ASCII.
func TestLongStrings(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	special := []string{`\"`, `\\`, `\u00e9`, "\x01", `"`, `\`, "é", "\x7f", "\xff", "!", " "}
	for range 3000 {
		var b strings.Builder
		b.WriteString(`{"`)
		for range rng.IntN(40) {
			if rng.IntN(6) == 0 {
				b.WriteString(special[rng.IntN(len(special))])
			} else {
				b.WriteString(strings.Repeat("x", rng.IntN(20)))
			}
		}
		b.WriteString(`":[1]}`)
		in := []byte(b.String())
		agree(t, in)
		checkMembers(t, in)
		if i := bytes.IndexByte(in[2:], '"'); i >= 0 && bytes.IndexByte(in[2:2+i], '\\') < 0 {
			end, plain, err := str(in, 1)
			if wantPlain := bytes.IndexFunc(in[2:2+i], func(r rune) bool { return r >= 0x80 || r < 0 }) < 0 && err == nil; plain != wantPlain || err == nil && end != 3+i {
				t.Fatalf("str(%q) = %d, plain %v, %v; want end %d, plain %v", in, end, plain, err, 3+i, wantPlain)
			}
		}
	}
}

// Elements ends on any input, valid or not, and never hands out bytes
// outside it.
func FuzzElements(f *testing.F) {
	for _, s := range []string{`[`, `[1,`, `[,1]`, `["a`, `[[1,2]`, `[}`, `[1 2]`, `["\\"]`, `[ ]`, `[1,]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		Elements(b, func(v []byte) error {
			if len(v) > len(b) {
				t.Fatalf("Elements(%q) handed out %q", b, v)
			}
			return nil
		})
	})
}
