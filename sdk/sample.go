package sdk

import (
	"slices"
	"strings"
)

// Placeholders a task may put in its message templates. The kernel substitutes
// them once, after retrieval and truncation have acted on the context, so the
// instruction and question are never cut and the context can be swapped.
const (
	ContextSlot  = "{{context}}"
	QuestionSlot = "{{question}}"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// Length is a size in tokens together with the tokenizer that measured it:
// a length without its tokenizer cannot be compared across models.
type Length struct {
	Tokens    int    `json:"tokens"`
	Tokenizer string `json:"tokenizer,omitempty"` // e.g. "cl100k_base", "model:<name>"
}

// GridPoint is a sample's place in its benchmark's grid, as asked for.
type GridPoint struct {
	// Length is the context length asked for, in the task's unit (tokens
	// for NIAH, the nominal size for Counting-Stars); 0 when the grid has
	// no length axis.
	Length int `json:"length,omitempty"`
	// Depth is the evidence depth asked for, 0..1; negative when the grid
	// has no depth axis.
	Depth float64 `json:"depth"`
}

// Sample is one evaluation item. Long-context needs are real fields, not
// strings in Metadata: the context is kept apart from the question so that
// retrievers and truncation act on it alone, and Length and Depth survive into
// the journal so reports bucket by them without parsing names.
type Sample struct {
	ID string `json:"id"`
	// Context is the long document. May be empty for tasks without one.
	Context string `json:"context,omitempty"`
	// Question is the query about the context; retrievers use it as the query.
	Question string `json:"question,omitempty"`
	// Messages is the prompt template. Content may hold ContextSlot and
	// QuestionSlot. Empty means DefaultMessages.
	Messages []Message `json:"messages,omitempty"`
	// Choices are the options of a multiple-choice item, in order.
	Choices []string `json:"choices,omitempty"`
	// Targets are the acceptable answers (or the reference texts).
	Targets []string `json:"targets,omitempty"`
	// Length is the size of the rendered context as the task measured it.
	Length Length `json:"length"`
	// Depth is the relative position (0..1) of the evidence in the context;
	// negative when it does not apply.
	Depth    float64 `json:"depth"`
	Language string  `json:"language,omitempty"`
	Subtask  string  `json:"subtask,omitempty"`
	// Grid is the point of the benchmark's grid the task made this sample
	// for: the values asked for, not the values reached (a needle asked at
	// 50 % lands where a sentence ends, a haystack asked at 8K tokens ends
	// a few tokens short). Reports bucket a length × depth grid by it; nil
	// buckets by the measured Length and Depth.
	Grid *GridPoint `json:"grid,omitempty"`
	// MaxNewTokens is the generation budget the benchmark prescribes; 0 leaves
	// it to the model's configuration.
	MaxNewTokens int `json:"max_new_tokens,omitempty"`
	// Window, when positive, is a context window in tokens this sample is
	// fitted to in place of the model's when it is smaller: the kernel cuts
	// the context with the model's truncation strategy as it would for a
	// model of that window. A truncation study (Ada-LEval's Table 10) sends
	// the same case at several windows this way; 0 leaves the model's.
	Window int `json:"window,omitempty"`
	// Metadata holds anything else; values must be JSON-encodable. Scorers
	// receive it, so benchmark-specific references (e.g. star counts) go here.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// DefaultMessages is the template used when a sample has no Messages: one user
// message with the context, a blank line, then the question.
func DefaultMessages() []Message {
	return []Message{{Role: "user", Content: ContextSlot + "\n\n" + QuestionSlot}}
}

// Render fills the sample's template with its context and question. Slots are
// replaced in the template only: a context that happens to contain the text
// "{{question}}" is left as it is.
//
// Each call allocates every message afresh, a long context included. A
// consumer that renders many long prompts one after another and does not
// keep them (a request encoder writing into one body buffer, a benchmark)
// can use Template and AppendContent to reuse one buffer instead.
func (s *Sample) Render() []Message {
	tmpl := s.Template()
	out := make([]Message, len(tmpl))
	for i, m := range tmpl {
		out[i] = Message{Role: m.Role, Content: fill(m.Content, s.Context, s.Question)}
	}
	return out
}

// Template is the sample's message template: Messages, or DefaultMessages
// when it has none.
func (s *Sample) Template() []Message {
	if len(s.Messages) == 0 {
		return DefaultMessages()
	}
	return s.Messages
}

// AppendContent appends content, a message of the sample's Template, with
// its slots filled to dst and returns the extended buffer: the bytes of
// Render's Content for that message, written where the caller wants them.
// Rendering prompt after prompt into dst[:0] then allocates nothing once
// dst has grown to the longest, where Render allocates each prompt anew
// and leaves the garbage collector a whole prompt per sample to collect.
func (s *Sample) AppendContent(dst []byte, content string) []byte {
	if !strings.Contains(content, "{{") {
		return append(dst, content...)
	}
	dst = slices.Grow(dst, len(content)+len(s.Context)+len(s.Question))
	fillEach(content, s.Context, s.Question, func(part string) { dst = append(dst, part...) })
	return dst
}

// fill substitutes the slots in one pass over the template: what is
// substituted is never scanned again. (strings.NewReplacer does the same but
// costs more to build than a whole render of a short prompt.)
func fill(tmpl, context, question string) string {
	switch {
	case !strings.Contains(tmpl, "{{"):
		return tmpl
	case tmpl == ContextSlot:
		// The message is the context: share it rather than copy a long
		// document once more for every request in flight.
		return context
	case tmpl == QuestionSlot:
		return question
	}
	// Room for the slots the template has, not for both whatever it has:
	// the builder's array is the message, so room for a long context in a
	// message that holds only the question would be kept with it.
	size := len(tmpl)
	if strings.Contains(tmpl, ContextSlot) {
		size += len(context)
	}
	if strings.Contains(tmpl, QuestionSlot) {
		size += len(question)
	}
	var b strings.Builder
	b.Grow(size)
	fillEach(tmpl, context, question, func(part string) { b.WriteString(part) })
	return b.String()
}

// fillEach walks tmpl once and hands write its parts in order: literal
// text, and the context or question in place of each slot. Render and
// AppendContent share it, so both fill byte for byte alike.
func fillEach(tmpl, context, question string, write func(string)) {
	for {
		i := strings.Index(tmpl, "{{")
		if i < 0 {
			write(tmpl)
			return
		}
		write(tmpl[:i])
		switch rest := tmpl[i:]; {
		case strings.HasPrefix(rest, ContextSlot):
			write(context)
			tmpl = rest[len(ContextSlot):]
		case strings.HasPrefix(rest, QuestionSlot):
			write(question)
			tmpl = rest[len(QuestionSlot):]
		default:
			write("{")
			tmpl = rest[1:]
		}
	}
}

// Clone returns a copy whose slices and metadata map may be changed freely.
func (s *Sample) Clone() *Sample {
	c := *s
	c.Messages = append([]Message(nil), s.Messages...)
	c.Choices = append([]string(nil), s.Choices...)
	c.Targets = append([]string(nil), s.Targets...)
	if s.Grid != nil {
		g := *s.Grid
		c.Grid = &g
	}
	if s.Metadata != nil {
		c.Metadata = make(map[string]any, len(s.Metadata))
		for k, v := range s.Metadata {
			c.Metadata[k] = v
		}
	}
	return &c
}
