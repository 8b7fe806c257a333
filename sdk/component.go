package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
)

// Kind names one of the four component kinds.
type Kind string

const (
	KindTask      Kind = "task"
	KindModel     Kind = "model"
	KindScorer    Kind = "scorer"
	KindRetriever Kind = "retriever"
)

// Kinds lists every kind in a stable order.
var Kinds = []Kind{KindTask, KindModel, KindScorer, KindRetriever}

// Task produces samples. Samples are streamed: a task must not need the whole
// dataset in memory, and the kernel may stop reading early (on cancellation or
// --limit), so the sequence must stop cleanly when yield returns false.
type Task interface {
	Samples(ctx context.Context, req *SamplesRequest) iter.Seq2[*Sample, error]
}

// SampleCounter is an optional Task interface: how many samples Samples
// would yield for req, known without producing them (a grid's size, a
// file's lines). The kernel uses it only to show progress with a total and
// to label the rows an interrupted run left unfinished ("95 of 330").
type SampleCounter interface {
	CountSamples(ctx context.Context, req *SamplesRequest) (int, error)
}

// SamplesRequest asks a task for its samples.
type SamplesRequest struct {
	// Limit caps the number of samples; 0 means all.
	Limit int `json:"limit,omitempty"`
}

// Model generates a completion for one rendered request. Implementations must
// be safe for concurrent use: the kernel calls Generate from many goroutines,
// bounded by the model's max_concurrency.
type Model interface {
	Generate(ctx context.Context, req *GenerateRequest) (*GenerateResponse, error)
}

// GenerationParams are the decoding parameters of one request. Nil pointers
// mean "the server's default"; they are part of the response cache key.
type GenerationParams struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
}

// GenerateRequest is one fully rendered request.
type GenerateRequest struct {
	// Messages is the rendered chat, the exact text sent.
	Messages []Message        `json:"messages"`
	Params   GenerationParams `json:"params"`
	// Sample is the sample after retrieval and truncation. Its Context is
	// set only for models that implement SampleReader (baselines answering
	// from its structure); for others it is empty, the messages carry it.
	Sample *Sample `json:"sample,omitempty"`
	// Slot, when set, is the server slot the kernel's send order chose
	// for the request (llama-server's id_slot): the slot that holds its
	// shared prefix, where a server reuses a prefix only within one slot.
	// A model that has no slots ignores it. It is advice on where to
	// compute, not part of the request's identity or cache key.
	Slot *int `json:"slot,omitempty"`
}

// Usage counts tokens as the server reported them.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// CachedTokens is the prompt tokens the server found in its prefix
	// cache (OpenAI's usage.prompt_tokens_details.cached_tokens,
	// llama-server's timings.cache_n); nil when the server does not say.
	CachedTokens *int `json:"cached_tokens,omitempty"`
}

// GenerateResponse is the model's answer.
type GenerateResponse struct {
	Text         string `json:"text"`
	FinishReason string `json:"finish_reason,omitempty"`
	Usage        Usage  `json:"usage"`
	// Attempts lists every try the answer took, failed ones first; the kernel
	// journals each so flaky servers can be diagnosed after the fact.
	Attempts []Attempt `json:"attempts,omitempty"`
}

// Attempt is one try at a request.
type Attempt struct {
	Status    int     `json:"status,omitempty"` // HTTP status; 0 when no response arrived
	LatencyMS float64 `json:"latency_ms"`
	Error     string  `json:"error,omitempty"`
}

// Scorer scores one prediction. Safe for concurrent use.
//
// The request, its sample and their strings are the scorer's to keep: a
// cache or a map may hold any of them, or pieces of them, past the call,
// and whatever calls Score (the SDK's plugin server included) never writes
// them again.
type Scorer interface {
	Score(ctx context.Context, req *ScoreRequest) (*ScoreResponse, error)
}

// Borrower is a Scorer that only borrows what it is given: once a call
// returns (Score, or the JSON forms of it that sdk/plugin calls instead
// when a scorer has them), it keeps nothing of the request, its sample or
// their strings, and nothing it keeps points into them (what it returns
// may; the caller copies that before it lets go). Whatever calls it may
// then give the next request the same memory: the SDK's plugin server decodes each
// packed batch into the last one's arrays and cuts the strings from the
// bytes as received, instead of one fresh copy a batch, which costs a page
// fault per 4 KiB. A scorer that caches pieces of its input (rougel's
// stems) must not claim it.
type Borrower interface {
	Scorer
	BorrowsInput()
}

