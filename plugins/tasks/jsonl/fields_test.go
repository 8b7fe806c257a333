package jsonl

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The fast path must give what encoding/json gives, record by record and
// value by value, errors included: fields against json.Unmarshal into a map
// of raw values, text and texts against json.Unmarshal into a string and a
// list of strings, wherever they claim a value.
var fieldLines = []string{
	`{"id":"a","context":"The sky is blue.","question":"What colour?","answers":["blue","azure"]}`,
	`  {"id":7,"question":"q","answers":42}` + "\n",
	`{"question":"caf\u00e9 \ud83d\ude00 \n\t\"quoted\"","answers":["x",1,null]}`,
	`{"question":"a","question":"b"}`,
	"{\"question\":\"bad \xff byte\",\"k\xfe\":1}",
	`{"question":"q","meta":{"a":[1,2,{"b":null}]},"flag":true}`,
	`{"question":"q","answers":[]}`,
	`{"question":"q","answers":[[]]}`,
	`null`, `[1,2]`, `"text"`, `{"question":"q"} {}`, `{"question":"q",}`, `{"question":"q`, `{"question":"\x"}`, `{`,
}

func TestFieldsAgreeWithEncodingJSON(t *testing.T) {
	for _, line := range fieldLines {
		agreeFields(t, []byte(line))
	}
}

func FuzzFieldsAgreeWithEncodingJSON(f *testing.F) {
	for _, line := range fieldLines {
		f.Add([]byte(line))
	}
	f.Fuzz(agreeFields)
}

func agreeFields(t *testing.T, line []byte) {
	t.Helper()
	got, gotErr := fields(line)
	var want map[string]json.RawMessage
	wantErr := json.Unmarshal(line, &want)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("fields(%q): error %v, encoding/json %v", line, gotErr, wantErr)
	}
	if len(got) != len(want) || (got == nil) != (want == nil) {
		t.Fatalf("fields(%q) = %q, encoding/json %q", line, got, want)
	}
	for k, v := range want {
		if string(got[k]) != string(v) {
			t.Fatalf("fields(%q)[%q] = %q, encoding/json %q", line, k, got[k], v)
		}
		if s, ok := text(v); ok {
			var w string
			if err := json.Unmarshal(v, &w); err != nil || s != w {
				t.Fatalf("text(%q) = %q, encoding/json %q (%v)", v, s, w, err)
			}
		}
		if l, ok := texts(v); ok {
			var w []string
			if err := json.Unmarshal(v, &w); err != nil || !reflect.DeepEqual(l, w) {
				t.Fatalf("texts(%q) = %q, encoding/json %q (%v)", v, l, w, err)
			}
		}
	}
}
