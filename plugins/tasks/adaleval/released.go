package adaleval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// releasedFile is one released file and how many of its items a run uses.
type releasedFile struct {
	Path    string
	Setting Setting
	N       int // items taken, after subset and limit
	// The checked cases, kept from Provision's pass when they fit the
	// task's memory budget; nil means stream the file again.
	ts []tsCase
	ba []baCase
}

// keepBudget is how many bytes of released text a task keeps in memory
// after checking it, so that a run reads each file once; larger inputs
// are read again, one item at a time, when streamed.
const keepBudget = 256 << 20

// findReleased lists the released files of kind at path: the file itself,
// or every textsort_*.json / stackselect_*.json in the directory.
func findReleased(kind, path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	prefix := "textsort_"
	if kind == KindBestAnswer {
		prefix = "stackselect_"
	}
	files, err := filepath.Glob(filepath.Join(path, prefix+"*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no %s*.json files", path, prefix)
	}
	return files, nil
}

// scanItems streams the JSON array in path, decoding each item into a
// fresh T and calling fn with its index until fn returns false or max items
// are read (max <= 0: all). Only one item is in memory at a time.
func scanItems[T any](path string, max int, fn func(i int, it *T) (bool, error)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: not a JSON array: %w", path, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("%s: not a JSON array (starts with %v)", path, tok)
	}
	for i := 0; dec.More(); i++ {
		if max > 0 && i >= max {
			return nil
		}
		it := new(T)
		if err := dec.Decode(it); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return fmt.Errorf("%s: item %d: field %s: want %s, got %s", path, i, te.Field, te.Type, te.Value)
			}
			return fmt.Errorf("%s: item %d: malformed JSON: %w", path, i, err)
		}
		more, err := fn(i, it)
		if err != nil {
			return fmt.Errorf("%s: item %d: %w", path, i, err)
		}
		if !more {
			return nil
		}
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: malformed JSON after the last item: %w", path, err)
	}
	return nil
}

// bestAnswerItem is one item of stackselect_*.json.
type bestAnswerItem struct {
	QuestionID json.RawMessage `json:"question_id"`
	Question   *string         `json:"question"`
	AllAnswers []string        `json:"all_answers"`
	Answer     *string         `json:"answer"`
	Tags       json.RawMessage `json:"tags"`
}

var designation = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^A([0-9]+)$`) })

// decodeBestAnswer checks one released BestAnswer item and returns its case.
func decodeBestAnswer(it *bestAnswerItem) (baCase, error) {
	var c baCase
	switch {
	case it.QuestionID == nil:
		return c, errors.New("missing field question_id")
	case it.Question == nil:
		return c, errors.New("missing field question")
	case it.AllAnswers == nil:
		return c, errors.New("missing field all_answers")
	case len(it.AllAnswers) == 0:
		return c, errors.New("all_answers is empty")
	case it.Answer == nil:
		return c, errors.New("missing field answer")
	}
	id, err := scalarString(it.QuestionID)
	if err != nil {
		return c, fmt.Errorf("question_id: %w", err)
	}
	m := designation().FindStringSubmatch(*it.Answer)
	if m == nil {
		return c, fmt.Errorf("answer %q: want A<k>", *it.Answer)
	}
	k, _ := strconv.Atoi(m[1])
	if k < 1 || k > len(it.AllAnswers) {
		return c, fmt.Errorf("answer %q out of range: the item has %d answers", *it.Answer, len(it.AllAnswers))
	}
	tags, err := parseTags(it.Tags)
	if err != nil {
		return c, fmt.Errorf("tags: %w", err)
	}
	return baCase{QuestionID: id, Question: *it.Question, Answers: it.AllAnswers, Truth: k - 1, Tags: tags}, nil
}

// scalarString reads an id given as a JSON string or number.
func scalarString(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("want a string or number, got %s", raw)
}

// pyListItem matches one quoted item of a Python list literal.
var pyListItem = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"`) })

// parseTags reads tags as a JSON list of strings or as the string of a
// Python list ("['python', 'excel']"), the two shapes the files use.
func parseTags(raw json.RawMessage) ([]string, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("want a list of strings or a Python list in a string, got %s", raw)
	}
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil, fmt.Errorf("%q is not a list", s)
	}
	for _, m := range pyListItem().FindAllStringSubmatch(s, -1) {
		list = append(list, m[1]+m[2])
	}
	return list, nil
}

// tsortItem is one item of textsort_*.json.
type tsortItem struct {
	Prompt     *string         `json:"prompt"`
	Answer     json.RawMessage `json:"answer"`
	BookID     json.RawMessage `json:"book_id"`
	ParaOffset json.RawMessage `json:"para_offset"`
}

// decodeTSort checks one released TSort item and returns its case.
func decodeTSort(it *tsortItem) (tsCase, error) {
	var c tsCase
	switch {
	case it.Prompt == nil:
		return c, errors.New("missing field prompt")
	case it.Answer == nil:
		return c, errors.New("missing field answer")
	}
	ans, err := parseOrder(it.Answer)
	if err != nil {
		return c, fmt.Errorf("answer: %w", err)
	}
	c = tsCase{Prompt: *it.Prompt, Answer: ans}
	if it.BookID != nil {
		c.BookID, _ = scalarString(it.BookID)
	}
	if it.ParaOffset != nil {
		c.ParaOffset, _ = scalarString(it.ParaOffset)
	}
	return c, nil
}

// parseOrder reads a TSort answer, a list or the JSON text of one, and
// checks it is an order of the four parts.
func parseOrder(raw json.RawMessage) ([]int, error) {
	var order []int
	if err := json.Unmarshal(raw, &order); err != nil {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("want a list or a JSON string of one, got %s", raw)
		}
		if err := json.Unmarshal([]byte(s), &order); err != nil {
			return nil, fmt.Errorf("%q is not a JSON list of integers", s)
		}
	}
	if len(order) != 4 {
		return nil, fmt.Errorf("%v: want an order of 4 parts", order)
	}
	seen := [5]bool{}
	for _, v := range order {
		if v < 1 || v > 4 || seen[v] {
			return nil, fmt.Errorf("%v: out of range, want a permutation of 1..4", order)
		}
		seen[v] = true
	}
	return order, nil
}
