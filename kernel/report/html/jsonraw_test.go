package html

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// The hand-written JSON of a request's messages decodes to what decoding
// the request with encoding/json and eliding each message gives, for every
// kind of string body: escapes, surrogate pairs, lone surrogates, markup,
// characters of several bytes, cut anywhere.
func TestRawMessagesMatchDecoded(t *testing.T) {
	long := strings.Repeat("héllo \"wörld\"\n\t<b>&</b> 😀 \u2028 ", 40)
	requests := map[string]string{
		"plain":         mustRequest(t, []sdk.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: long}}, `{"max_tokens":32}`),
		"no params":     `{"messages":[{"role":"user","content":"` + strings.Repeat("ab\\u00e9\\ud83d\\ude00\\n", 50) + `"}]}`,
		"lone surrogat": `{"messages":[{"role":"user","content":"` + strings.Repeat("x\\ud800y\\udc00z", 40) + `"}],"params":null}`,
		"spaces":        `{ "messages" : [ { "content" : "` + strings.Repeat("é", 300) + `" , "role" : "user" , "name" : {"a":[1,"]"]} } ] , "params" : { "t" : [1, 2] } }`,
		"empty":         `{"messages":[],"params":{}}`,
		"null messages": `{"messages":null,"params":{}}`,
		"other case":    `{"Messages":[{"Role":"user","Content":"` + strings.Repeat("q", 300) + `"}]}`,
		"null content":  `{"messages":[{"role":"user","content":null}]}`,
		"escaped key":   `{"messag\u0065s":[{"role":"user","content":"hi"}]}`,
	}
	for name, req := range requests {
		for _, max := range []int{0, 7, 8, 100, 1000} {
			var want struct {
				Messages []sdk.Message  `json:"messages"`
				Params   map[string]any `json:"params"`
			}
			if err := json.Unmarshal([]byte(req), &want); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			wantElided := 0
			for i := range want.Messages {
				if max == 0 { // no cap, as MakeDetail with 0
					break
				}
				var n int
				want.Messages[i].Content, n = elide(want.Messages[i].Content, max)
				wantElided += n
			}
			msgs, params, ok := parseRequest([]byte(req))
			if !ok {
				var err error
				if msgs, params, err = decodeRequest([]byte(req)); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			b := []byte(`{"messages":[`)
			gotElided := 0
			for i, m := range msgs {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(append(append(b, `{"role":"`...), m.role...), `","content":"`...)
				var n int
				b, n = appendElided(b, m.content, max)
				gotElided += n
				b = append(b, `"}`...)
			}
			b = append(b, `],"params":`...)
			b = append(b, rawOrNull(params)...)
			b = append(b, '}')
			var got struct {
				Messages []sdk.Message  `json:"messages"`
				Params   map[string]any `json:"params"`
			}
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%s, max %d: %v in %s", name, max, err, b)
			}
			if len(want.Messages) == 0 {
				want.Messages = nil
			}
			if len(got.Messages) == 0 {
				got.Messages = nil
			}
			if !reflect.DeepEqual(got, want) || gotElided != wantElided {
				t.Errorf("%s, max %d:\n got %+v (elided %d)\nwant %+v (elided %d)", name, max, got, gotElided, want, wantElided)
			}
		}
	}
}

func rawOrNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

func mustRequest(t *testing.T, msgs []sdk.Message, params string) string {
	t.Helper()
	m, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return `{"messages":` + string(m) + `,"params":` + params + `}`
}

// appendString writes what encoding/json writes, byte for byte.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s\n\r\t\x00\x1f", "<script>&amp;</script>", "é😀\u2028\u2029", "bad \xff\xfe utf-8", "\u007f"} {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
	for _, f := range []float64{0, 1, -0.5, 0.1, 1e-7, 1e21, 123456789, 2.5e-5} {
		var want, got any
		b, _ := json.Marshal(f)
		json.Unmarshal(b, &want)
		if err := json.Unmarshal(appendFloat(nil, f), &got); err != nil || got != want {
			t.Errorf("%v: %s, want %s", f, appendFloat(nil, f), b)
		}
	}
}

// Cut anywhere in bodies of every kind of piece (escapes, surrogate
// pairs, lone surrogates, characters of several bytes), the escaped body
// keeps what elide keeps of the decoded string and says as much left out.
func TestAppendElidedMatchesElide(t *testing.T) {
	pieces := []string{"a", "word ", "é", "😀", `\n`, `\"`, `\\`, `\u003c`, `\u2028`, `\u00e9`, `\ud83d\ude00`, `\ud800`, `\udc00`, `\\u0041`}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var sb strings.Builder
		for range rng.IntN(300) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		body := sb.String()
		var s string
		if err := json.Unmarshal([]byte(`"`+body+`"`), &s); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		for _, max := range []int{2, 7, 64, 200} {
			want, wantLeft := elide(s, max)
			got, left := appendElided(nil, []byte(body), max)
			var dec string
			if err := json.Unmarshal(append(append([]byte{'"'}, got...), '"'), &dec); err != nil {
				t.Fatalf("%s cut to %d: %v in %s", body, max, err, got)
			}
			if dec != want || left != wantLeft {
				t.Fatalf("%s cut to %d:\n got %q (%d left out)\nwant %q (%d)", body, max, dec, left, want, wantLeft)
			}
		}
	}
}
