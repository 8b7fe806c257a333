package xlbench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hayloft/hayloft/sdk/jsonstr"
)

// maxLine bounds one JSONL line: a line may carry a whole document inline.
// A longer line is an error (bufio.ErrTooLong) naming it.
const maxLine = 256 << 20

// Doc is one document, held once however many questions share it.
type Doc struct {
	ID       string
	Text     string
	Language string
	// Length is the document's length in the paper's unit: words for
	// English, characters (non-space) for Chinese.
	Length int
}

// LengthUnit is the unit of Doc.Length for a language.
func LengthUnit(language string) string {
	if language == "zh" {
		return "chars"
	}
	return "words"
}

func measure(text, language string) int {
	if language == "zh" {
		n := 0
		for _, r := range text {
			if !unicode.IsSpace(r) {
				n++
			}
		}
		return n
	}
	n, in := 0, false
	for _, r := range text {
		sp := unicode.IsSpace(r)
		if !sp && !in {
			n++
		}
		in = !sp
	}
	return n
}

// Shot is one ICL example.
type Shot struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// Item is one question, pointing at its shared document.
type Item struct {
	ID       string
	Scenario string
	Subtask  Subtask
	Language string
	Doc      *Doc
	Question string
	Answers  []string
	Choices  []string
	Examples []Shot
	// Variant names the transform that produced this item's data
	// (Fiction-T writes it), empty for original data.
	Variant string
	Where   string // file:line (or file:item) for errors and provenance
}

// record is one line as written; answer and examples accept several shapes.
type record struct {
	ID          json.RawMessage `json:"id"`
	Scenario    string          `json:"scenario"`
	Subtask     string          `json:"subtask"`
	Language    string          `json:"language"`
	DocID       json.RawMessage `json:"doc_id"`
	Context     *string         `json:"context"`
	ContextFile string          `json:"context_file"`
	Question    string          `json:"question"`
	Answer      json.RawMessage `json:"answer"`
	Choices     json.RawMessage `json:"choices"`
	Examples    json.RawMessage `json:"examples"`
	Variant     string          `json:"variant"`
}

// Dataset is a loaded file: its questions in file order and its documents.
type Dataset struct {
	Items   []*Item
	Docs    map[string]*Doc // by doc_id
	Skipped int             // bad lines skipped under skip_bad_lines
	// SkipErrors are the first few skipped lines' errors, for the log.
	SkipErrors []string
}

// Load reads a JSONL file (or a JSON array of the same objects, when the
// file's first non-blank byte is '['). A malformed line is an error naming
// path:line, unless skipBad, in which case it is counted in Skipped and
// loading goes on.
func Load(path string, skipBad bool) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l := &loader{path: path, dir: filepath.Dir(path), skipBad: skipBad,
		ds: &Dataset{Docs: map[string]*Doc{}}, files: map[string]*Doc{}, ids: map[string]string{}, sums: map[string]uint64{}, seed: maphash.MakeSeed()}
	// The reader is for peeking at the first byte; the line scanner
	// reads through it into its own buffer, so a big one here would only
	// hold a second copy of the text being read.
	r := bufio.NewReaderSize(f, 64<<10)
	first, err := firstByte(r)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if first == '[' {
		err = l.readJSON(r)
	} else {
		err = l.readJSONL(r)
	}
	if err != nil {
		return nil, err
	}
	return l.ds, nil
}

func firstByte(r *bufio.Reader) (byte, error) {
	for {
		b, err := r.Peek(1)
		if err != nil {
			return 0, err
		}
		if !unicode.IsSpace(rune(b[0])) {
			return b[0], nil
		}
		r.ReadByte()
	}
}

type loader struct {
	path    string
	dir     string
	skipBad bool
	ds      *Dataset
	files   map[string]*Doc   // context_file (absolute) → its document
	ids     map[string]string // question id → where it was defined
	sums    map[string]uint64 // doc_id → hash of its context's JSON text
	seed    maphash.Seed
}

