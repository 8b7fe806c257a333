package plugin

import (
	"encoding/json"
	"fmt"

	"github.com/hayloft/hayloft/sdk"
	pb "github.com/hayloft/hayloft/sdk/plugin/proto/hayloft/plugin/v1"
)

// The converters below copy field by field: they run once per sample per
// stage, so reflection is kept to the two free-form maps (Metadata, Details),
// which travel as JSON bytes.

func messagesToProto(ms []sdk.Message) []*pb.Message {
	if len(ms) == 0 {
		return nil
	}
	out := make([]*pb.Message, len(ms))
	// One backing array instead of len(ms) small allocations.
	buf := make([]pb.Message, len(ms))
	for i, m := range ms {
		buf[i].Role, buf[i].Content = m.Role, m.Content
		out[i] = &buf[i]
	}
	return out
}

func messagesFromProto(ms []*pb.Message) []sdk.Message {
	if len(ms) == 0 {
		return nil
	}
	out := make([]sdk.Message, len(ms))
	for i, m := range ms {
		out[i] = sdk.Message{Role: m.GetRole(), Content: m.GetContent()}
	}
	return out
}

// encodeMap returns nil for an empty map so the common case costs nothing.
func encodeMap(what string, m map[string]any) ([]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	if b, ok := appendJSONMap(make([]byte, 0, 256), m); ok {
		return b, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", what, err)
	}
	return b, nil
}

// decodeMap decodes a JSON object. Numbers come back as float64, as they
// would from any JSON source.
func decodeMap(what string, b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if m, ok := decodeJSONMap(b); ok {
		return m, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode %s: %w", what, err)
	}
	return m, nil
}

// sampleToProto converts a sample to its wire form.
func sampleToProto(s *sdk.Sample) (*pb.Sample, error) {
	if s == nil {
		return nil, nil
	}
	p := &pb.Sample{}
	if err := sampleToProtoInto(p, s); err != nil {
		return nil, err
	}
	return p, nil
}

// sampleToProtoInto is sampleToProto into a message the caller allocated
// (a batch's requests share one array of them).
func sampleToProtoInto(p *pb.Sample, s *sdk.Sample) error {
	var md []byte
	if len(s.Metadata) > 0 {
		var err error
		if md, err = encodeMap("sample "+s.ID+" metadata", s.Metadata); err != nil {
			return err
		}
	}
	p.Id = s.ID
	p.Context = s.Context
	p.Question = s.Question
	p.Messages = messagesToProto(s.Messages)
	p.Choices = s.Choices
	p.Targets = s.Targets
	// A zero length is left out: an absent message reads as zeros, and
	// most samples (every `hayloft score` line) have none, so this saves a
	// message per sample on each side.
	if s.Length != (sdk.Length{}) {
		p.Length = &pb.Length{Tokens: int64(s.Length.Tokens), Tokenizer: s.Length.Tokenizer}
	}
	p.Depth = s.Depth
	p.Language = s.Language
	p.Subtask = s.Subtask
	p.MaxNewTokens = int64(s.MaxNewTokens)
	p.Window = int64(s.Window)
	p.MetadataJson = md
	p.Grid = gridToProto(s.Grid)
	return nil
}

// sampleFromProto converts a wire sample back.
func sampleFromProto(p *pb.Sample) (*sdk.Sample, error) {
	if p == nil {
		return nil, nil
	}
	s := &sdk.Sample{}
	if err := sampleFromProtoInto(s, p); err != nil {
		return nil, err
	}
	return s, nil
}

// sampleFromProtoInto is sampleFromProto into a sample the caller
// allocated (a batch's samples share one array).
func sampleFromProtoInto(s *sdk.Sample, p *pb.Sample) error {
	var md map[string]any
	if b := p.GetMetadataJson(); len(b) > 0 {
		var err error
		if md, err = decodeMap("sample "+p.GetId()+" metadata", b); err != nil {
			return err
		}
	}
	*s = sdk.Sample{
		ID:           p.GetId(),
		Context:      p.GetContext(),
		Question:     p.GetQuestion(),
		Messages:     messagesFromProto(p.GetMessages()),
		Choices:      p.GetChoices(),
		Targets:      p.GetTargets(),
		Length:       sdk.Length{Tokens: int(p.GetLength().GetTokens()), Tokenizer: p.GetLength().GetTokenizer()},
		Depth:        p.GetDepth(),
		Language:     p.GetLanguage(),
		Subtask:      p.GetSubtask(),
		MaxNewTokens: int(p.GetMaxNewTokens()),
		Window:       int(p.GetWindow()),
		Metadata:     md,
		Grid:         gridFromProto(p.GetGrid()),
	}
	return nil
}

