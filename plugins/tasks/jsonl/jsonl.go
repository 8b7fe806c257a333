// Package jsonl is the task that reads samples from your own data: a JSON
// Lines file or URL (one sample per line), a Parquet file (one per row, as
// Hugging Face dataset repositories ship them), or a directory of such
// shards. It is the way to run any dataset without writing a plugin.
//
// Files are streamed: a JSONL file a line at a time, a Parquet file a page at
// a time through github.com/parquet-go/parquet-go, so a dataset larger than
// memory runs.
package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hayloft/hayloft/sdk"
)

// Name is the component name.
const Name = "jsonl"

// maxLine bounds one line: a 1M-token context is about 4 MB of UTF-8, so 256
// MiB leaves room for very long documents while still catching a file with
// no newlines at all.
const maxLine = 256 << 20

type options struct {
	// Path is a .jsonl or .parquet file, a directory of them (shards, read
	// in name order), or an http(s) URL of JSONL.
	Path     string `json:"path" hayloft:"path"`
	Language string `json:"language"`
	Subtask  string `json:"subtask"`
	// Field names, for datasets whose columns are named differently
	// (Hugging Face exports often use "input" or "answer").
	ContextField  string `json:"context_field"`
	QuestionField string `json:"question_field"`
	AnswersField  string `json:"answers_field"`
	ChoicesField  string `json:"choices_field"`
	IDField       string `json:"id_field"`
	// Fields maps sample fields to the dataset's columns in one option:
	// fields = { context = "document", question = "query", targets = "answers" }.
	// Keys: id, context, question, targets, choices. It replaces the
	// *_field options, which stay for existing configs.
	Fields map[string]string `json:"fields"`
	// Template is an optional user message using {{context}} and {{question}}.
	Template string `json:"template"`
	System   string `json:"system"`
	// InvalidUTF8 is sdk.UTF8Refuse (the default: an error naming the line
	// and byte) or sdk.UTF8Replace (each run of invalid bytes becomes U+FFFD).
	InvalidUTF8 string `json:"invalid_utf8"`
}

// Task streams samples from JSONL or Parquet sources.
type Task struct {
	opts  options
	files []string // the local files to read in order; nil for a URL
}

// New builds the task from its options.
func New(_ context.Context, raw sdk.Options) (sdk.Task, error) {
	o := options{
		ContextField: "context", QuestionField: "question", AnswersField: "answers",
		ChoicesField: "choices", IDField: "id",
	}
	if err := raw.Decode(&o); err != nil {
		return nil, err
	}
	if o.Path == "" {
		return nil, sdk.Configf("path", "required: a .jsonl or .parquet file, a directory of them, or an http(s) URL")
	}
	if err := o.applyFields(); err != nil {
		return nil, err
	}
	var err error
	if o.InvalidUTF8, err = sdk.CheckUTF8Policy("invalid_utf8", o.InvalidUTF8); err != nil {
		return nil, err
	}
	t := &Task{opts: o}
	if isURL(o.Path) {
		return t, nil
	}
	if t.files, err = sourceFiles(o.Path); err != nil {
		return nil, sdk.Configf("path", "%v", err)
	}
	for _, f := range t.files {
		if err := checkFile(f, o.InvalidUTF8); err != nil {
			return nil, sdk.Configf("path", "%v", err)
		}
	}
	return t, nil
}

// fieldKeys are the keys of the fields option.
var fieldKeys = []string{"id", "context", "question", "targets", "choices"}

// applyFields folds the fields option into the *_field options.
func (o *options) applyFields() error {
	for k, col := range o.Fields {
		var dst *string
		switch k {
		case "id":
			dst = &o.IDField
		case "context":
			dst = &o.ContextField
		case "question":
			dst = &o.QuestionField
		case "targets":
			dst = &o.AnswersField
		case "choices":
			dst = &o.ChoicesField
		default:
			msg := fmt.Sprintf("unknown sample field %q (want %s)", k, strings.Join(fieldKeys, ", "))
			if s := sdk.Suggest(k, fieldKeys); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			return sdk.Configf("fields", "%s", msg)
		}
		if col == "" {
			return sdk.Configf("fields", "%s: empty column name", k)
		}
		*dst = col
	}
	return nil
}