// bad records a malformed record: an error, or a skip.
func (l *loader) bad(where string, err error) error {
	if !l.skipBad {
		return fmt.Errorf("%s: %w", where, err)
	}
	l.ds.Skipped++
	if len(l.ds.SkipErrors) < 5 {
		l.ds.SkipErrors = append(l.ds.SkipErrors, fmt.Sprintf("%s: %v", where, err))
	}
	return nil
}

func (l *loader) readJSONL(r *bufio.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", l.path, line)
		if err := l.add(b, where); err != nil {
			if berr := l.bad(where, err); berr != nil {
				return berr
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", l.path, line+1, err)
	}
	return nil
}

// readJSON reads a JSON array of records, naming each bad one by its line
// (counted from the decoder's offset) and position in the array.
func (l *loader) readJSON(r *bufio.Reader) error {
	lc := &lineCounter{r: r}
	dec := json.NewDecoder(lc)
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%s:1: %w", l.path, err)
	}
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			// The array itself is broken: nothing after this point can be
			// found again, so this is an error even when skipping.
			return fmt.Errorf("%s:%d: item %d: %w", l.path, lc.lineAt(dec.InputOffset()), i, err)
		}
		where := fmt.Sprintf("%s:%d (item %d)", l.path, lc.lineAt(dec.InputOffset()-int64(len(raw))), i)
		if err := l.add(raw, where); err != nil {
			if berr := l.bad(where, err); berr != nil {
				return berr
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%s:%d: %w", l.path, lc.lineAt(dec.InputOffset()), err)
	}
	return nil
}

// lineCounter remembers where each newline is, so that a decoder's byte
// offset becomes a line number.
type lineCounter struct {
	r   io.Reader
	off int64
	nl  []int64 // offsets of newlines read so far
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i, b := range p[:n] {
		if b == '\n' {
			c.nl = append(c.nl, c.off+int64(i))
		}
	}
	c.off += int64(n)
	return n, err
}

