package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"hash/maphash"
	"slices"
	"time"
)

// ResponseRows says where each journaled response sits in its table (its
// SQLite rowid), by request key. Request keys are hashes, so looking a range
// of samples' responses up by key lands each lookup on another page of the
// key index: at 200,000 samples those lookups, and the page reads they
// cause, were the largest part of what a report paid SQLite for. Knowing the
// rows, a report reads a block's responses as one range of the table, in
// its own order (responses are journaled about as their samples are), and
// matches them to the samples in Go. Read-only once made.
type ResponseRows struct {
	// row is by a hash of the key: a fraction of the memory and time of
	// keeping 200,000 keys. Two keys of one hash keep one row; the other's
	// is found not to hold its key and is looked up by key.
	seed maphash.Seed
	row  map[uint64]int64
}

// find says which row holds the response to key, if any is known.
func (rr *ResponseRows) find(key string) (int64, bool) {
	row, ok := rr.row[maphash.String(rr.seed, key)]
	return row, ok
}

// ResponseRows reads where every journaled response sits, in one pass over
// the key index (which holds each key and its row). It returns nil, and no
// error, when the journal holds more than max responses, where that pass
// would cost more than the lookups it saves, and on PostgreSQL, whose rows
// have no stable number.
func (s *Store) ResponseRows(ctx context.Context, max int) (*ResponseRows, error) {
	if s.dialect != sqliteDialect {
		return nil, nil
	}
	if err := s.flush(ctx); err != nil {
		return nil, fmt.Errorf("response rows: %w", err)
	}
	// The largest rowid bounds the count, read from the table's last page.
	var last int64
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(max(rowid), 0) FROM responses`).Scan(&last); err != nil {
		return nil, fmt.Errorf("response rows: %w", err)
	}
	if last > int64(max) {
		return nil, nil
	}
	rr := &ResponseRows{seed: maphash.MakeSeed(), row: make(map[uint64]int64, last)}
	var (
		key []byte
		row int64
	)
	err := s.eachRow(ctx, "response rows", `SELECT key, rowid FROM responses`, nil,
		func(r *sql.Rows) error { return r.Scan((*sql.RawBytes)(&key), &row) },
		func() error { rr.row[maphash.Bytes(rr.seed, key)] = row; return nil })
	if err != nil {
		return nil, err
	}
	return rr, nil
}

// RangeRows says where a range of an eval's samples and their responses
// sit in the journal, so that EachSampleAnswerRange reads each as one
// range of its table's rows.
type RangeRows struct {
	Responses *ResponseRows // nil: read with a join by key
	// The range's sample rows lie in [FirstSample, LastSample]
	// (SamplePosition.Row), Samples of them; Samples 0: unknown.
	FirstSample, LastSample int64
	Samples                 int
}

// rangeSpan is how much of a table a block's range of rows (responses or
// samples) may span, as a multiple of the rows it wants (plus rangeSlack),
// and still be read as one range: a row read in a range costs less than
// half of one looked up by key (200k samples: ~1.3 s against ~3 s), so
// past it the rows between (other runs' or evals') would cost more to skip
// than looking the wanted ones up.
const (
	rangeSpan  = 2
	rangeSlack = 64
)

// answerRow is a sample row read for eachSampleAnswerByRows, its JSON
// columns and request as spans of the call's arena until every row is in.
type answerRow struct {
	a                          RawSampleAnswer
	targets, metadata, request [2]int
}

// answerBuf is what eachSampleAnswerByRows reads a range into, kept for
// the next (a report reads hundreds, a few at once): growing them anew for
// each cost more than the copies they hold.
type answerBuf struct {
	rows  []answerRow
	arena []byte
}

// eachSampleAnswerByRows is EachSampleAnswerRange reading the range's
// sample rows, then their responses as one range of rows of their table
// (rr), matched by row and checked by key; a response rr does not know (one
// journaled after it was read) or out of the range is looked up by key.
func (s *Store) eachSampleAnswerByRows(ctx context.Context, runID, evalName, fromID, toID string, byID map[string][]RawScore, none []RawScore, at *RangeRows, fn func(*RawSampleAnswer) error) error {
	rr := at.Responses
	what := fmt.Sprintf("samples of %s/%s", runID, evalName)
	buf, _ := s.answerBufs.Get().(*answerBuf)
	if buf == nil {
		buf = new(answerBuf)
	}
	defer s.answerBufs.Put(buf)
	rows, arena := buf.rows[:0], buf.arena[:0]
	// The buffers, as they grew, serve the next range.
	defer func() { buf.rows, buf.arena = rows[:0], arena[:0] }()
	var (
		cur               answerRow
		targets, metadata sql.RawBytes
		in                bool
	)
	const sampleColumns = `sample_id, question, targets, metadata, length_tokens, tokenizer, depth, truncated, sent_tokens, request_key`
	inDest := []any{&in, &cur.a.ID, &cur.a.Question, &targets, &metadata, &cur.a.Tokens, &cur.a.Tokenizer,
		&cur.a.Depth, &cur.a.Truncated, &cur.a.SentTokens, &cur.a.RequestKey}
	dest := inDest[1:]
	keep := func() error {
		cur.targets, arena = appendSpan(arena, targets)
		cur.metadata, arena = appendSpan(arena, metadata)
		rows = append(rows, cur)
		return nil
	}
	// The sample rows as one range of their table's rows when they lie
	// close together: walking the key index instead seeks each row from
	// the table's root. A row of the range that is not there (rewritten
	// since its position was read) has the range read by key instead.
	byRow := false
	if n := at.Samples; n > 0 && at.LastSample-at.FirstSample < int64(rangeSpan*n+rangeSlack) {
		err := s.eachRow(ctx, what, `SELECT run_id = $1 AND eval_name = $2 AND sample_id >= $3 AND sample_id <= $4, `+sampleColumns+`
			FROM samples WHERE rowid >= $5 AND rowid <= $6`, []any{runID, evalName, fromID, toID, at.FirstSample, at.LastSample},
			func(r *sql.Rows) error { return r.Scan(inDest...) },
			func() error {
				if !in {
					return nil // another eval's, or out of the range
				}
				return keep()
			})
		if err != nil {
			return err
		}
		byID := func(x, y answerRow) int { return cmp.Compare(x.a.ID, y.a.ID) }
		if byRow = len(rows) >= n; byRow && !slices.IsSortedFunc(rows, byID) {
			slices.SortStableFunc(rows, byID)
		} else if !byRow {
			rows, arena = rows[:0], arena[:0]
		}
	}
	if !byRow {
		err := s.eachRow(ctx, what, `SELECT `+sampleColumns+`
			FROM samples WHERE run_id = $1 AND eval_name = $2 AND sample_id >= $3 AND sample_id <= $4
			ORDER BY sample_id`, []any{runID, evalName, fromID, toID},
			func(r *sql.Rows) error { return r.Scan(dest...) }, keep)
		if err != nil {
			return err
		}
	}

	// The wanted rows of the response table, in its order, each with the
	// sample that wants it (two samples may share a request).
	type want struct {
		row int64
		i   int
	}
	var wants []want
	for i := range rows {
		if row, ok := rr.find(rows[i].a.RequestKey); ok {
			wants = append(wants, want{row, i})
		}
	}
	slices.SortFunc(wants, func(x, y want) int { return cmp.Compare(x.row, y.row) })
	var (
		resp responseScan
		row  int64
		key  sql.RawBytes
	)
	if n := len(wants); n > 0 && wants[n-1].row-wants[0].row < int64(rangeSpan*n+rangeSlack) {
		next, dest := 0, append([]any{&row, &key}, resp.dest()...)
		err := s.eachRow(ctx, what, `SELECT rowid, key, `+responseColumns+` FROM responses WHERE rowid >= $1 AND rowid <= $2`,
			[]any{wants[0].row, wants[n-1].row},
			func(r *sql.Rows) error { return r.Scan(dest...) },
			func() error {
				for next < n && wants[next].row < row {
					next++ // gone since rr was read: looked up below
				}
				for ; next < n && wants[next].row == row; next++ {
					if r := &rows[wants[next].i]; string(key) == r.a.RequestKey {
						arena = resp.set(r, arena)
					} // else the row holds another response (a hash's other key)
				}
				return nil
			})
		if err != nil {
			return err
		}
	}
	// What the range did not answer: a request without a response (a
	// failure), one journaled after rr was read, or a block spread over
	// too much of the table.
	for i := range rows {
		r := &rows[i]
		if r.a.Answered {
			continue
		}
		err := s.eachRow(ctx, what, `SELECT `+responseColumns+` FROM responses WHERE key = $1`, []any{r.a.RequestKey},
			func(q *sql.Rows) error { return q.Scan(resp.dest()...) },
			func() error { arena = resp.set(r, arena); return nil })
		if err != nil {
			return err
		}
	}

	for i := range rows {
		r := &rows[i]
		a := &r.a
		a.Targets, a.Metadata, a.Request = arena[r.targets[0]:r.targets[1]], arena[r.metadata[0]:r.metadata[1]], arena[r.request[0]:r.request[1]]
		if a.Scores = byID[a.ID]; a.Scores == nil {
			a.Scores = none
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

// responseColumns are what a sample's answer takes of its response, as
// responseScan reads them.
const responseColumns = `text, finish_reason, prompt_tokens, completion_tokens, latency_ms, request`

// responseScan is a row of responseColumns as scanned.
type responseScan struct {
	text, finish   string
	prompt, output int
	latencyMS      float64
	request        sql.RawBytes
}

func (rs *responseScan) dest() []any {
	return []any{&rs.text, &rs.finish, &rs.prompt, &rs.output, &rs.latencyMS, &rs.request}
}

// set makes the response r's answer, its request copied to arena.
func (rs *responseScan) set(r *answerRow, arena []byte) []byte {
	a := &r.a
	a.Answered, a.Text, a.FinishReason, a.PromptTokens, a.OutputTokens = true, rs.text, rs.finish, rs.prompt, rs.output
	a.Latency = time.Duration(rs.latencyMS * float64(time.Millisecond))
	r.request, arena = appendSpan(arena, rs.request)
	return arena
}

// appendSpan appends b to arena and says where it went.
func appendSpan(arena, b []byte) ([2]int, []byte) {
	start := len(arena)
	arena = append(arena, b...)
	return [2]int{start, len(arena)}, arena
}
