package store

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// An identity changed in place after it was cached, down to a map or slice
// in its Extra, is checked and encoded afresh.
func TestIdentityCache(t *testing.T) {
	base := func() ModelIdentity {
		id := testIdentity()
		id.Params.Stop = []string{"</s>"}
		id.Extra = map[string]any{
			"chat":    true,
			"timeout": 30.0,
			"headers": map[string]any{"x-trace": "1"},
			"stop":    []any{"</s>", 2.0},
			"opts":    map[string]any{},
		}
		return id
	}
	tests := []struct {
		name   string
		modify func(*ModelIdentity)
		cached int // identities cached in the end: 2 if the changed one is cached too
	}{
		{"unchanged", func(*ModelIdentity) {}, 1},
		{"credential added to extra", func(id *ModelIdentity) { id.Extra["api_key"] = "sk-123" }, 1},
		{"credential added to a nested map", func(id *ModelIdentity) {
			id.Extra["headers"].(map[string]any)["Authorization"] = "Bearer x"
		}, 1},
		{"nested map value", func(id *ModelIdentity) { id.Extra["headers"].(map[string]any)["x-trace"] = "2" }, 2},
		{"list element", func(id *ModelIdentity) { id.Extra["stop"].([]any)[1] = 3.0 }, 2},
		{"list element type", func(id *ModelIdentity) { id.Extra["stop"].([]any)[1] = "2" }, 2},
		{"empty map to nil", func(id *ModelIdentity) { id.Extra["opts"] = map[string]any(nil) }, 2},
		{"extra to nil", func(id *ModelIdentity) { id.Extra = nil }, 2},
		{"temperature behind the pointer", func(id *ModelIdentity) { *id.Params.Temperature = 0.7 }, 2},
		{"temperature to -0", func(id *ModelIdentity) { *id.Params.Temperature = math.Copysign(0, -1) }, 2},
		{"stop sequence", func(id *ModelIdentity) { id.Params.Stop[0] = "<|eot|>" }, 2},
		{"seed", func(id *ModelIdentity) { id.Params.Seed = new(int64) }, 2},
		{"instance", func(id *ModelIdentity) { id.Instance = "other" }, 2},
		{"user info in endpoint", func(id *ModelIdentity) { id.Endpoint = "https://user:pw@api.example.com/v1" }, 1},
		{"value of a type not copied", func(id *ModelIdentity) { id.Extra["stop_tokens"] = []string{"</s>"} }, 1},
		{"unencodable value", func(id *ModelIdentity) { id.Extra["timeout"] = math.NaN() }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c identityCache
			id := base()
			if _, err := c.encode(id); err != nil {
				t.Fatal(err)
			}
			tt.modify(&id)
			want, wantErr := uncachedEncode(id)
			for i := range 2 { // miss, then hit (if cached)
				got, err := c.encode(id)
				if got != want || (err == nil) != (wantErr == nil) {
					t.Fatalf("encode %d = %s, %v; want %s, %v", i, got, err, want, wantErr)
				}
			}
			if n := len(*c.entries.Load()); n != tt.cached {
				t.Errorf("%d identities cached, want %d", n, tt.cached)
			}
		})
	}
}

func uncachedEncode(id ModelIdentity) (string, error) {
	if err := id.Validate(); err != nil {
		return "", err
	}
	b, err := json.Marshal(id)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func TestIdentityCacheBound(t *testing.T) {
	var c identityCache
	for i := range maxIdentities + 5 {
		id := testIdentity()
		id.Instance = fmt.Sprint(i)
		want, _ := uncachedEncode(id)
		if got, err := c.encode(id); err != nil || got != want {
			t.Fatalf("identity %d: %s, %v; want %s", i, got, err, want)
		}
	}
	if n := len(*c.entries.Load()); n != maxIdentities {
		t.Errorf("%d identities cached, want %d", n, maxIdentities)
	}
}

func TestIdentityCacheConcurrent(t *testing.T) {
	var c identityCache
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				id := testIdentity()
				id.Instance = fmt.Sprint((g + i) % 5)
				want, _ := uncachedEncode(id)
				if got, err := c.encode(id); err != nil || got != want {
					t.Errorf("%s, %v; want %s", got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// sameIdentity and cloneIdentity name every field; a new field must be added
// to both, or the cache would serve an encoding without it.
func TestIdentityCacheKnowsEveryField(t *testing.T) {
	for _, tt := range []struct {
		typ    reflect.Type
		fields int
	}{
		{reflect.TypeFor[ModelIdentity](), 8},
		{reflect.TypeFor[sdk.GenerationParams](), 5},
	} {
		if n := tt.typ.NumField(); n != tt.fields {
			t.Errorf("%s has %d fields, sameIdentity and cloneIdentity know %d: update them and this test", tt.typ, n, tt.fields)
		}
	}
}
