package config

import (
	"encoding/json"
	"testing"
)

func TestOptionsEncoding(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string // the attributes of a task block
		want string
	}{
		{"empty", ``, `{}`},
		{"integers stay integers", `n = 3
neg = -7
exp = 1e3`, `{"exp":1000,"n":3,"neg":-7}`},
		{"beyond float64 precision", `n = 9007199254740993`, `{"n":9007199254740993}`},
		{"beyond int64", `n = 100000000000000000000000`, `{"n":100000000000000000000000}`},
		{"fractions", `a = 0.1
b = 1/3
c = 2.5e-7`, `{"a":0.1,"b":0.3333333333333333,"c":2.5e-7}`},
		{"strings are not HTML-escaped", `s = "<a & b>"`, `{"s":"<a & b>"}`},
		{"bools", `t = true
f = false`, `{"f":false,"t":true}`},
		{"tuples and lists", `t = [1, "a", true]
l = tolist(["x", "y"])
r = range(0, 10, 4)`, `{"l":["x","y"],"r":[0,4,8],"t":[1,"a",true]}`},
		{"sets", `s = toset(["b", "a", "b"])`, `{"s":["a","b"]}`},
		{"objects and maps, nested", `o = { b = 1, a = { c = [1.5] } }
m = tomap({ x = "1", y = "2" })`, `{"m":{"x":"1","y":"2"},"o":{"a":{"c":[1.5]},"b":1}}`},
		{"null attribute is left unset", `x = null
y = 1`, `{"y":1}`},
		{"null inside a collection is kept", `x = [null, 1]`, `{"x":[null,1]}`},
		{"functions", `s = join("-", [upper("a"), lower("B")])
n = max(3, 9, 2)
j = jsondecode("{\"k\": [1, 2]}")
f = floor(2.7)`, `{"f":2,"j":{"k":[1,2]},"n":9,"s":"A-b"}`},
		{"unicode", `s = "红楼梦"`, `{"s":"红楼梦"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("x.hcl", []byte("task \"t\" \"a\" {\n"+tc.body+"\n}\n"), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := string(cfg.Components[0].Options)
			if got != tc.want {
				t.Errorf("options = %s\nwant      %s", got, tc.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("options are not valid JSON: %s", got)
			}
		})
	}
}

func TestAttrRanges(t *testing.T) {
	src := "task \"t\" \"a\" {\n  alpha = 1\n\n    beta = { x = 2 }\n}\n"
	cfg, err := Parse("x.hcl", []byte(src), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Components[0]
	for name, want := range map[string]string{"alpha": "x.hcl:2:3", "beta": "x.hcl:4:5"} {
		r, ok := c.AttrRanges[name]
		if !ok {
			t.Errorf("no range for %s", name)
			continue
		}
		if got := posString(r); got != want {
			t.Errorf("%s at %s, want %s", name, got, want)
		}
	}
}
