package store

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hayloft/hayloft/sdk"
)

// identityCache remembers the identities PutResponse has checked (Validate)
// and encoded as JSON. A run has a handful of identities and journals
// thousands of responses a second under them; checking and encoding each
// time cost more than the rest of PutResponse's own work.
//
// An entry keeps a deep copy of its identity, compared in full with every
// identity looked up: a caller that changes an identity, or a map in its
// Extra, in place gets it checked and encoded afresh, never a stale encoding
// that might hide a credential added since. Extra values other than the
// types encoding/json decodes into (and int, int64) are not copied, so an
// identity holding one is never cached, only checked and encoded each time.
type identityCache struct {
	entries atomic.Pointer[[]identityEntry] // copied on write; lookups take no lock
	mu      sync.Mutex                      // serialises writers
}

type identityEntry struct {
	id   ModelIdentity
	json string
}

// maxIdentities bounds the cache, against a caller with an endless stream of
// identities.
const maxIdentities = 32

// encode returns id's JSON once id has passed Validate.
func (c *identityCache) encode(id ModelIdentity) (string, error) {
	if p := c.entries.Load(); p != nil {
		for i := range *p {
			if e := &(*p)[i]; sameIdentity(&e.id, &id) {
				return e.json, nil
			}
		}
	}
	if err := id.Validate(); err != nil {
		return "", err
	}
	b, err := json.Marshal(id)
	if err != nil {
		return "", fmt.Errorf("identity: %w", err)
	}
	enc := string(b)
	if cp, ok := cloneIdentity(id); ok {
		c.mu.Lock()
		var old []identityEntry
		if p := c.entries.Load(); p != nil {
			old = *p
		}
		if len(old) < maxIdentities {
			entries := append(slices.Clip(old), identityEntry{cp, enc})
			c.entries.Store(&entries)
		}
		c.mu.Unlock()
	}
	return enc, nil
}

// sameIdentity reports whether a and b encode to the same JSON (and so pass
// or fail Validate alike). It may report false for two that would: that
// costs only a fresh check and encoding.
func sameIdentity(a, b *ModelIdentity) bool {
	return a.Plugin == b.Plugin && a.PluginVersion == b.PluginVersion && a.Component == b.Component &&
		a.Instance == b.Instance && a.Endpoint == b.Endpoint && a.Model == b.Model &&
		sameParams(&a.Params, &b.Params) && sameValue(a.Extra, b.Extra)
}

func sameParams(a, b *sdk.GenerationParams) bool {
	return sameFloat(a.Temperature, b.Temperature) && sameFloat(a.TopP, b.TopP) && a.MaxTokens == b.MaxTokens &&
		slices.Equal(a.Stop, b.Stop) && (a.Seed == nil) == (b.Seed == nil) && (a.Seed == nil || *a.Seed == *b.Seed)
}

// sameFloat compares bits: 0 and -0 encode differently.
func sameFloat(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return math.Float64bits(*a) == math.Float64bits(*b)
}

// sameValue compares two Extra values of the types cloneValue copies; any
// other type is never the same, which only costs a cache miss. A nil map or
// slice encodes as null, an empty one does not.
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case string:
		b, ok := b.(string)
		return ok && a == b
	case float64:
		b, ok := b.(float64)
		return ok && math.Float64bits(a) == math.Float64bits(b)
	case int:
		b, ok := b.(int)
		return ok && a == b
	case int64:
		b, ok := b.(int64)
		return ok && a == b
	case json.Number:
		b, ok := b.(json.Number)
		return ok && a == b
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || (a == nil) != (b == nil) || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			w, ok := b[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		return ok && (a == nil) == (b == nil) && slices.EqualFunc(a, b, sameValue)
	}
	return false
}

// cloneIdentity deep-copies id, unless its Extra holds a value cloneValue
// cannot copy.
func cloneIdentity(id ModelIdentity) (ModelIdentity, bool) {
	extra, ok := cloneValue(id.Extra)
	if !ok {
		return ModelIdentity{}, false
	}
	id.Extra = extra.(map[string]any)
	p := &id.Params
	p.Temperature, p.TopP, p.Seed = clonePtr(p.Temperature), clonePtr(p.TopP), clonePtr(p.Seed)
	p.Stop = slices.Clone(p.Stop)
	return id, true
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// cloneValue deep-copies a value of the types encoding/json decodes into,
// plus int and int64; ok is false for any other type.
func cloneValue(v any) (_ any, ok bool) {
	switch v := v.(type) {
	case nil, bool, string, float64, int, int64, json.Number:
		return v, true
	case map[string]any:
		if v == nil {
			return v, true
		}
		m := make(map[string]any, len(v))
		for k, x := range v {
			if m[k], ok = cloneValue(x); !ok {
				return nil, false
			}
		}
		return m, true
	case []any:
		if v == nil {
			return v, true
		}
		s := make([]any, len(v))
		for i, x := range v {
			if s[i], ok = cloneValue(x); !ok {
				return nil, false
			}
		}
		return s, true
	}
	return nil, false
}
