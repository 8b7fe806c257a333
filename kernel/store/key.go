package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/url"
	"strings"
	"unsafe"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/jsonstr"
)

// ModelIdentity names what answers a request: the same messages sent to a
// different model, server, plugin build or decoding setting may get a
// different answer, so each of those is part of the response cache key.
//
// It must hold no secrets: the journal stores it in clear and shares it with
// reports. The runner builds it from the model block's non-secret settings
// (never the API key or auth headers); PutResponse rejects an identity whose
// Endpoint carries user info or a credential-like query parameter, or whose
// Extra has a credential-like key.
type ModelIdentity struct {
	Plugin        string `json:"plugin"`         // plugin name, e.g. "builtin"
	PluginVersion string `json:"plugin_version"` // the plugin's Set.Version
	Component     string `json:"component"`      // component name, e.g. "openai"
	// Instance is the config block's label. It is journaled but not part of
	// the key, so renaming a block keeps its cache: two blocks that differ
	// only by name get the same answers.
	Instance string               `json:"instance"`
	Endpoint string               `json:"endpoint,omitempty"` // base URL, without credentials
	Model    string               `json:"model,omitempty"`    // the server's model name
	Params   sdk.GenerationParams `json:"params"`             // configured defaults
	Extra    map[string]any       `json:"extra,omitempty"`    // other settings that change answers
}

// UsesSample is the Extra key a model sets (to true) when it answers from
// GenerateRequest.Sample rather than from the rendered messages alone, as the
// baselines do. The key then covers the sample's context, question and
// choices too.
const UsesSample = "uses_sample"

// keyVersion is mixed into every key. Bump it when the encoding below
// changes: old cache entries then stop matching instead of matching wrongly.
const keyVersion = 1

// keyDoc is the canonical form hashed by RequestKey. encoding/json writes
// struct fields in declaration order (an embedded struct's in its place) and
// map keys sorted, so the encoding does not depend on map iteration order.
type keyDoc struct {
	keyHead
	Messages []sdk.Message        `json:"messages"`
	Params   sdk.GenerationParams `json:"params"`
	Sample   *keySample           `json:"sample,omitempty"`
}

// keyHead is the identity's part of keyDoc: its encoding, less the closing
// brace, is a prefix of keyDoc's.
type keyHead struct {
	V              int                  `json:"v"`
	Plugin         string               `json:"plugin"`
	PluginVersion  string               `json:"plugin_version"`
	Component      string               `json:"component"`
	Endpoint       string               `json:"endpoint"`
	Model          string               `json:"model"`
	IdentityParams sdk.GenerationParams `json:"identity_params"`
	Extra          map[string]any       `json:"extra"`
}

type keySample struct {
	Context  string   `json:"context"`
	Question string   `json:"question"`
	Choices  []string `json:"choices"`
}

// RequestKey returns the response cache key of req sent to id: the hex
// SHA-256 of a canonical encoding of the identity (less Instance), the
// rendered messages and the request's params.
//
// req.Sample is left out: a model that reads only the messages answers the
// same whatever sample they came from, and the sample's ID, targets and
// metadata must not split the cache. A model that does read the sample
// (a baseline) sets Extra[UsesSample] = true, and then the sample's context,
// question and choices are part of the key. Its Component already keeps its
// keys apart from every other model's.
//
// The error is a value in Extra that JSON cannot encode. Callers keying
// many requests to one identity use a Keyer.
func RequestKey(id ModelIdentity, req *sdk.GenerateRequest) (string, error) {
	k, err := NewKeyer(id)
	if err != nil {
		return "", err
	}
	return k.Key(req)
}

// Keyer computes RequestKey for one identity, whose part of the canonical
// encoding it builds once: at thousands of requests a second, encoding the
// identity (its Extra map by reflection) for each cost more than hashing
// the request. It also holds what PutResponse journals of the identity, so
// the identity is checked for credentials and encoded once per model, not
// once per response. A Keyer works from the identity as it was when made.
type Keyer struct {
	// prefix is keyDoc's encoding up to and including Extra, without the
	// closing brace; Request appends the request's fields in keyDoc's
	// order, so the bytes hashed are exactly json.Marshal(keyDoc)
	// (TestKeyerMatchesDoc).
	prefix     []byte
	usesSample bool
	label      string // component/model, for errors
	identity   string // the identity's JSON, as journaled
	// invalid is why the identity must not be journaled (Validate: it
	// looks as if it carries a credential); PutResponse reports it.
	invalid error
}

