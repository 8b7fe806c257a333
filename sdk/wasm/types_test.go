package wasm

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestInputDecodeOptions(t *testing.T) {
	type opts struct {
		N int `json:"n"`
	}
	cases := []struct {
		raw     string
		want    int
		wantErr string
	}{
		{raw: ``, want: 7},
		{raw: `null`, want: 7},
		{raw: `{"n":3}`, want: 3},
		{raw: `{"m":3}`, wantErr: `unknown field "m"`},
		{raw: `{"n":"3"}`, wantErr: "cannot unmarshal"},
	}
	for _, tc := range cases {
		in := Input{Options: json.RawMessage(tc.raw)}
		o := opts{N: 7}
		err := in.DecodeOptions(&o)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.raw, err, tc.wantErr)
			}
			continue
		}
		if err != nil || o.N != tc.want {
			t.Errorf("%q: got %d, %v; want %d", tc.raw, o.N, err, tc.want)
		}
	}
}

// The wire format is the ABI: field names are part of version 1.
func TestWireNames(t *testing.T) {
	b, err := json.Marshal(Output{Value: 0.5, Invalid: true, Stats: []float64{1}, Error: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"value":0.5,"invalid":true,"stats":[1],"error":"e"}`; got != want {
		t.Errorf("output %s, want %s", got, want)
	}
	var in Input
	raw := `{"sample":{"id":"s1","targets":["a"]},"prediction":"p","references":["a"],"options":{"k":1}}`
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		t.Fatal(err)
	}
	if in.Sample.ID != "s1" || in.Prediction != "p" || in.References[0] != "a" || string(in.Options) != `{"k":1}` {
		t.Errorf("decoded %+v", in)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	t.Cleanup(func() { scoreFunc = nil })
	f := func(Input) (Output, error) { return Output{}, nil }
	Register(f)
	if Registered() == nil {
		t.Fatal("not registered")
	}
	defer func() {
		if recover() == nil {
			t.Error("a second Register did not panic")
		}
	}()
	Register(f)
}