// ScoreRequest carries a prediction and the sample it answers.
type ScoreRequest struct {
	Sample     *Sample `json:"sample"`
	Prediction string  `json:"prediction"`
	// ForAggregate says the caller keeps only the response's Value,
	// Invalid and Stats, to aggregate them (`hayloft score --aggregate`),
	// and never shows its Details: a scorer whose aggregate reads no
	// details (a StatsAggregator, or a scorer aggregated by the mean) may
	// leave them out and save building them, once per sample.
	ForAggregate bool `json:"for_aggregate,omitempty"`
	// ScoreObject says the caller writes the score as one JSON object:
	// the details with "invalid" and "value" among them, keys in
	// json.Marshal's order (`hayloft score`'s per-line output). A plugin
	// whose scorer can write that object itself sends it whole
	// (plugin.ScoreResult.ScoreJSON), so the caller does not merge the
	// two into the details line by line. Scorers may ignore it.
	ScoreObject bool `json:"score_object,omitempty"`
}

// NeedTargets reports a request that a scorer comparing the prediction
// with the sample's targets cannot score: no sample, or a sample without
// targets. scorer names the scorer in the error.
func (r *ScoreRequest) NeedTargets(scorer string) error {
	switch {
	case r == nil || r.Sample == nil:
		return fmt.Errorf("%s: request has no sample", scorer)
	case len(r.Sample.Targets) == 0:
		return fmt.Errorf("%s: sample %q has no targets", scorer, r.Sample.ID)
	}
	return nil
}

// ScoreResponse is one sample's score. Invalid marks a prediction the scorer
// could not interpret (an unparsable rating, say): it is counted apart and
// left out of the mean, never silently scored 0.
type ScoreResponse struct {
	Value   float64        `json:"value"`
	Invalid bool           `json:"invalid,omitempty"`
	Details map[string]any `json:"details,omitempty"`
	// Stats are sufficient statistics for corpus-level aggregation (e.g. BLEU's
	// n-gram matches and lengths). Aggregators read them; others ignore them.
	Stats []float64 `json:"stats,omitempty"`
}

// Aggregator is an optional Scorer interface for metrics whose corpus value is
// not the mean of sample values (corpus BLEU), or whose aggregate says more
// than the mean does (an error metric's LowerIsBetterKey, tables). Without
// it the kernel reports the mean of valid values.
type Aggregator interface {
	Aggregate(ctx context.Context, req *AggregateRequest) (*AggregateResponse, error)
}

// StatsAggregator is an Aggregator whose Aggregate reads only the Value,
// Invalid and Stats of each score, never its Details (corpus BLEU sums
// Stats). A plugin host then hands it scores without decoding their
// details, which for a corpus of many samples is most of the cost of the
// call.
type StatsAggregator interface {
	Aggregator
	AggregateReadsNoDetails()
}

// AggregateRequest holds every sample score of one eval, in sample order.
type AggregateRequest struct {
	Scores []*ScoreResponse `json:"scores"`
}

// AggregateResponse is an eval-level metric.
type AggregateResponse struct {
	Value   float64        `json:"value"`
	N       int            `json:"n"`
	Invalid int            `json:"invalid"`
	CILow   float64        `json:"ci_low"`
	CIHigh  float64        `json:"ci_high"`
	Details map[string]any `json:"details,omitempty"`
}

// NoValueKey is the Details key under which a scorer says why its aggregate
// has no single value: its counts and tables stand, but any one number
// would break its benchmark's rules (XLBench's means are never pooled
// across languages, so a row with two languages has two means and no
// value). Value, CILow and CIHigh are then meaningless: reports show the
// value as missing, JSON writes them as null, and nothing compares them.
const NoValueKey = "no_value"

// LowerIsBetterKey is the Details key (value true) of an aggregate whose
// metric is an error (MAE): comparisons count a lower value as better.
const LowerIsBetterKey = "lower_is_better"

// LowerIsBetter reports whether details mark an error metric
// (LowerIsBetterKey).
func LowerIsBetter(details map[string]any) bool {
	b, _ := details[LowerIsBetterKey].(bool)
	return b
}

// WithoutValue marks details (allocated when nil) as an aggregate with no
// single value, for reason (see NoValueKey).
func WithoutValue(details map[string]any, reason string) map[string]any {
	if details == nil {
		details = map[string]any{}
	}
	details[NoValueKey] = reason
	return details
}

// HasValue reports whether r has a single value to show: not when its
// aggregate failed (N is 0) nor when its scorer declined one (NoValueKey).
func (r *AggregateResponse) HasValue() bool {
	return r != nil && r.N > 0 && !NoValue(r.Details)
}

// NoValue reports whether details carry NoValueKey.
func NoValue(details map[string]any) bool {
	_, ok := details[NoValueKey]
	return ok
}

