package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sharedDir is /work/shared seen from this package: <repo>/../shared.
var sharedDir = filepath.Join("..", "..", "..", "shared")

type tiktokenVector struct {
	ID             string `json:"id"`
	Encoding       string `json:"encoding"`
	Text           string `json:"text"`
	AllowedSpecial string `json:"allowed_special"`
	Expected       struct {
		IDs   *[]int `json:"ids"` // absent for count-only cases
		Count int    `json:"count"`
	} `json:"expected"`
}

func loadVectors(t testing.TB) []tiktokenVector {
	t.Helper()
	path := filepath.Join(sharedDir, "testdata", "reference", "tiktoken_vectors.json")
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("reference vectors absent: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var vs []tiktokenVector
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(vs) == 0 {
		t.Fatalf("%s: no vectors", path)
	}
	return vs
}

func TestReferenceVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.ID, func(t *testing.T) {
			e, err := Get(v.Encoding)
			if err != nil {
				t.Fatal(err)
			}
			special := v.AllowedSpecial == "all"
			if !special && !strings.HasPrefix(v.AllowedSpecial, "none") {
				t.Fatalf("unexpected allowed_special %q", v.AllowedSpecial)
			}
			var got []int
			if special {
				got = e.EncodeSpecial(v.Text)
			} else {
				got = e.Encode(v.Text)
				if n := e.Count(v.Text); n != v.Expected.Count {
					t.Errorf("Count = %d, want %d", n, v.Expected.Count)
				}
			}
			if v.Expected.IDs != nil && !slices.Equal(got, *v.Expected.IDs) {
				t.Errorf("ids = %v\nwant  %v", got, *v.Expected.IDs)
			}
			if len(got) != v.Expected.Count {
				t.Errorf("len(ids) = %d, want count %d", len(got), v.Expected.Count)
			}
			if dec := e.Decode(got); dec != v.Text {
				t.Errorf("Decode = %q, want %q", dec, v.Text)
			}
		})
	}
}

func TestGetUnknownListsKnown(t *testing.T) {
	_, err := Get("cl200k")
	if err == nil {
		t.Fatal("Get(cl200k) succeeded")
	}
	for _, name := range []string{"cl100k_base", "o200k_base", "r50k_base"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not list %s", err, name)
		}
	}
}

func TestGetCachesPerName(t *testing.T) {
	a, err := Get("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Get("cl100k_base")
	if a != b {
		t.Error("Get returned two encodings for one name")
	}
	if a.Name() != "cl100k_base" {
		t.Errorf("Name = %q", a.Name())
	}
}

// Invalid UTF-8 is encoded byte for byte, so decoding gives the input back.
func TestInvalidUTF8RoundTrip(t *testing.T) {
	for _, name := range []string{"cl100k_base", "o200k_base", "r50k_base"} {
		e, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"abc\xff\xfe def", "\xe4\xbd", "x\x80\x80\x80y", "你\xe5好 \xf0\x9f\x91"} {
			ids := e.Encode(s)
			if got := e.Decode(ids); got != s {
				t.Errorf("%s: Decode(Encode(%q)) = %q", name, s, got)
			}
			if n := e.Count(s); n != len(ids) {
				t.Errorf("%s %q: Count %d, len(Encode) %d", name, s, n, len(ids))
			}
		}
	}
}
