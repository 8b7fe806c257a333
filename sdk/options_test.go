package sdk

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestOptionsDecode(t *testing.T) {
	type Inner struct {
		TopK int `json:"top_k"`
	}
	type opts struct {
		Inner
		Name  string `json:"name"`
		Retry struct {
			Max int `json:"max"`
		} `json:"retry"`
	}
	cases := []struct {
		in, field string
	}{
		{`{"name":"x","top_k":3}`, ""},
		{``, ""},
		{`{"nmae":"x"}`, "nmae"},
		{`{"topk":3}`, "topk"},
		{`{"top_k":"five"}`, "top_k"},
		{`{"retry":{"max":"x"}}`, "retry.max"},
		{`{"name":1}`, "name"},
	}
	for _, c := range cases {
		var o opts
		err := Options(c.in).Decode(&o)
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: %v", c.in, err)
			}
			continue
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%s: err = %v, want a ConfigError on %q", c.in, err, c.field)
		}
	}
}

func TestRenderSlotsOnlyInTemplate(t *testing.T) {
	s := &Sample{Context: "a {{question}} b", Question: "Q"}
	got := s.Render()
	if len(got) != 1 || got[0].Content != "a {{question}} b\n\nQ" {
		t.Fatalf("Render = %+v", got)
	}
	s.Messages = []Message{{Role: "system", Content: "S {{x}} {{"}, {Role: "user", Content: ContextSlot}, {Role: "user", Content: "{" + QuestionSlot + "}?" + QuestionSlot}}
	got = s.Render()
	if got[1].Content != s.Context || got[2].Content != "{Q}?Q" || got[0].Content != "S {{x}} {{" {
		t.Fatalf("Render = %+v", got)
	}
}

func TestUnknownOptionSuggestsTheNearest(t *testing.T) {
	var o struct {
		Haystack string `json:"haystack"`
		Lengths  []int  `json:"lengths"`
	}
	err := Options(`{"lenghts":[1]}`).Decode(&o)
	if err == nil || err.Error() != `lenghts: unknown option; did you mean "lengths"?` {
		t.Fatalf("err = %v", err)
	}
}

func TestPositiveDuration(t *testing.T) {
	for _, tc := range []struct {
		value, def string
		want       time.Duration
		wantErr    string
	}{
		{"", "10s", 10 * time.Second, ""},
		{"250ms", "10s", 250 * time.Millisecond, ""},
		{"0s", "10s", 0, `timeout: want a positive duration such as "10s", got "0s"`},
		{"-1s", "10s", 0, `got "-1s"`},
		{"soon", "10s", 0, `got "soon"`},
	} {
		got, err := PositiveDuration("timeout", tc.value, tc.def)
		var ce *ConfigError
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %v, %v; want %v", tc.value, got, err, tc.want)
		case tc.wantErr != "" && (!errors.As(err, &ce) || ce.Field != "timeout" || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want a ConfigError on timeout containing %q", tc.value, err, tc.wantErr)
		}
	}
}

func TestNeedTargets(t *testing.T) {
	for _, tc := range []struct {
		req  *ScoreRequest
		want string
	}{
		{nil, "s: request has no sample"},
		{&ScoreRequest{}, "s: request has no sample"},
		{&ScoreRequest{Sample: &Sample{ID: "x"}}, `s: sample "x" has no targets`},
		{&ScoreRequest{Sample: &Sample{ID: "x", Targets: []string{"a"}}}, ""},
	} {
		err := tc.req.NeedTargets("s")
		if got := fmt.Sprint(err); (err == nil) != (tc.want == "") || err != nil && got != tc.want {
			t.Errorf("%+v: %v, want %q", tc.req, err, tc.want)
		}
	}
}
