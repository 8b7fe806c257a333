package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

var update = flag.Bool("update", false, "rewrite golden files")

func ptr[T any](v T) *T { return &v }

func mustKey(t *testing.T, id ModelIdentity, req *sdk.GenerateRequest) string {
	t.Helper()
	k, err := RequestKey(id, req)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRequestKeyDistinguishes(t *testing.T) {
	base := testIdentity()
	baseReq := testRequest(1)
	baseKey := mustKey(t, base, baseReq)
	if len(baseKey) != 64 || strings.Trim(baseKey, "0123456789abcdef") != "" {
		t.Fatalf("key %q is not hex sha256", baseKey)
	}

	tests := []struct {
		name string
		id   func(*ModelIdentity)
		req  func(*sdk.GenerateRequest)
	}{
		{name: "plugin", id: func(id *ModelIdentity) { id.Plugin = "acme" }},
		{name: "plugin version", id: func(id *ModelIdentity) { id.PluginVersion = "0.1.1" }},
		{name: "component", id: func(id *ModelIdentity) { id.Component = "baseline-random" }},
		{name: "endpoint", id: func(id *ModelIdentity) { id.Endpoint = "http://127.0.0.1:8001/v1" }},
		{name: "model", id: func(id *ModelIdentity) { id.Model = "Qwen/Qwen2.5-7B-Instruct" }},
		{name: "identity temperature", id: func(id *ModelIdentity) { id.Params.Temperature = ptr(0.7) }},
		{name: "identity temperature unset", id: func(id *ModelIdentity) { id.Params.Temperature = nil }},
		{name: "identity max tokens", id: func(id *ModelIdentity) { id.Params.MaxTokens = 65 }},
		{name: "identity seed", id: func(id *ModelIdentity) { id.Params.Seed = ptr(int64(1)) }},
		{name: "extra value", id: func(id *ModelIdentity) { id.Extra["chat"] = false }},
		{name: "extra key", id: func(id *ModelIdentity) { id.Extra["logprobs"] = true }},
		{name: "message text", req: func(r *sdk.GenerateRequest) { r.Messages[0].Content += " " }},
		{name: "message role", req: func(r *sdk.GenerateRequest) { r.Messages[0].Role = "system" }},
		{name: "extra message", req: func(r *sdk.GenerateRequest) {
			r.Messages = append(r.Messages, sdk.Message{Role: "assistant", Content: ""})
		}},
		{name: "split message", req: func(r *sdk.GenerateRequest) {
			c := r.Messages[0].Content
			r.Messages = []sdk.Message{{Role: "user", Content: c[:5]}, {Role: "user", Content: c[5:]}}
		}},
		{name: "params temperature", req: func(r *sdk.GenerateRequest) { r.Params.Temperature = ptr(0.0) }},
		{name: "params top p", req: func(r *sdk.GenerateRequest) { r.Params.TopP = ptr(0.9) }},
		{name: "params max tokens", req: func(r *sdk.GenerateRequest) { r.Params.MaxTokens = 33 }},
		{name: "params stop", req: func(r *sdk.GenerateRequest) { r.Params.Stop = []string{"\n"} }},
		{name: "params seed", req: func(r *sdk.GenerateRequest) { r.Params.Seed = ptr(int64(42)) }},
	}
	seen := map[string]string{baseKey: "base"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := testIdentity()
			req := testRequest(1)
			if tt.id != nil {
				tt.id(&id)
			}
			if tt.req != nil {
				tt.req(req)
			}
			k := mustKey(t, id, req)
			if prev, dup := seen[k]; dup {
				t.Errorf("key equals the key of %q", prev)
			}
			seen[k] = tt.name
		})
	}
}

