// Package wire is the binary encoding of version 2 of the hayloft WASM ABI
// (sdk/wasm/README.md): what the host sends to a module's score export and
// what score returns. Version 1 sent JSON both ways; a Go guest spent most of
// a call in encoding/json's reflection, which runs slowly as WebAssembly, so
// version 2 sends length-prefixed fields that a guest reads with a few
// loads and no reflection.
//
// An input or an output is a sequence of fields, each a one-byte field
// number followed by one value. A value is a one-byte tag and its payload,
// all integers little-endian:
//
//	0 null    1 false    2 true
//	3 number  8 bytes, an IEEE 754 float64, finite
//	4 string  u32 byte length, UTF-8 bytes
//	5 array   u32 count, count values
//	6 object  u32 count, count × (u32 key length, key bytes, value)
//	7 json    u32 byte length, one JSON text (for values the other tags
//	          do not cover; decoded as encoding/json decodes into any)
//
// Decoders skip fields they do not know, so a field can be added without a
// new ABI version, as a JSON member could in version 1.
//
// Both host and guest use this package; the guest's side is wired up by
// sdk/wasm, so a scorer author never calls it.
package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/hayloft/hayloft/sdk"
)

// Value tags.
const (
	TagNull   byte = 0
	TagFalse  byte = 1
	TagTrue   byte = 2
	TagNumber byte = 3
	TagString byte = 4
	TagArray  byte = 5
	TagObject byte = 6
	TagJSON   byte = 7
)

// Fields of a score input. Zero values are left out; Grid is sent when the
// sample has one.
const (
	InID           byte = 1  // string
	InPrediction   byte = 2  // string
	InTargets      byte = 3  // array of strings; the guest's References too
	InContext      byte = 4  // string, sent only with include_context
	InQuestion     byte = 5  // string
	InChoices      byte = 6  // array of strings
	InLanguage     byte = 7  // string
	InSubtask      byte = 8  // string
	InTokens       byte = 9  // number: Length.Tokens
	InTokenizer    byte = 10 // string: Length.Tokenizer
	InDepth        byte = 11 // number
	InGrid         byte = 12 // array [length, depth]
	InMaxNewTokens byte = 13 // number
	InWindow       byte = 14 // number
	InMessages     byte = 15 // array of arrays [role, content]
	InMetadata     byte = 16 // object
	InOptions      byte = 17 // json: the config's options object
)

// Fields of a score output.
const (
	OutValue   byte = 1 // number
	OutInvalid byte = 2 // true or false
	OutDetails byte = 3 // object
	OutStats   byte = 4 // array of numbers
	OutError   byte = 5 // string: the scorer failed on this input
)

// MaxDepth is how deeply arrays and objects may nest in a decoded value; a
// deeper one is refused rather than recursed into.
const MaxDepth = 64

// Input is a decoded score input.
type Input struct {
	Sample     sdk.Sample
	Prediction string
	// Options is the config's options object as JSON, nil without one.
	Options []byte
}

// Output is a score output. HasValue tells a value of 0 from no value,
// which the host refuses unless Invalid is set.
type Output struct {
	Value    float64
	HasValue bool
	Invalid  bool
	Details  map[string]any
	Stats    []float64
	Error    string
}

