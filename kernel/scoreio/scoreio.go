// Package scoreio is the engine behind `hayloft score`: it scores a JSONL
// file of predictions and references with one scorer, without a model or a
// task, so numbers can be checked against the reference Python tools.
//
// Input, one JSON object per line:
//
//	{"prediction": "...", "references": "..." | ["...", ...] | {...}, "sample": {...}}
//
// references as a string or list become Sample.Targets; as an object they go
// to Sample.Metadata["references"] for benchmark-specific scorers. The
// optional sample object is decoded into the sdk.Sample first (strictly:
// unknown fields are errors); references, when present, replace its targets.
// Any other fields are carried through. Blank lines are skipped.
//
// Output, per line: the input object, fields in their order, plus "score":
// the scorer's Details (the reference library's field names) with "value"
// and "invalid". With aggregate, one object instead: the eval-level
// aggregate.
package scoreio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/stats"
)

// maxLine bounds one input line; long-context predictions can be large, but
// a line beyond this is almost certainly not JSONL.
const maxLine = 256 << 20

// field is one top-level member of an input object, in input order.
type field struct {
	key   string
	value json.RawMessage
}

// Run reads JSONL from in, scores each line with sc and writes JSONL to out
// (or, with aggregate, one aggregate object). Lines are written as they are
// scored, so on an error every earlier line is already in out. Errors name
// the 1-based line.
func Run(ctx context.Context, sc sdk.Scorer, in io.Reader, out io.Writer, aggregate bool) error {
	r := bufio.NewReaderSize(in, 1<<16)
	w := bufio.NewWriter(out)
	var scores []*sdk.ScoreResponse
	err := func() error {
		for lineNo := 1; ; lineNo++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			line, readErr := readLine(r)
			if readErr != nil && readErr != io.EOF {
				return fmt.Errorf("line %d: %w", lineNo, readErr)
			}
			if len(bytes.TrimSpace(line)) > 0 {
				fields, resp, err := scoreLine(ctx, sc, line, lineNo)
				if err != nil {
					return fmt.Errorf("line %d: %w", lineNo, err)
				}
				if aggregate {
					scores = append(scores, resp)
				} else if err := writeLine(w, fields, resp); err != nil {
					return fmt.Errorf("line %d: write: %w", lineNo, err)
				}
			}
			if readErr == io.EOF {
				return nil
			}
		}
	}()
	if err == nil && aggregate {
		err = writeAggregate(ctx, w, sc, scores)
	}
	if ferr := w.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write: %w", ferr)
	}
	return err
}

func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, err
	}
}

// parseObject splits one JSON object into its members, keeping their order.
func parseObject(line []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("want a JSON object")
	}
	var fields []field
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		key := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("invalid JSON in %q: %w", key, err)
		}
		if seen[key] {
			return nil, fmt.Errorf("%s: duplicate field", key)
		}
		seen[key] = true
		fields = append(fields, field{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: data after the object")
	}
	return fields, nil
}

func scoreLine(ctx context.Context, sc sdk.Scorer, line []byte, lineNo int) ([]field, *sdk.ScoreResponse, error) {
	fields, err := parseObject(line)
	if err != nil {
		return nil, nil, err
	}
	sample := &sdk.Sample{}
	var prediction, references json.RawMessage
	for _, f := range fields {
		switch f.key {
		case "prediction":
			prediction = f.value
		case "references":
			references = f.value
		case "sample":
			dec := json.NewDecoder(bytes.NewReader(f.value))
			dec.DisallowUnknownFields()
			if err := dec.Decode(sample); err != nil {
				return nil, nil, fmt.Errorf("sample: %w", err)
			}
		case "score":
			return nil, nil, errors.New(`score: the input already has a "score" field`)
		}
	}
	if prediction == nil {
		return nil, nil, errors.New("prediction: missing")
	}
	var pred string
	if err := json.Unmarshal(prediction, &pred); err != nil {
		return nil, nil, errors.New("prediction: want a string")
	}
	if references != nil {
		if err := setReferences(sample, references); err != nil {
			return nil, nil, err
		}
	}
	if sample.ID == "" {
		sample.ID = fmt.Sprintf("line %d", lineNo)
	}
	resp, err := sc.Score(ctx, &sdk.ScoreRequest{Sample: sample, Prediction: pred})
	if err != nil {
		return nil, nil, fmt.Errorf("score: %w", err)
	}
	if resp == nil {
		return nil, nil, errors.New("score: scorer returned no response")
	}
	return fields, resp, nil
}