func TestRequestKeyIgnores(t *testing.T) {
	baseKey := mustKey(t, testIdentity(), testRequest(1))
	tests := []struct {
		name string
		id   func(*ModelIdentity)
		req  func(*sdk.GenerateRequest)
	}{
		{name: "instance label", id: func(id *ModelIdentity) { id.Instance = "renamed" }},
		{name: "sample fields", req: func(r *sdk.GenerateRequest) {
			r.Sample = &sdk.Sample{ID: "s9", Context: "long text", Question: "q", Choices: []string{"A", "B"}, Targets: []string{"A"}}
		}},
		{name: "nil vs empty stop", req: func(r *sdk.GenerateRequest) { r.Params.Stop = []string{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, req := testIdentity(), testRequest(1)
			if tt.id != nil {
				tt.id(&id)
			}
			if tt.req != nil {
				tt.req(req)
			}
			if k := mustKey(t, id, req); k != baseKey {
				t.Errorf("key changed: %s != %s", k, baseKey)
			}
		})
	}
}

func TestRequestKeyUsesSample(t *testing.T) {
	id := testIdentity()
	id.Component = "baseline-extractive"
	id.Extra = map[string]any{UsesSample: true}
	sample := func(mod func(*sdk.Sample)) *sdk.GenerateRequest {
		r := testRequest(1)
		r.Sample = &sdk.Sample{ID: "s", Context: "ctx", Question: "q", Choices: []string{"A", "B"}, Targets: []string{"A"}}
		if mod != nil {
			mod(r.Sample)
		}
		return r
	}
	base := mustKey(t, id, sample(nil))
	for name, mod := range map[string]func(*sdk.Sample){
		"context":  func(s *sdk.Sample) { s.Context = "ctx2" },
		"question": func(s *sdk.Sample) { s.Question = "q2" },
		"choices":  func(s *sdk.Sample) { s.Choices = []string{"B", "A"} },
	} {
		if mustKey(t, id, sample(mod)) == base {
			t.Errorf("changing the sample's %s left the key unchanged", name)
		}
	}
	// Targets and ID are the answer key, not the input: they never split the cache.
	if mustKey(t, id, sample(func(s *sdk.Sample) { s.ID, s.Targets = "other", []string{"B"} })) != base {
		t.Error("the sample's ID or targets changed the key")
	}
}

// Extra is a map: its iteration order is random, the key must not be.
func TestRequestKeyStableAcrossMapOrder(t *testing.T) {
	names := make([]string, 40)
	for i := range names {
		names[i] = fmt.Sprintf("opt%02d", i)
	}
	build := func(reverse bool) ModelIdentity {
		id := testIdentity()
		id.Extra = map[string]any{}
		for i := range names {
			j := i
			if reverse {
				j = len(names) - 1 - i
			}
			id.Extra[names[j]] = map[string]any{"b": j, "a": []any{"x", j}, "c": map[string]any{"z": 1, "y": 2}}
		}
		return id
	}
	want := mustKey(t, build(false), testRequest(3))
	for i := range 50 {
		if got := mustKey(t, build(i%2 == 1), testRequest(3)); got != want {
			t.Fatalf("key changed between encodings: %s != %s", got, want)
		}
	}
}

func TestWithoutCredentials(t *testing.T) {
	opts := map[string]any{
		"base_url": "http://127.0.0.1:8000/v1", "model": "m", "api_key": "sk-1", "max_tokens": 5.0,
		"headers": map[string]any{"Authorization": "Bearer x", "X-Trace": "on"},
	}
	got := WithoutCredentials(opts)
	id := ModelIdentity{Extra: got}
	if err := id.Validate(); err != nil {
		t.Fatalf("stripped options still rejected: %v", err)
	}
	if got["base_url"] != opts["base_url"] || got["max_tokens"] != 5.0 || got["headers"].(map[string]any)["X-Trace"] != "on" {
		t.Errorf("WithoutCredentials dropped settings: %v", got)
	}
	if _, ok := got["api_key"]; ok {
		t.Error("api_key kept")
	}
	if _, ok := opts["api_key"]; !ok || len(opts["headers"].(map[string]any)) != 2 {
		t.Error("WithoutCredentials changed its argument")
	}
}

func TestRequestKeyUnencodableExtra(t *testing.T) {
	id := testIdentity()
	id.Extra = map[string]any{"f": func() {}}
	if _, err := RequestKey(id, testRequest(1)); err == nil {
		t.Error("RequestKey of a function value succeeded")
	}
}

// A changed encoding silently discards every user's cache; this golden key
// makes that a deliberate act (bump keyVersion, run with -update).
func TestRequestKeyGolden(t *testing.T) {
	req := testRequest(7)
	req.Messages = append([]sdk.Message{{Role: "system", Content: "Answer briefly. 简短回答。"}}, req.Messages...)
	req.Params.Stop = []string{"\n\n", "</s>"}
	req.Params.Seed = ptr(int64(1234))
	got := mustKey(t, testIdentity(), req) + "\n"
	path := filepath.Join("testdata", "requestkey.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("request key encoding changed: got %s want %s", got, want)
	}
}

// The Keyer hashes the identity's encoding built once and the request's
// appended to it; the bytes must be exactly keyDoc's encoding, or keys
// would silently stop matching journals written before.
func TestKeyerMatchesDoc(t *testing.T) {
	withSample := testIdentity()
	withSample.Extra = map[string]any{UsesSample: true, "b": []any{1.5, "<&>"}, "a": map[string]any{"z": nil}}
	bare := ModelIdentity{Component: "x"}
	for _, tc := range []struct {
		name string
		id   ModelIdentity
		req  *sdk.GenerateRequest
	}{
		{"typical", testIdentity(), testRequest(3)},
		{"nil request", testIdentity(), nil},
		{"no messages", bare, &sdk.GenerateRequest{Params: sdk.GenerationParams{Temperature: ptr(0.5), Stop: []string{"\n"}}}},
		{"html and unicode", bare, &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: "<b>\u2028 café & \"q\"</b>"}}}},
		{"sample read", withSample, &sdk.GenerateRequest{Messages: []sdk.Message{{Content: "m"}}, Sample: &sdk.Sample{Context: "c<", Question: "q", Choices: []string{"A", "B"}}}},
		{"sample not read", testIdentity(), &sdk.GenerateRequest{Sample: &sdk.Sample{Context: "c"}}},
		{"sample read, none sent", withSample, &sdk.GenerateRequest{}},
		// Longer than a Keyed keeps encoded: journaled from the messages.
		{"long context", bare, &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: strings.Repeat("hay <&> ", keepRequestBytes/4)}}}},
		// Hashed in pieces: runes of every width and invalid UTF-8 across
		// the pieces' ends, several messages, parameters after them.
		{"long, pieces cut within runes", bare, &sdk.GenerateRequest{
			Messages: []sdk.Message{
				{Role: "system", Content: "short"},
				{Role: "user", Content: strings.Repeat("a日é🐄\xf0\x9f\x90\xff\u2028\n", keepRequestBytes/5)},
				{Role: "user", Content: "x" + strings.Repeat("\x80", hashChunk+3) + strings.Repeat("é", hashChunk)},
				{Role: "user", Content: "\xe2" + strings.Repeat("\x80", hashChunk+3)},
				{Role: "user", Content: strings.Repeat("a", hashChunk-1) + "\xf0\x9f" + strings.Repeat("\x90", 9)},
			},
			Params: sdk.GenerationParams{Stop: []string{"<"}, MaxTokens: 9}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := keyDoc{keyHead: keyHead{V: keyVersion, Plugin: tc.id.Plugin, PluginVersion: tc.id.PluginVersion, Component: tc.id.Component,
				Endpoint: tc.id.Endpoint, Model: tc.id.Model, IdentityParams: tc.id.Params, Extra: tc.id.Extra}}
			if tc.req != nil {
				doc.Messages, doc.Params = tc.req.Messages, tc.req.Params
				if uses, _ := tc.id.Extra[UsesSample].(bool); uses && tc.req.Sample != nil {
					doc.Sample = &keySample{Context: tc.req.Sample.Context, Question: tc.req.Sample.Question, Choices: tc.req.Sample.Choices}
				}
			}
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			if got, want := mustKey(t, tc.id, tc.req), hex.EncodeToString(sum[:]); got != want {
				t.Errorf("key %s, want %s (the hash of %s)", got, want, b)
			}
			// The journal's form of the request comes from the same bytes.
			journaled := journalForm(doc.Messages, doc.Params)
			r := mustKeyed(t, mustKeyer(t, tc.id), tc.req)
			if got, err := r.journalForm(); err != nil || got != string(journaled) {
				t.Errorf("journaled request %s (%v), want %s", got, err, journaled)
			}
			if long := len(journaled) > keepRequestBytes; long != (r.request == nil) {
				t.Errorf("%d bytes of request, kept encoded: %v", len(journaled), r.request != nil)
			}
		})
	}
}