// checkFile checks what New can check cheaply: a JSONL file's UTF-8 (a scan
// at validation speed, so that validate finds bad bytes before a run stops
// at them) and a Parquet file's footer.
func checkFile(path, policy string) error {
	if isParquet(path) {
		f, err := openParquet(path)
		if err != nil {
			return err
		}
		return f.Close()
	}
	if policy == sdk.UTF8Refuse {
		return sdk.CheckUTF8File(path)
	}
	return nil
}

func isURL(p string) bool {
	return strings.HasPrefix(p, "http://") || strings.HasPrefix(p, "https://")
}

func (t *Task) open(ctx context.Context, src string) (io.ReadCloser, error) {
	if !isURL(src) {
		return os.Open(src)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", src, resp.Status)
	}
	return resp.Body, nil
}

// Samples streams one sample per non-blank JSONL line or Parquet row, file
// after file. A malformed record ends the stream with an error naming the
// file and line (or row), after every good record before it has been
// delivered.
func (t *Task) Samples(ctx context.Context, req *sdk.SamplesRequest) iter.Seq2[*sdk.Sample, error] {
	return func(yield func(*sdk.Sample, error) bool) {
		n := 0
		for _, src := range t.sources() {
			for r, err := range t.records(ctx, src) {
				if err == nil {
					if err = ctx.Err(); err != nil {
						yield(nil, err)
						return
					}
				}
				if err != nil {
					yield(nil, err)
					return
				}
				s, err := t.sample(r)
				if err != nil {
					yield(nil, fmt.Errorf("%s: %w", r.where(), err))
					return
				}
				if !yield(s, nil) {
					return
				}
				n++
				if req != nil && req.Limit > 0 && n >= req.Limit {
					return
				}
			}
		}
	}
}

// sources are the files to read, or the URL.
func (t *Task) sources() []string {
	if t.files == nil {
		return []string{t.opts.Path}
	}
	return t.files
}

// record is one JSONL line or Parquet row: its fields as JSON, where it is
// (for errors) and the ID a sample without an id field gets.
type record struct {
	fields  map[string]json.RawMessage
	src     string
	n       int  // line or row, from 1
	parquet bool // n is a row
	id      string
}

// where names the record in errors; made only for an error, not per record.
func (r record) where() string {
	if r.parquet {
		return fmt.Sprintf("%s: row %d", r.src, r.n)
	}
	return fmt.Sprintf("%s:%d", r.src, r.n)
}

// records streams the records of one source.
func (t *Task) records(ctx context.Context, src string) iter.Seq2[record, error] {
	if isParquet(src) {
		return t.parquetRecords(src)
	}
	return t.jsonlRecords(ctx, src)
}