func setReferences(sample *sdk.Sample, raw json.RawMessage) error {
	const want = "references: want string, list or object"
	switch t := bytes.TrimSpace(raw); {
	case len(t) > 0 && t[0] == '"':
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return errors.New(want)
		}
		sample.Targets = []string{s}
	case len(t) > 0 && t[0] == '[':
		var list []string
		if err := json.Unmarshal(t, &list); err != nil {
			return errors.New("references: want a list of strings")
		}
		sample.Targets = list
	case len(t) > 0 && t[0] == '{':
		var obj map[string]any
		if err := json.Unmarshal(t, &obj); err != nil {
			return errors.New(want)
		}
		if sample.Metadata == nil {
			sample.Metadata = map[string]any{}
		}
		sample.Metadata["references"] = obj
	default:
		return errors.New(want)
	}
	return nil
}

// scoreObject is what goes under "score": Details plus value and invalid.
func scoreObject(resp *sdk.ScoreResponse) map[string]any {
	m := make(map[string]any, len(resp.Details)+2)
	for k, v := range resp.Details {
		m[k] = v
	}
	m["value"] = resp.Value
	m["invalid"] = resp.Invalid
	return m
}

func writeLine(w *bufio.Writer, fields []field, resp *sdk.ScoreResponse) error {
	score, err := json.Marshal(scoreObject(resp))
	if err != nil {
		return fmt.Errorf("encode score: %w", err)
	}
	// Assembled whole before writing so a failure never leaves half a line.
	var b bytes.Buffer
	b.WriteByte('{')
	for _, f := range fields {
		key, _ := json.Marshal(f.key)
		b.Write(key)
		b.WriteByte(':')
		if err := json.Compact(&b, f.value); err != nil {
			return fmt.Errorf("%s: %w", f.key, err)
		}
		b.WriteByte(',')
	}
	b.WriteString(`"score":`)
	b.Write(score)
	b.WriteString("}\n")
	_, err = w.Write(b.Bytes())
	return err
}

func writeAggregate(ctx context.Context, w *bufio.Writer, sc sdk.Scorer, scores []*sdk.ScoreResponse) error {
	agg, err := stats.Aggregate(ctx, sc, scores, stats.DefaultSeed)
	if err != nil {
		return fmt.Errorf("aggregate: %w", err)
	}
	b, err := json.Marshal(agg)
	if err != nil {
		return fmt.Errorf("encode aggregate: %w", err)
	}
	w.Write(b)
	w.WriteByte('\n')
	return nil
}

// ParseOptions turns repeated `--option key=value` flags into scorer
// options. A value that is valid JSON (number, bool, null, list, object,
// quoted string) is used as that JSON; anything else is a plain string, so
// tokenize=13a and mode=nltk need no quotes. Errors name the bad pair.
func ParseOptions(kv []string) (sdk.Options, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	seen := map[string]bool{}
	for i, pair := range kv {
		key, value, ok := strings.Cut(pair, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf("option %q: want key=value", pair)
		}
		if seen[key] {
			return nil, fmt.Errorf("option %q: %s given twice", pair, key)
		}
		seen[key] = true
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		if v := strings.TrimSpace(value); v != "" && json.Valid([]byte(v)) {
			if err := json.Compact(&b, []byte(v)); err != nil {
				return nil, fmt.Errorf("option %q: %w", pair, err)
			}
		} else {
			s, _ := json.Marshal(value)
			b.Write(s)
		}
	}
	b.WriteByte('}')
	return sdk.Options(b.Bytes()), nil
}