func gridToProto(g *sdk.GridPoint) *pb.GridPoint {
	if g == nil {
		return nil
	}
	return &pb.GridPoint{Length: int64(g.Length), Depth: g.Depth}
}

func gridFromProto(g *pb.GridPoint) *sdk.GridPoint {
	if g == nil {
		return nil
	}
	return &sdk.GridPoint{Length: int(g.GetLength()), Depth: g.GetDepth()}
}

func paramsToProto(p sdk.GenerationParams) *pb.GenerationParams {
	return &pb.GenerationParams{
		Temperature: p.Temperature,
		TopP:        p.TopP,
		MaxTokens:   int64(p.MaxTokens),
		Stop:        p.Stop,
		Seed:        p.Seed,
	}
}

func paramsFromProto(p *pb.GenerationParams) sdk.GenerationParams {
	if p == nil {
		return sdk.GenerationParams{}
	}
	return sdk.GenerationParams{
		Temperature: p.Temperature,
		TopP:        p.TopP,
		MaxTokens:   int(p.GetMaxTokens()),
		Stop:        p.GetStop(),
		Seed:        p.Seed,
	}
}

func generateRequestToProto(r *sdk.GenerateRequest) (*pb.GenerateRequest, error) {
	s, err := sampleToProto(r.Sample)
	if err != nil {
		return nil, err
	}
	out := &pb.GenerateRequest{Messages: messagesToProto(r.Messages), Params: paramsToProto(r.Params), Sample: s}
	if r.Slot != nil {
		slot := int64(*r.Slot)
		out.Slot = &slot
	}
	return out, nil
}

func generateRequestFromProto(p *pb.GenerateRequest) (*sdk.GenerateRequest, error) {
	s, err := sampleFromProto(p.GetSample())
	if err != nil {
		return nil, err
	}
	out := &sdk.GenerateRequest{Messages: messagesFromProto(p.GetMessages()), Params: paramsFromProto(p.GetParams()), Sample: s}
	if p.Slot != nil {
		slot := int(p.GetSlot())
		out.Slot = &slot
	}
	return out, nil
}

func generateResponseToProto(r *sdk.GenerateResponse) *pb.GenerateResponse {
	out := &pb.GenerateResponse{
		Text:         r.Text,
		FinishReason: r.FinishReason,
		Usage:        &pb.Usage{PromptTokens: int64(r.Usage.PromptTokens), CompletionTokens: int64(r.Usage.CompletionTokens)},
	}
	if c := r.Usage.CachedTokens; c != nil {
		n := int64(*c)
		out.Usage.CachedTokens = &n
	}
	out.Attempts = attemptsToProto(r.Attempts)
	return out
}

func generateResponseFromProto(p *pb.GenerateResponse) *sdk.GenerateResponse {
	out := &sdk.GenerateResponse{
		Text:         p.GetText(),
		FinishReason: p.GetFinishReason(),
		Usage: sdk.Usage{
			PromptTokens:     int(p.GetUsage().GetPromptTokens()),
			CompletionTokens: int(p.GetUsage().GetCompletionTokens()),
		},
	}
	if u := p.GetUsage(); u != nil && u.CachedTokens != nil {
		n := int(u.GetCachedTokens())
		out.Usage.CachedTokens = &n
	}
	out.Attempts = attemptsFromProto(p.GetAttempts())
	return out
}

func scoreResponseToProto(r *sdk.ScoreResponse) (*pb.ScoreResponse, error) {
	d, err := encodeMap("score details", r.Details)
	if err != nil {
		return nil, err
	}
	return &pb.ScoreResponse{Value: r.Value, Invalid: r.Invalid, DetailsJson: d, Stats: r.Stats}, nil
}