func (c *lineCounter) lineAt(off int64) int {
	lo, hi := 0, len(c.nl)
	for lo < hi {
		m := (lo + hi) / 2
		if c.nl[m] < off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo + 1
}

// add parses one record and appends its item.
func (l *loader) add(b []byte, where string) error {
	// Fields beyond the spec's are ignored: datasets carry their own extras.
	var rec record
	raw, rest, long := cutContext(b)
	if long {
		b = rest
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("not a valid record: %w", err)
	}
	id, err := scalar(rec.ID, "id")
	if err != nil {
		return err
	}
	if id == "" {
		return errors.New(`field "id" is required`)
	}
	if prev, dup := l.ids[id]; dup {
		return fmt.Errorf("id %q repeats the id of %s", id, prev)
	}
	st, err := Check(rec.Scenario, rec.Subtask, rec.Language)
	if err != nil {
		return err
	}
	docID, err := scalar(rec.DocID, "doc_id")
	if err != nil {
		return err
	}
	if strings.TrimSpace(rec.Question) == "" {
		return errors.New(`field "question" is required`)
	}
	it := &Item{ID: id, Scenario: rec.Scenario, Subtask: st, Language: rec.Language,
		Question: rec.Question, Variant: rec.Variant, Where: where}
	if it.Answers, err = answers(rec.Answer); err != nil {
		return err
	}
	if st.Metric == MetricMAE {
		for _, a := range it.Answers {
			if _, err := strconv.ParseFloat(strings.TrimSpace(a), 64); err != nil {
				return fmt.Errorf(`field "answer": %s wants a number, got %q`, st.Name, a)
			}
		}
	}
	if len(rec.Choices) > 0 && string(rec.Choices) != "null" {
		if err := json.Unmarshal(rec.Choices, &it.Choices); err != nil {
			return fmt.Errorf(`field "choices": want a list of strings: %w`, err)
		}
	}
	if st.Metric == MetricChoiceF1 && len(it.Choices) == 0 {
		return fmt.Errorf(`field "choices" is required for %s`, st.Name)
	}
	if it.Examples, err = shots(rec.Examples); err != nil {
		return err
	}
	if long {
		if rec.ContextFile != "" {
			return errors.New(`"context" and "context_file" are both set; give one`)
		}
		it.Doc, err = l.longContext(docID, rec.Language, raw)
	} else {
		it.Doc, err = l.doc(docID, rec, where)
	}
	if err != nil {
		return err
	}
	l.ds.Items = append(l.ds.Items, it)
	l.ids[id] = where
	return nil
}

// doc returns the shared document of a record: the one already loaded under
// its doc_id (the record may repeat the same text or omit it), or a new one
// from its context or context_file.
func (l *loader) doc(docID string, rec record, where string) (*Doc, error) {
	if rec.Context != nil && rec.ContextFile != "" {
		return nil, errors.New(`"context" and "context_file" are both set; give one`)
	}
	if docID == "" {
		return nil, errors.New(`field "doc_id" is required`)
	}
	known := l.ds.Docs[docID]
	if known != nil && known.Language != rec.Language {
		return nil, fmt.Errorf("doc_id %q is %s here but %s earlier", docID, rec.Language, known.Language)
	}
	switch {
	case rec.Context != nil:
		if known != nil {
			if *rec.Context != known.Text {
				return nil, fmt.Errorf("doc_id %q: context differs from the document loaded earlier under that id", docID)
			}
			return known, nil
		}
		if !utf8.ValidString(*rec.Context) {
			return nil, errors.New(`field "context" is not valid UTF-8`)
		}
		return l.put(&Doc{ID: docID, Text: *rec.Context, Language: rec.Language}), nil
	case rec.ContextFile != "":
		p := rec.ContextFile
		if !filepath.IsAbs(p) {
			p = filepath.Join(l.dir, p)
		}
		if d := l.files[p]; d != nil {
			if known != nil && known != d {
				return nil, fmt.Errorf("doc_id %q: context_file %s differs from the document loaded earlier under that id", docID, rec.ContextFile)
			}
			if known == nil {
				l.ds.Docs[docID] = d // another id for the same file: still one copy
			}
			return d, nil
		}
		if known != nil {
			return nil, fmt.Errorf("doc_id %q: context_file %s differs from the document loaded earlier under that id", docID, rec.ContextFile)
		}
		text, err := readText(p)
		if err != nil {
			return nil, fmt.Errorf(`field "context_file": %w`, err)
		}
		d := l.put(&Doc{ID: docID, Text: text, Language: rec.Language})
		l.files[p] = d
		return d, nil
	case known != nil:
		return known, nil
	}
	return nil, fmt.Errorf(`doc_id %q has no document yet: give "context" or "context_file" on its first line`, docID)
}

// longContext is the document of a line whose context is long enough to
// have been cut out of the line undecoded (cutContext). Files that repeat
// a document on every line repeat it byte for byte, so a repeat is
// recognised by a 64-bit hash of its JSON text (maphash, seeded per load:
// a chance collision is 2^-64) and never decoded again; a different
// spelling of the same text is decoded and compared.
func (l *loader) longContext(docID, language string, raw []byte) (*Doc, error) {
	if docID == "" {
		return nil, errors.New(`field "doc_id" is required`)
	}
	sum := maphash.Bytes(l.seed, raw)
	known := l.ds.Docs[docID]
	if known != nil {
		if known.Language != language {
			return nil, fmt.Errorf("doc_id %q is %s here but %s earlier", docID, language, known.Language)
		}
		if l.sums[docID] == sum {
			return known, nil
		}
	}
	// Decoded straight into the string that holds it: one allocation of
	// the document, no scratch copy (see jsonstr.Decode).
	text, err := jsonstr.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf(`field "context": %w`, err)
	}
	if known != nil {
		if text != known.Text {
			return nil, fmt.Errorf("doc_id %q: context differs from the document loaded earlier under that id", docID)
		}
		return known, nil
	}
	if !utf8.ValidString(text) {
		return nil, errors.New(`field "context" is not valid UTF-8`)
	}
	l.sums[docID] = sum
	return l.put(&Doc{ID: docID, Text: text, Language: language}), nil
}