// NoValueReason is the reason under NoValueKey, never empty when the key
// is there: a scorer that gave none still declined.
func NoValueReason(details map[string]any) string {
	r, ok := details[NoValueKey]
	if !ok {
		return ""
	}
	if s, _ := r.(string); s != "" {
		return s
	}
	if r != nil && r != "" {
		return fmt.Sprint(r)
	}
	return "the scorer gives no single value for this row"
}

// MarshalJSON writes Value, CILow and CIHigh as null when r has no value,
// so that a script reading the JSON cannot take a failed or declined
// aggregate's zero for a score.
func (r AggregateResponse) MarshalJSON() ([]byte, error) {
	type plain AggregateResponse
	if r.HasValue() {
		return json.Marshal(plain(r))
	}
	return json.Marshal(struct {
		Value   *float64       `json:"value"`
		N       int            `json:"n"`
		Invalid int            `json:"invalid"`
		CILow   *float64       `json:"ci_low"`
		CIHigh  *float64       `json:"ci_high"`
		Details map[string]any `json:"details,omitempty"`
	}{N: r.N, Invalid: r.Invalid, Details: r.Details})
}

// Retriever replaces a sample's context with the parts relevant to its
// question (the RAG stage). Safe for concurrent use.
type Retriever interface {
	Retrieve(ctx context.Context, req *RetrieveRequest) (*RetrieveResponse, error)
}

// RetrieveRequest asks for the context to send for one sample.
type RetrieveRequest struct {
	Sample *Sample `json:"sample"`
}

// Chunk identifies one kept piece of the document.
type Chunk struct {
	ID     int     `json:"id"`
	Offset int     `json:"offset"` // byte offset in the original context
	Score  float64 `json:"score"`
}

// RetrieveResponse is the context to send in place of the original.
type RetrieveResponse struct {
	Context string         `json:"context"`
	Chunks  []Chunk        `json:"chunks,omitempty"`
	Details map[string]any `json:"details,omitempty"`
}

// SampleReader is an optional Model and Scorer interface for components
// that need the sample's context.
//
// A model that answers from GenerateRequest.Sample (its Context, Question,
// Choices) rather than from the rendered messages alone, as the baselines
// do, reports true. Other models receive the sample without its context,
// which the messages already carry: a long document then crosses the plugin
// boundary once, not twice.
//
// A scorer that scores against the context (faithfulness to the document,
// say) reports true. Other scorers receive the sample without it: scoring
// reads the targets and the prediction, and a 128K-token context sent to
// every scorer for every sample would cost more than the scoring.
type SampleReader interface {
	ReadsSample() bool
}

// Origin names the plugin that serves a component and the plugin's version.
type Origin struct {
	Plugin  string `json:"plugin"`
	Version string `json:"version"`
}

// Originator is an optional interface of a component as a host opened it
// (kernel/pluginhost's handles implement it): which plugin build answers.
// The kernel records it with each model's responses, so a cached answer is
// never reused across plugin versions that might answer differently.
type Originator interface {
	Origin() Origin
}

// ServedModeler is an optional Model interface: a model that learns which
// model it answers as only when provisioned (an OpenAI-compatible server's
// first listed model, when the config names none). The kernel keys the
// model's journaled answers by it, so that a server restarted with another
// model behind the same address is not answered from the first one's.
// Empty means the model cannot tell.
type ServedModeler interface {
	ServedModel() string
}

// TransportOptioner is an optional Model interface: the names of the
// model's options that change how a request travels (its timeout, its
// retries, the connection) but never the answer. The kernel leaves them
// out of the model's cache identity, so that raising a timeout after a run
// that timed out asks again only for what was not answered.
type TransportOptioner interface {
	TransportOptions() []string
}

// Tokenizer is an optional Model interface: a model that can count its own
// tokens (through a server's /tokenize endpoint, say).
type Tokenizer interface {
	Tokenize(ctx context.Context, req *TokenizeRequest) (*TokenizeResponse, error)
}

// TokenizeRequest asks for the token ids of several texts at once.
type TokenizeRequest struct {
	Texts []string `json:"texts"`
}

// TokenizeResponse has one id list per text, and the tokenizer's name.
type TokenizeResponse struct {
	Tokens    [][]int `json:"tokens"`
	Tokenizer string  `json:"tokenizer"`
}

// Provisioner is an optional interface: Provision runs once after
// construction, before any call, to open files, connect, or start servers
// (Caddy's lifecycle: provision, validate, cleanup via io.Closer).
type Provisioner interface {
	Provision(ctx context.Context) error
}

// Validator is an optional interface: Validate checks a provisioned component
// without side effects. `hayloft validate` calls it.
type Validator interface {
	Validate(ctx context.Context) error
}

// Limited is n capped by a request's limit: what a counting task returns.
func (r *SamplesRequest) Limited(n int) int {
	if r != nil && r.Limit > 0 && r.Limit < n {
		return r.Limit
	}
	return n
}