// AppendInput appends the encoding of a score input to b. The sample's
// metadata values are encoded as AppendValue does; options must be a JSON
// object or empty.
func AppendInput(b []byte, s *sdk.Sample, prediction string, options []byte) ([]byte, error) {
	b = appendStringField(b, InID, s.ID)
	b = appendStringField(b, InPrediction, prediction)
	b = appendStringsField(b, InTargets, s.Targets)
	b = appendStringField(b, InContext, s.Context)
	b = appendStringField(b, InQuestion, s.Question)
	b = appendStringsField(b, InChoices, s.Choices)
	b = appendStringField(b, InLanguage, s.Language)
	b = appendStringField(b, InSubtask, s.Subtask)
	b = appendNumberField(b, InTokens, float64(s.Length.Tokens))
	b = appendStringField(b, InTokenizer, s.Length.Tokenizer)
	b = appendNumberField(b, InDepth, s.Depth)
	if g := s.Grid; g != nil {
		b = append(b, InGrid, TagArray)
		b = appendU32(b, 2)
		b = AppendNumber(b, float64(g.Length))
		b = AppendNumber(b, g.Depth)
	}
	b = appendNumberField(b, InMaxNewTokens, float64(s.MaxNewTokens))
	b = appendNumberField(b, InWindow, float64(s.Window))
	if len(s.Messages) > 0 {
		b = append(b, InMessages, TagArray)
		b = appendU32(b, len(s.Messages))
		for _, m := range s.Messages {
			b = append(b, TagArray)
			b = appendU32(b, 2)
			b = AppendString(b, m.Role)
			b = AppendString(b, m.Content)
		}
	}
	if len(s.Metadata) > 0 {
		var err error
		b = append(b, InMetadata)
		if b, err = AppendValue(b, s.Metadata); err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
	}
	if len(options) > 0 {
		b = append(b, InOptions, TagJSON)
		b = appendBytes(b, options)
	}
	return b, nil
}

// DecodeInput decodes a score input. Its strings share b's memory: b must
// not change while they are in use.
func DecodeInput(b []byte) (Input, error) {
	var in Input
	s := &in.Sample
	d := decoder{b: b}
	for d.more() {
		field := d.b[d.off]
		d.off++
		var err error
		switch field {
		case InID:
			s.ID, err = d.string()
		case InPrediction:
			in.Prediction, err = d.string()
		case InTargets:
			s.Targets, err = d.strings()
		case InContext:
			s.Context, err = d.string()
		case InQuestion:
			s.Question, err = d.string()
		case InChoices:
			s.Choices, err = d.strings()
		case InLanguage:
			s.Language, err = d.string()
		case InSubtask:
			s.Subtask, err = d.string()
		case InTokens:
			s.Length.Tokens, err = d.int()
		case InTokenizer:
			s.Length.Tokenizer, err = d.string()
		case InDepth:
			s.Depth, err = d.number()
		case InGrid:
			s.Grid, err = d.grid()
		case InMaxNewTokens:
			s.MaxNewTokens, err = d.int()
		case InWindow:
			s.Window, err = d.int()
		case InMessages:
			s.Messages, err = d.messages()
		case InMetadata:
			s.Metadata, err = d.object()
		case InOptions:
			in.Options, err = d.json()
		default:
			err = d.skip()
		}
		if err != nil {
			return Input{}, fmt.Errorf("input field %d: %w", field, err)
		}
	}
	return in, nil
}

// AppendOutput appends the encoding of a score output to b. Non-finite
// numbers are refused, as JSON refuses them.
func AppendOutput(b []byte, o *Output) ([]byte, error) {
	if o.Error != "" {
		return appendStringField(b, OutError, o.Error), nil
	}
	if o.HasValue {
		if !finite(o.Value) {
			return nil, fmt.Errorf("value %v is not a finite number", o.Value)
		}
		b = append(b, OutValue)
		b = AppendNumber(b, o.Value)
	}
	if o.Invalid {
		b = append(b, OutInvalid, TagTrue)
	}
	if len(o.Details) > 0 {
		var err error
		b = append(b, OutDetails)
		if b, err = AppendValue(b, o.Details); err != nil {
			return nil, fmt.Errorf("details: %w", err)
		}
	}
	if len(o.Stats) > 0 {
		b = append(b, OutStats, TagArray)
		b = appendU32(b, len(o.Stats))
		for i, x := range o.Stats {
			if !finite(x) {
				return nil, fmt.Errorf("stats[%d] %v is not a finite number", i, x)
			}
			b = AppendNumber(b, x)
		}
	}
	return b, nil
}