// NewKeyer prepares the keys of requests to id. The error is a value in
// Extra that JSON cannot encode.
func NewKeyer(id ModelIdentity) (*Keyer, error) {
	head := keyHead{
		V:              keyVersion,
		Plugin:         id.Plugin,
		PluginVersion:  id.PluginVersion,
		Component:      id.Component,
		Endpoint:       id.Endpoint,
		Model:          id.Model,
		IdentityParams: id.Params,
		Extra:          id.Extra,
	}
	label := id.Component + "/" + id.Model
	b, err := json.Marshal(head)
	if err != nil {
		return nil, fmt.Errorf("request key for model %s: %w", label, err)
	}
	identity, err := json.Marshal(id)
	if err != nil {
		return nil, fmt.Errorf("model %s: identity: %w", label, err)
	}
	uses, _ := id.Extra[UsesSample].(bool)
	return &Keyer{prefix: b[:len(b)-1], usesSample: uses, label: label, identity: string(identity), invalid: id.Validate()}, nil
}

// Keyed is a request keyed for the response cache, with the form the
// journal keeps of it (built from the same encoding as the key).
type Keyed struct {
	Key string
	// request is the journal's form, {"messages":…,"params":…}, kept
	// encoded when short. A long one is dropped once hashed and encoded
	// again when journaled: otherwise every request in flight would hold
	// its long context once more, as JSON, for as long as the model takes
	// to answer. msgs and params are what it is encoded from.
	request []byte
	msgs    []sdk.Message
	params  sdk.GenerationParams
}

// keepRequestBytes is the longest journal form a Keyed holds on to.
const keepRequestBytes = 64 << 10

// journalForm is the request as the journal stores it.
func (r Keyed) journalForm() (string, error) {
	if r.request != nil {
		return string(r.request), nil
	}
	b, err := encodeRequest(r.msgs, r.params)
	if err != nil {
		return "", err
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), nil // b is ours alone
}

// journalValue is the request's journal form as a row value: the kept
// encoding of a short request, or a long one's messages and params, which
// encodeRecord encodes straight into the log record. Encoding it apart first
// would add one more copy of the long context per answer, garbage as soon
// as the record holds it: 64 long answers arriving together made the
// kernel's heap peak some 30 MB higher.
func (r Keyed) journalValue() (any, error) {
	if r.request != nil {
		return string(r.request), nil
	}
	p, err := json.Marshal(r.params)
	if err != nil {
		return nil, err
	}
	return requestJSON{msgs: r.msgs, params: p}, nil
}

// requestJSON is encodeRequest's output, written where encodeRecord asks.
type requestJSON struct {
	msgs   []sdk.Message
	params []byte // encoded
}

func (q requestJSON) encodedLen() int {
	return sdk.MessagesJSONLen(q.msgs) + len(q.params) + len(`{"messages":,"params":}`)
}

func (q requestJSON) appendTo(b []byte) []byte {
	b = sdk.AppendMessagesJSON(append(b, `{"messages":`...), q.msgs)
	return append(append(append(b, `,"params":`...), q.params...), '}')
}

// encodeRequest is {"messages":…,"params":…} in one buffer.
func encodeRequest(msgs []sdk.Message, params sdk.GenerationParams) ([]byte, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	// One buffer of the exact size: a long context's messages are not
	// encoded into a growing buffer and copied twice (sdk.MessagesJSON).
	q := requestJSON{msgs: msgs, params: p}
	return q.appendTo(make([]byte, 0, q.encodedLen())), nil
}

// Key returns the cache key of req.
func (k *Keyer) Key(req *sdk.GenerateRequest) (string, error) {
	r, err := k.Request(req)
	return r.Key, err
}