// longValue is the size from which cutContext takes a context out of its
// line undecoded: a document, not a short nested field.
const longValue = 64 << 10

var contextKey = []byte(`"context"`)

// cutContext finds the JSON string value of the first "context" key of a
// line, when it is at least longValue bytes, and returns it with the line
// in which it is replaced by null. encoding/json scans every byte of a
// value it decodes; a line repeating a 1 MB document then costs a scan of
// the document, while this costs a search for its closing quote. A key
// can only match outside strings: inside one, its quotes would be escaped.
func cutContext(line []byte) (raw, rest []byte, ok bool) {
	i := bytes.Index(line, contextKey)
	if i < 0 {
		return nil, nil, false
	}
	j := skipSpace(line, i+len(contextKey))
	if j >= len(line) || line[j] != ':' {
		return nil, nil, false
	}
	j = skipSpace(line, j+1)
	if j >= len(line) || line[j] != '"' {
		return nil, nil, false
	}
	start, k := j, j+1
	for {
		q := bytes.IndexByte(line[k:], '"')
		if q < 0 {
			return nil, nil, false
		}
		k += q
		slashes := 0
		for p := k - 1; p > start && line[p] == '\\'; p-- {
			slashes++
		}
		if slashes%2 == 0 {
			break
		}
		k++
	}
	end := k + 1
	if end-start < longValue {
		return nil, nil, false
	}
	rest = make([]byte, 0, len(line)-(end-start)+len("null"))
	rest = append(append(append(rest, line[:start]...), "null"...), line[end:]...)
	return line[start:end], rest, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// readText reads a document straight into the string that will hold it:
// os.ReadFile and a string conversion would hold it twice while loading.
func readText(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b strings.Builder
	if fi, err := f.Stat(); err == nil {
		b.Grow(int(fi.Size()))
	}
	if _, err := io.Copy(&b, f); err != nil {
		return "", err
	}
	if !utf8.ValidString(b.String()) {
		return "", fmt.Errorf("%s is not valid UTF-8", path)
	}
	return b.String(), nil
}

func (l *loader) put(d *Doc) *Doc {
	d.Length = measure(d.Text, d.Language)
	l.ds.Docs[d.ID] = d
	return d
}

func scalar(raw json.RawMessage, field string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("field %q: %w", field, err)
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("field %q: want a string or a number, got %s", field, raw)
}

// answers accepts a string, a number or a list of them.
func answers(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New(`field "answer" is required`)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf(`field "answer": %w`, err)
	}
	one := func(x any) (string, bool) {
		switch x := x.(type) {
		case string:
			return x, true
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64), true
		}
		return "", false
	}
	if s, ok := one(v); ok {
		return []string{s}, nil
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf(`field "answer": want a string, a number or a non-empty list of them, got %s`, raw)
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := one(x)
		if !ok {
			return nil, fmt.Errorf(`field "answer"[%d]: want a string or a number`, i)
		}
		out[i] = s
	}
	return out, nil
}

func shots(raw json.RawMessage) ([]Shot, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []struct {
		Question string          `json:"question"`
		Answer   json.RawMessage `json:"answer"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf(`field "examples": want a list of {question, answer}, got %.40s`, raw)
	}
	out := make([]Shot, len(list))
	for i, s := range list {
		a, err := answers(s.Answer)
		if err != nil || s.Question == "" {
			return nil, fmt.Errorf(`field "examples"[%d]: want a question and an answer`, i)
		}
		out[i] = Shot{Question: s.Question, Answer: strings.Join(a, ", ")}
	}
	return out, nil
}