func scoreResponseFromProto(p *pb.ScoreResponse) (*sdk.ScoreResponse, error) {
	d, err := decodeMap("score details", p.GetDetailsJson())
	if err != nil {
		return nil, err
	}
	return &sdk.ScoreResponse{Value: p.GetValue(), Invalid: p.GetInvalid(), Details: d, Stats: p.GetStats()}, nil
}

func aggregateResponseToProto(r *sdk.AggregateResponse) (*pb.AggregateResponse, error) {
	d, err := encodeMap("aggregate details", r.Details)
	if err != nil {
		return nil, err
	}
	return &pb.AggregateResponse{
		Value: r.Value, N: int64(r.N), Invalid: int64(r.Invalid),
		CiLow: r.CILow, CiHigh: r.CIHigh, DetailsJson: d,
	}, nil
}

func aggregateResponseFromProto(p *pb.AggregateResponse) (*sdk.AggregateResponse, error) {
	d, err := decodeMap("aggregate details", p.GetDetailsJson())
	if err != nil {
		return nil, err
	}
	return &sdk.AggregateResponse{
		Value: p.GetValue(), N: int(p.GetN()), Invalid: int(p.GetInvalid()),
		CILow: p.GetCiLow(), CIHigh: p.GetCiHigh(), Details: d,
	}, nil
}

func retrieveResponseToProto(r *sdk.RetrieveResponse) (*pb.RetrieveResponse, error) {
	d, err := encodeMap("retrieve details", r.Details)
	if err != nil {
		return nil, err
	}
	out := &pb.RetrieveResponse{Context: r.Context, DetailsJson: d}
	if len(r.Chunks) > 0 {
		out.Chunks = make([]*pb.Chunk, len(r.Chunks))
		for i, c := range r.Chunks {
			out.Chunks[i] = &pb.Chunk{Id: int64(c.ID), Offset: int64(c.Offset), Score: c.Score}
		}
	}
	return out, nil
}

func retrieveResponseFromProto(p *pb.RetrieveResponse) (*sdk.RetrieveResponse, error) {
	d, err := decodeMap("retrieve details", p.GetDetailsJson())
	if err != nil {
		return nil, err
	}
	out := &sdk.RetrieveResponse{Context: p.GetContext(), Details: d}
	if cs := p.GetChunks(); len(cs) > 0 {
		out.Chunks = make([]sdk.Chunk, len(cs))
		for i, c := range cs {
			out.Chunks[i] = sdk.Chunk{ID: int(c.GetId()), Offset: int(c.GetOffset()), Score: c.GetScore()}
		}
	}
	return out, nil
}

func tokenizeResponseToProto(r *sdk.TokenizeResponse) *pb.TokenizeResponse {
	out := &pb.TokenizeResponse{Tokenizer: r.Tokenizer, Tokens: make([]*pb.TokenIDs, len(r.Tokens))}
	for i, ids := range r.Tokens {
		w := make([]int64, len(ids))
		for j, id := range ids {
			w[j] = int64(id)
		}
		out.Tokens[i] = &pb.TokenIDs{Ids: w}
	}
	return out
}

func tokenizeResponseFromProto(p *pb.TokenizeResponse) *sdk.TokenizeResponse {
	out := &sdk.TokenizeResponse{Tokenizer: p.GetTokenizer(), Tokens: make([][]int, len(p.GetTokens()))}
	for i, t := range p.GetTokens() {
		ids := make([]int, len(t.GetIds()))
		for j, id := range t.GetIds() {
			ids[j] = int(id)
		}
		out.Tokens[i] = ids
	}
	return out
}

func attemptsToProto(as []sdk.Attempt) []*pb.Attempt {
	if len(as) == 0 {
		return nil
	}
	out := make([]*pb.Attempt, len(as))
	for i, a := range as {
		out[i] = &pb.Attempt{Status: int64(a.Status), LatencyMs: a.LatencyMS, Error: a.Error}
	}
	return out
}

func attemptsFromProto(as []*pb.Attempt) []sdk.Attempt {
	if len(as) == 0 {
		return nil
	}
	out := make([]sdk.Attempt, len(as))
	for i, a := range as {
		out[i] = sdk.Attempt{Status: int(a.GetStatus()), LatencyMS: a.GetLatencyMs(), Error: a.GetError()}
	}
	return out
}