// Request keys req for the response cache.
func (k *Keyer) Request(req *sdk.GenerateRequest) (Keyed, error) {
	var (
		msgs   []sdk.Message
		params sdk.GenerationParams
		smp    *keySample
	)
	if req != nil {
		msgs, params = req.Messages, req.Params
		if k.usesSample && req.Sample != nil {
			smp = &keySample{Context: req.Sample.Context, Question: req.Sample.Question, Choices: req.Sample.Choices}
		}
	}
	fail := func(err error) (Keyed, error) {
		return Keyed{}, fmt.Errorf("request key for model %s: %w", k.label, err)
	}
	// The key's document is the identity's prefix, then the request's
	// fields as the journal form has them (without its braces), the
	// sample, and the closing brace.
	h := sha256.New()
	h.Write(k.prefix)
	io.WriteString(h, ",")
	var request []byte
	if sdk.MessagesJSONLen(msgs) <= keepRequestBytes {
		var err error
		if request, err = encodeRequest(msgs, params); err != nil {
			return fail(err)
		}
		h.Write(request[1 : len(request)-1])
	} else if err := hashRequest(h, msgs, params); err != nil {
		// A long request is not kept (journalForm encodes it again), so
		// it is hashed in pieces rather than encoded whole for nothing.
		return fail(err)
	}
	if smp != nil {
		b, err := json.Marshal(smp)
		if err != nil {
			return fail(err)
		}
		writeField(h, `,"sample":`, b)
	}
	io.WriteString(h, "}")
	var sum [sha256.Size]byte
	r := Keyed{Key: hex.EncodeToString(h.Sum(sum[:0])), msgs: msgs, params: params}
	if len(request) <= keepRequestBytes {
		r.request = request
	}
	return r, nil
}

// hashChunk is the most of a message's content hashRequest encodes at once.
const hashChunk = 16 << 10

// hashRequest writes to h what encodeRequest gives without its braces,
// encoding a long content a piece at a time into one small buffer.
func hashRequest(h hash.Hash, msgs []sdk.Message, params sdk.GenerationParams) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, 2*hashChunk)
	io.WriteString(h, `"messages":[`)
	for i, m := range msgs {
		if i > 0 {
			io.WriteString(h, ",")
		}
		buf = jsonstr.AppendQuoted(append(buf[:0], `{"role":`...), m.Role)
		h.Write(append(buf, `,"content":"`...))
		for s := m.Content; s != ""; {
			buf, s = jsonstr.AppendQuotedPiece(buf[:0], s, hashChunk)
			h.Write(buf)
		}
		io.WriteString(h, `"}`)
	}
	io.WriteString(h, `],"params":`)
	h.Write(p)
	return nil
}

func writeField(h hash.Hash, name string, value []byte) {
	io.WriteString(h, name)
	h.Write(value)
}

// Validate reports an identity that appears to carry a credential.
func (id ModelIdentity) Validate() error {
	if id.Endpoint != "" {
		u, err := url.Parse(id.Endpoint)
		if err != nil {
			return fmt.Errorf("model identity: endpoint: %w", err)
		}
		if u.User != nil {
			return fmt.Errorf("model identity: endpoint %s carries user info; credentials must not be journaled", u.Redacted())
		}
		for name := range u.Query() {
			if secretName(name) {
				return fmt.Errorf("model identity: endpoint query parameter %q looks like a credential; credentials must not be journaled", name)
			}
		}
	}
	return checkExtra("extra", id.Extra)
}

// WithoutCredentials returns a copy of a component's options without the
// entries whose names look like credentials (at any depth), for building
// ModelIdentity.Extra from a model block's options. Dropping them from the
// key is right as well as safe: a new API key does not change the answers.
func WithoutCredentials(opts map[string]any) map[string]any {
	if opts == nil {
		return nil
	}
	out := make(map[string]any, len(opts))
	for k, v := range opts {
		if secretName(k) {
			continue
		}
		if sub, ok := v.(map[string]any); ok {
			v = WithoutCredentials(sub)
		}
		out[k] = v
	}
	return out
}

func checkExtra(path string, m map[string]any) error {
	for k, v := range m {
		if secretName(k) {
			return fmt.Errorf("model identity: %s.%s looks like a credential; credentials must not be journaled", path, k)
		}
		if sub, ok := v.(map[string]any); ok {
			if err := checkExtra(path+"."+k, sub); err != nil {
				return err
			}
		}
	}
	return nil
}

// nameSeparators deletes the separators secretName ignores. It is built
// once: building a Replacer costs far more than using it, and Validate runs
// it on every key of an identity's Extra.
var nameSeparators = strings.NewReplacer("_", "", "-", "", ".", "", " ", "")

// secretName reports whether a setting's name suggests a credential
// ("api_key", "Authorization", "access-token"), ignoring case and
// separators. "max_tokens" and "tokenizer" are not credentials.
func secretName(name string) bool {
	n := strings.ToLower(nameSeparators.Replace(name))
	switch n {
	case "key", "auth", "authorization", "cookie", "sig", "signature":
		return true
	}
	for _, suffix := range []string{"apikey", "token", "secret", "password", "passwd", "credential", "credentials"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return false
}