// DecodeOutput decodes a score output. Its strings share b's memory.
func DecodeOutput(b []byte) (Output, error) {
	var o Output
	d := decoder{b: b}
	for d.more() {
		field := d.b[d.off]
		d.off++
		var err error
		switch field {
		case OutValue:
			o.Value, err = d.number()
			o.HasValue = err == nil
		case OutInvalid:
			o.Invalid, err = d.bool()
		case OutDetails:
			o.Details, err = d.object()
		case OutStats:
			o.Stats, err = d.numbers()
		case OutError:
			o.Error, err = d.string()
		default:
			err = d.skip()
		}
		if err != nil {
			return Output{}, fmt.Errorf("output field %d at byte %d: %w", field, d.off, err)
		}
	}
	return o, nil
}

// AppendValue appends a value. Go's common JSON shapes get tags of their
// own; anything else is encoded by encoding/json under TagJSON, so any value
// that JSON encodes is accepted, and decodes as JSON would decode it.
func AppendValue(b []byte, v any) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case nil:
		return append(b, TagNull), nil
	case bool:
		if v {
			return append(b, TagTrue), nil
		}
		return append(b, TagFalse), nil
	case float64:
		return appendFinite(b, v)
	case float32:
		return appendFinite(b, float64(v))
	case int:
		return AppendNumber(b, float64(v)), nil
	case int64:
		return AppendNumber(b, float64(v)), nil
	case int32:
		return AppendNumber(b, float64(v)), nil
	case uint32:
		return AppendNumber(b, float64(v)), nil
	case uint64:
		return AppendNumber(b, float64(v)), nil
	case string:
		return AppendString(b, v), nil
	case []string:
		b = append(b, TagArray)
		b = appendU32(b, len(v))
		for _, s := range v {
			b = AppendString(b, s)
		}
		return b, nil
	case []float64:
		b = append(b, TagArray)
		b = appendU32(b, len(v))
		for _, x := range v {
			if b, err = appendFinite(b, x); err != nil {
				return nil, err
			}
		}
		return b, nil
	case []int:
		b = append(b, TagArray)
		b = appendU32(b, len(v))
		for _, x := range v {
			b = AppendNumber(b, float64(x))
		}
		return b, nil
	case []any:
		b = append(b, TagArray)
		b = appendU32(b, len(v))
		for _, x := range v {
			if b, err = AppendValue(b, x); err != nil {
				return nil, err
			}
		}
		return b, nil
	case map[string]any:
		b = append(b, TagObject)
		b = appendU32(b, len(v))
		for k, x := range v {
			b = appendBytes(b, unsafe.Slice(unsafe.StringData(k), len(k)))
			if b, err = AppendValue(b, x); err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
		}
		return b, nil
	case json.RawMessage:
		if !json.Valid(v) {
			return nil, errors.New("json.RawMessage is not valid JSON")
		}
		b = append(b, TagJSON)
		return appendBytes(b, v), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	b = append(b, TagJSON)
	return appendBytes(b, raw), nil
}

// AppendNumber appends a number value.
func AppendNumber(b []byte, x float64) []byte {
	return binary.LittleEndian.AppendUint64(append(b, TagNumber), math.Float64bits(x))
}

// AppendString appends a string value.
func AppendString(b []byte, s string) []byte {
	return append(appendU32(append(b, TagString), len(s)), s...)
}

func appendFinite(b []byte, x float64) ([]byte, error) {
	if !finite(x) {
		return nil, fmt.Errorf("%v is not a finite number", x)
	}
	return AppendNumber(b, x), nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func appendU32(b []byte, n int) []byte {
	return binary.LittleEndian.AppendUint32(b, uint32(n))
}

func appendBytes(b, p []byte) []byte {
	return append(appendU32(b, len(p)), p...)
}

func appendStringField(b []byte, field byte, s string) []byte {
	if s == "" {
		return b
	}
	return AppendString(append(b, field), s)
}

func appendNumberField(b []byte, field byte, x float64) []byte {
	if x == 0 {
		return b
	}
	return AppendNumber(append(b, field), x)
}

func appendStringsField(b []byte, field byte, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	b = append(b, field, TagArray)
	b = appendU32(b, len(ss))
	for _, s := range ss {
		b = AppendString(b, s)
	}
	return b
}