// recordID is the ID of the n-th record (line or row, from 1) of src: the
// number alone for one file, as before shards existed, else prefixed with
// the shard's name so that IDs stay unique across shards.
func (t *Task) recordID(src string, n int) string {
	if len(t.files) > 1 {
		return filepath.Base(src) + ":" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

func (t *Task) jsonlRecords(ctx context.Context, src string) iter.Seq2[record, error] {
	return func(yield func(record, error) bool) {
		rc, err := t.open(ctx, src)
		if err != nil {
			yield(record{}, fmt.Errorf("jsonl: %w", err))
			return
		}
		defer rc.Close()
		r := bufio.NewReaderSize(rc, 1<<20)
		var off int64 // of the line in the file
		for line := 1; ; line++ {
			b, err := readLine(r)
			start := off
			off += int64(len(b))
			if i := sdk.FirstInvalidUTF8(b); i >= 0 {
				if t.opts.InvalidUTF8 != sdk.UTF8Replace {
					yield(record{}, &sdk.InvalidUTF8Error{Path: src, Line: line, Offset: start + int64(i)})
					return
				}
				b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
			}
			at := record{src: src, n: line}
			if len(bytes.TrimSpace(b)) > 0 {
				rec, err := fields(b)
				if err != nil {
					yield(record{}, fmt.Errorf("%s: not a JSON object: %w", at.where(), err))
					return
				}
				at.fields, at.id = rec, t.recordID(src, line)
				if !yield(at, nil) {
					return
				}
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(record{}, fmt.Errorf("%s: %w", at.where(), err))
				return
			}
		}
	}
}

func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}

// sample maps one record's fields to a sample.
func (t *Task) sample(r record) (*sdk.Sample, error) {
	rec := r.fields
	o := t.opts
	s := &sdk.Sample{ID: r.id, Depth: -1, Language: o.Language, Subtask: o.Subtask}
	var err error
	if raw, ok := rec[o.IDField]; ok {
		if s.ID, err = scalarString(raw); err != nil {
			return nil, fmt.Errorf("field %q: %w", o.IDField, err)
		}
	}
	if s.Context, err = optString(rec, o.ContextField); err != nil {
		return nil, err
	}
	if s.Question, err = optString(rec, o.QuestionField); err != nil {
		return nil, err
	}
	if s.Context == "" && s.Question == "" {
		return nil, fmt.Errorf("neither %q nor %q is set", o.ContextField, o.QuestionField)
	}
	if s.Targets, err = stringList(rec, o.AnswersField); err != nil {
		return nil, err
	}
	if s.Choices, err = stringList(rec, o.ChoicesField); err != nil {
		return nil, err
	}
	if v, ok := rec["language"]; ok && s.Language == "" {
		json.Unmarshal(v, &s.Language)
	}
	if v, ok := rec["subtask"]; ok && s.Subtask == "" {
		json.Unmarshal(v, &s.Subtask)
	}
	for k, v := range rec {
		if o.known(k) {
			continue
		}
		if s.Metadata == nil {
			s.Metadata = map[string]any{}
		}
		var x any
		json.Unmarshal(v, &x)
		s.Metadata[k] = x
	}
	if o.Template != "" || o.System != "" {
		tmpl := o.Template
		if tmpl == "" {
			tmpl = sdk.DefaultMessages()[0].Content
		}
		if o.System != "" {
			s.Messages = append(s.Messages, sdk.Message{Role: "system", Content: o.System})
		}
		s.Messages = append(s.Messages, sdk.Message{Role: "user", Content: tmpl})
	}
	return s, nil
}

func scalarString(raw json.RawMessage) (string, error) {
	if s, ok := text(raw); ok {
		return s, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("want a string or number, got %s", jsonKind(v))
}

func optString(rec map[string]json.RawMessage, field string) (string, error) {
	raw, ok := rec[field]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	if s, ok := text(raw); ok {
		return s, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		var v any
		json.Unmarshal(raw, &v)
		return "", fmt.Errorf("field %q: want a string, got %s", field, jsonKind(v))
	}
	return s, nil
}

// stringList accepts a string or a list of strings (numbers are written as
// text: answers such as 42 are common in QA sets).
func stringList(rec map[string]json.RawMessage, field string) ([]string, error) {
	raw, ok := rec[field]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	if s, ok := text(raw); ok {
		return []string{s}, nil
	}
	if l, ok := texts(raw); ok {
		return l, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("field %q: %w", field, err)
	}
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case float64:
		return []string{strconv.FormatFloat(v, 'f', -1, 64)}, nil
	case []any:
		out := make([]string, 0, len(v))
		for i, x := range v {
			switch x := x.(type) {
			case string:
				out = append(out, x)
			case float64:
				out = append(out, strconv.FormatFloat(x, 'f', -1, 64))
			default:
				return nil, fmt.Errorf("field %q[%d]: want a string, got %s", field, i, jsonKind(x))
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("field %q: want a string or a list of strings, got %s", field, jsonKind(v))
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// CountSamples counts the records of local files: a fast scan of JSONL
// lines (not a parse), and the row counts of Parquet footers. A URL is not
// fetched twice just to count it.
func (t *Task) CountSamples(ctx context.Context, req *sdk.SamplesRequest) (int, error) {
	if t.files == nil {
		return 0, fmt.Errorf("jsonl: counting %s would download it twice: %w", t.opts.Path, sdk.ErrUnsupported)
	}
	n := 0
	for _, src := range t.files {
		c, err := countFile(ctx, src)
		if err != nil {
			return 0, err
		}
		n += c
	}
	return req.Limited(n), nil
}

func countFile(ctx context.Context, src string) (int, error) {
	if isParquet(src) {
		f, err := openParquet(src)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		return int(f.NumRows()), nil
	}
	f, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	n := 0
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			n++
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", src, err)
		}
	}
}

// known reports whether k is a field the sample takes, not metadata.
func (o *options) known(k string) bool {
	switch k {
	case o.IDField, o.ContextField, o.QuestionField, o.AnswersField, o.ChoicesField, "language", "subtask":
		return true
	}
	return false
}
