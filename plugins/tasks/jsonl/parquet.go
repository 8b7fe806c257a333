package jsonl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/hayloft/hayloft/sdk"
)

// isParquet tells a Parquet file by its extension, as Hugging Face names
// its shards.
func isParquet(path string) bool { return strings.EqualFold(filepath.Ext(path), ".parquet") }

// sourceFiles resolves the path option: one file, or the .parquet and
// .jsonl files directly in a directory (a split's shards), in name order.
// Subdirectories are not entered, so that pointing at one split never
// mixes in another.
func sourceFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if !e.IsDir() && (ext == ".parquet" || ext == ".jsonl") {
			files = append(files, filepath.Join(path, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no .parquet or .jsonl files in the directory", path)
	}
	sort.Strings(files)
	return files, nil
}

// parquetFile is an open Parquet file: its footer read, its rows not.
type parquetFile struct {
	*parquet.File
	osFile *os.File
}

func (f *parquetFile) Close() error { return f.osFile.Close() }

func openParquet(path string) (*parquetFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: not a readable Parquet file: %w", path, err)
	}
	return &parquetFile{File: pf, osFile: f}, nil
}

// parquetRecords streams the rows of one Parquet file, each converted to the
// JSON fields the JSONL path maps to samples, so both formats share one
// mapping. Rows are read a page at a time, never the whole file.
func (t *Task) parquetRecords(src string) iter.Seq2[record, error] {
	return func(yield func(record, error) bool) {
		f, err := openParquet(src)
		if err != nil {
			yield(record{}, err)
			return
		}
		defer f.Close()
		r := parquet.NewReader(f.File)
		defer r.Close()
		for row := 1; ; row++ {
			at := record{src: src, n: row, parquet: true}
			m, err := readRow(r)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(record{}, fmt.Errorf("%s: %w", at.where(), err))
				return
			}
			fields := make(map[string]json.RawMessage, len(m))
			for col, v := range m {
				if t.opts.InvalidUTF8 != sdk.UTF8Replace && !validStrings(v) {
					yield(record{}, fmt.Errorf("%s: column %q: invalid UTF-8 (fix the data, or set invalid_utf8 = %q to replace invalid bytes with U+FFFD)", at.where(), col, sdk.UTF8Replace))
					return
				}
				// encoding/json writes invalid UTF-8 as U+FFFD: the replace
				// policy.
				b, err := json.Marshal(v)
				if err != nil {
					yield(record{}, fmt.Errorf("%s: column %q: %w", at.where(), col, err))
					return
				}
				fields[col] = b
			}
			at.fields, at.id = fields, t.recordID(src, row)
			if !yield(at, nil) {
				return
			}
		}
	}
}

// readRow reads the next row as column name → value (lists as []any, groups
// as map[string]any). The library reports some malformed files by
// panicking; that becomes an error here rather than crossing the plugin
// boundary.
func readRow(r *parquet.Reader) (m map[string]any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("reading the row: %v", p)
		}
	}()
	m = map[string]any{}
	if err := r.Read(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// validStrings reports whether every string in v is valid UTF-8.
func validStrings(v any) bool {
	switch v := v.(type) {
	case string:
		return utf8.ValidString(v)
	case []any:
		for _, x := range v {
			if !validStrings(x) {
				return false
			}
		}
	case map[string]any:
		for _, x := range v {
			if !validStrings(x) {
				return false
			}
		}
	}
	return true
}
