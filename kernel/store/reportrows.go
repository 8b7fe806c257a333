package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// The lean read side of the reports: an index of a run's samples (where each
// sits and how it ended, with no question, target or metadata decoded), the
// sample scores without their details, and the samples of one key range with
// their JSON columns left undecoded, so that a report of a 200,000-sample run
// reads each row once, in key order, and several ranges can be read at once.

// SamplePosition is one sample of an eval as an index of samples lists it.
type SamplePosition struct {
	ID         string
	Index      int // position in the task's stream
	Tokens     int // measured length
	Depth      float64
	Grid       *sdk.GridPoint // as the task asked for it; nil when it gave none
	Truncated  bool
	RequestKey string
	Failed     bool
	FailCode   string
	FailMsg    string
	// Lone: the sample failed before it was journaled as a sample, so it
	// has only its ID, request key and failure.
	Lone bool
	// Row is where the sample's row sits in its table (SQLite's rowid),
	// for SampleRows; 0 when unknown (PostgreSQL, a lone failure).
	Row int64
}

// EachSamplePosition calls fn for every sample of one eval of a run in key
// (sample ID) order, then for every failed sample that has no sample row,
// by ID. fn must not keep the *SamplePosition: it is reused.
func (s *Store) EachSamplePosition(ctx context.Context, runID, evalName string, fn func(*SamplePosition) error) error {
	if err := s.flush(ctx); err != nil {
		return fmt.Errorf("samples of %s/%s: %w", runID, evalName, err)
	}
	// The failures first, matched to the sample rows here: a run's
	// failures are few, its samples many, and a join would look each
	// sample up among them.
	type failure struct {
		key, code, msg string
		seen           bool
	}
	failures := map[string]*failure{}
	var (
		id string
		f  failure
	)
	err := s.eachRow(ctx, fmt.Sprintf("failures of %s/%s", runID, evalName),
		`SELECT sample_id, request_key, code, message FROM failures WHERE run_id = $1 AND eval_name = $2`, []any{runID, evalName},
		func(r *sql.Rows) error { f = failure{}; return r.Scan(&id, &f.key, &f.code, &f.msg) },
		func() error { fc := f; failures[id] = &fc; return nil })
	if err != nil {
		return err
	}
	var (
		p          SamplePosition
		gridLength sql.NullInt64
		gridDepth  sql.NullFloat64
	)
	row := "0" // PostgreSQL's rows have no stable number
	if s.dialect == sqliteDialect {
		row = "rowid"
	}
	err = s.eachRow(ctx, fmt.Sprintf("samples of %s/%s", runID, evalName),
		`SELECT sample_id, seq, length_tokens, depth, truncated, request_key, grid_length, grid_depth, `+row+`
		FROM samples WHERE run_id = $1 AND eval_name = $2
		ORDER BY sample_id`, []any{runID, evalName},
		func(r *sql.Rows) error {
			p = SamplePosition{}
			return r.Scan(&p.ID, &p.Index, &p.Tokens, &p.Depth, &p.Truncated, &p.RequestKey, &gridLength, &gridDepth, &p.Row)
		},
		func() error {
			if gridLength.Valid || gridDepth.Valid {
				p.Grid = &sdk.GridPoint{Length: int(gridLength.Int64), Depth: gridDepth.Float64}
			}
			if f := failures[p.ID]; f != nil {
				p.Failed, p.FailCode, p.FailMsg, f.seen = true, f.code, f.msg, true
			}
			return fn(&p)
		})
	if err != nil {
		return err
	}
	var lone []string
	for id, f := range failures {
		if !f.seen {
			lone = append(lone, id)
		}
	}
	slices.Sort(lone)
	for _, id := range lone {
		f := failures[id]
		p = SamplePosition{ID: id, Depth: -1, RequestKey: f.key, Failed: true, FailCode: f.code, FailMsg: f.msg, Lone: true}
		if err := fn(&p); err != nil {
			return err
		}
	}
	return nil
}

// ScoreValue is one journaled score.
type ScoreValue struct {
	SampleID string
	Scorer   string
	Value    float64
	Invalid  bool
	// Details is the score's details as journaled (a JSON object), valid
	// until fn returns: a report that keeps them copies them.
	Details []byte
}

// EachScoreValue calls fn for every score of one eval of a run, by scorer
// and then sample ID (the table's key order, read without sorting). fn must
// not keep the *ScoreValue: it is reused.
func (s *Store) EachScoreValue(ctx context.Context, runID, evalName string, fn func(*ScoreValue) error) error {
	if err := s.flush(ctx); err != nil {
		return fmt.Errorf("scores of %s/%s: %w", runID, evalName, err)
	}
	var v ScoreValue
	return s.eachRow(ctx, fmt.Sprintf("scores of %s/%s", runID, evalName),
		`SELECT sample_id, scorer, value, invalid, details FROM scores
		WHERE run_id = $1 AND eval_name = $2 ORDER BY scorer, sample_id`, []any{runID, evalName},
		func(r *sql.Rows) error {
			return r.Scan(&v.SampleID, &v.Scorer, &v.Value, &v.Invalid, (*sql.RawBytes)(&v.Details))
		},
		func() error { return fn(&v) })
}

// eachRow runs query and, for each row, scan then use: scan's errors (and
// the query's) are wrapped as what's, use's are the caller's own and pass
// as they are (a callback's stop sentinel stays comparable).
func (s *Store) eachRow(ctx context.Context, what, query string, args []any, scan func(*sql.Rows) error, use func() error) error {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := use(); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// RawSampleAnswer is one sample row with its answer and request, its JSON
// columns as journaled: a report that embeds them copies them as they are.
// Whether the sample failed is in its SamplePosition.
type RawSampleAnswer struct {
	ID           string
	Question     string
	Targets      []byte // JSON array
	Metadata     []byte // JSON object
	Tokens       int
	Tokenizer    string
	Depth        float64
	Truncated    bool
	SentTokens   int
	RequestKey   string
	Answered     bool
	Text         string
	FinishReason string
	PromptTokens int
	OutputTokens int
	Latency      time.Duration
	Request      []byte // JSON {messages, params}; empty when not answered
	// Scores are the sample's scores with their details (JSON objects),
	// in the order of the scorers asked for; Has false where none.
	Scores []RawScore
}

// RawScore is one scorer's score of a RawSampleAnswer.
type RawScore struct {
	Has     bool
	Value   float64
	Invalid bool
	Details []byte
}

// EachSampleAnswerRange calls fn, in key order, for every sample row of one
// eval of a run whose ID lies in [fromID, toID], with its answer, request
// and the scores of the scorers named (their attempts: RangeAttempts or
// EachAttempt). Lone failures (no sample row) are not
// read. fn must not keep the *RawSampleAnswer or its byte slices: they are
// reused. Each of the range's tables is read in one query, so ranges of a
// few hundred samples cost little more than one pass over the eval, and
// several ranges can be read at once. With at.Responses (nil at: none)
// the responses, and the samples where at says where they are, are read as
// ranges of their tables' rows rather than looked up by key.
func (s *Store) EachSampleAnswerRange(ctx context.Context, runID, evalName, fromID, toID string, scorers []string, at *RangeRows, fn func(*RawSampleAnswer) error) error {
	if err := s.flush(ctx); err != nil {
		return fmt.Errorf("samples of %s/%s: %w", runID, evalName, err)
	}
	// Scores first: a few rows per sample, by ID.
	byID := map[string][]RawScore{}
	for i, name := range scorers {
		err := func() error {
			rows, err := s.db.QueryContext(ctx, `SELECT sample_id, value, invalid, details FROM scores
				WHERE run_id = $1 AND eval_name = $2 AND scorer = $3 AND sample_id >= $4 AND sample_id <= $5`,
				runID, evalName, name, fromID, toID)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id string
				sc := RawScore{Has: true}
				if err := rows.Scan(&id, &sc.Value, &sc.Invalid, &sc.Details); err != nil {
					return err
				}
				scs := byID[id]
				if scs == nil {
					scs = make([]RawScore, len(scorers))
					byID[id] = scs
				}
				scs[i] = sc
			}
			return rows.Err()
		}()
		if err != nil {
			return fmt.Errorf("scores of %s/%s: %w", runID, evalName, err)
		}
	}
	none := make([]RawScore, len(scorers))
	if at != nil && at.Responses != nil {
		return s.eachSampleAnswerByRows(ctx, runID, evalName, fromID, toID, byID, none, at, fn)
	}

	rows, err := s.db.QueryContext(ctx, `SELECT sa.sample_id, sa.question, sa.targets, sa.metadata, sa.length_tokens, sa.tokenizer,
			sa.depth, sa.truncated, sa.sent_tokens, sa.request_key,
			r.key IS NOT NULL, COALESCE(r.text, ''), COALESCE(r.finish_reason, ''), COALESCE(r.prompt_tokens, 0),
			COALESCE(r.completion_tokens, 0), COALESCE(r.latency_ms, 0), COALESCE(r.request, '')
		FROM samples sa
			LEFT JOIN responses r ON r.key = sa.request_key
		WHERE sa.run_id = $1 AND sa.eval_name = $2 AND sa.sample_id >= $3 AND sa.sample_id <= $4
		ORDER BY sa.sample_id`, runID, evalName, fromID, toID)
	if err != nil {
		return fmt.Errorf("samples of %s/%s: %w", runID, evalName, err)
	}
	defer rows.Close()
	var (
		a                          RawSampleAnswer
		latencyMS                  float64
		targets, metadata, request sql.RawBytes
	)
	for rows.Next() {
		// RawBytes: the request, a whole context, is read into one
		// reused buffer rather than copied per sample.
		if err := rows.Scan(&a.ID, &a.Question, &targets, &metadata, &a.Tokens, &a.Tokenizer,
			&a.Depth, &a.Truncated, &a.SentTokens, &a.RequestKey,
			&a.Answered, &a.Text, &a.FinishReason, &a.PromptTokens, &a.OutputTokens, &latencyMS, &request); err != nil {
			return fmt.Errorf("samples of %s/%s: %w", runID, evalName, err)
		}
		a.Targets, a.Metadata, a.Request = targets, metadata, request
		a.Latency = time.Duration(latencyMS * float64(time.Millisecond))
		if a.Scores = byID[a.ID]; a.Scores == nil {
			a.Scores = none
		}
		if err := fn(&a); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("samples of %s/%s: %w", runID, evalName, err)
	}
	return nil
}

// RangeAttempts returns every journaled try at the requests of an eval's
// samples with IDs in [fromID, toID], by request key, oldest first (tries
// are journaled per request, so a request asked in an earlier run shows
// those too): one index lookup per request.
func (s *Store) RangeAttempts(ctx context.Context, runID, evalName, fromID, toID string) (map[string][]AttemptRecord, error) {
	if err := s.flush(ctx); err != nil {
		return nil, fmt.Errorf("attempts of %s/%s: %w", runID, evalName, err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT request_key, attempt, status, latency_ms, error, created_at FROM attempts
		WHERE request_key IN (SELECT request_key FROM samples
			WHERE run_id = $1 AND eval_name = $2 AND sample_id >= $3 AND sample_id <= $4)
		ORDER BY id`, runID, evalName, fromID, toID)
	if err != nil {
		return nil, fmt.Errorf("attempts of %s/%s: %w", runID, evalName, err)
	}
	return scanAttempts(rows, runID+"/"+evalName)
}

// AttemptCount is how many tries the journal holds, of every run.
func (s *Store) AttemptCount(ctx context.Context) (int, error) {
	if err := s.flush(ctx); err != nil {
		return 0, fmt.Errorf("count attempts: %w", err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM attempts`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count attempts: %w", err)
	}
	return n, nil
}

// EachAttempt calls fn for every try the journal holds, of every run,
// oldest first: one pass over the table in its own order, which costs less
// than looking each request's tries up when most of them are wanted. The
// tries come without their time (CreatedAt is zero), which no report shows
// and parsing 200,000 of costs a tenth of a second. key is valid until fn
// returns; statuses and errors, which repeat, share one string each.
func (s *Store) EachAttempt(ctx context.Context, fn func(key []byte, a AttemptRecord) error) error {
	if err := s.flush(ctx); err != nil {
		return fmt.Errorf("attempts: %w", err)
	}
	var (
		key, status, errMsg sql.RawBytes
		a                   AttemptRecord
		latencyMS           float64
	)
	strs := map[string]string{}
	intern := func(b []byte) string {
		s, ok := strs[string(b)]
		if !ok {
			s = string(b)
			strs[s] = s
		}
		return s
	}
	return s.eachRow(ctx, "attempts",
		`SELECT request_key, attempt, status, latency_ms, error FROM attempts ORDER BY id`, nil,
		func(r *sql.Rows) error {
			a = AttemptRecord{}
			return r.Scan(&key, &a.Attempt, &status, &latencyMS, &errMsg)
		},
		func() error {
			a.Status, a.Error = intern(status), intern(errMsg)
			a.Latency = time.Duration(latencyMS * float64(time.Millisecond))
			return fn(key, a)
		})
}

// SampleScores returns the scores, with details, of one sample of an eval
// by the scorers named, in their order (Has false where none). One lookup
// per scorer: the table's key leads with the scorer.
func (s *Store) SampleScores(ctx context.Context, runID, evalName, sampleID string, scorers []string) ([]RawScore, error) {
	if err := s.flush(ctx); err != nil {
		return nil, fmt.Errorf("scores of %s/%s/%s: %w", runID, evalName, sampleID, err)
	}
	out := make([]RawScore, len(scorers))
	for i, name := range scorers {
		sc := RawScore{Has: true}
		err := s.db.QueryRowContext(ctx, `SELECT value, invalid, details FROM scores
			WHERE run_id = $1 AND eval_name = $2 AND scorer = $3 AND sample_id = $4`, runID, evalName, name, sampleID).
			Scan(&sc.Value, &sc.Invalid, &sc.Details)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("scores of %s/%s/%s: scorer %s: %w", runID, evalName, sampleID, name, err)
		}
		out[i] = sc
	}
	return out, nil
}

// ResponseIdentity returns the identity of the model that gave the
// journaled response with this request key; false when none is journaled.
func (s *Store) ResponseIdentity(ctx context.Context, key string) (ModelIdentity, bool, error) {
	var (
		id  ModelIdentity
		raw string
	)
	if err := s.flush(ctx); err != nil {
		return id, false, fmt.Errorf("model identity of response %s: %w", key, err)
	}
	err := s.db.QueryRowContext(ctx, `SELECT identity FROM responses WHERE key = $1`, key).Scan(&raw)
	if err == sql.ErrNoRows {
		return id, false, nil
	}
	if err != nil {
		return id, false, fmt.Errorf("model identity of response %s: %w", key, err)
	}
	if err := json.Unmarshal([]byte(raw), &id); err != nil {
		return id, false, fmt.Errorf("model identity of response %s: %w", key, err)
	}
	return id, true, nil
}

// EvalCounts counts one eval's sample rows, its failures, and those of its
// failures that have no sample row (lone), without reading the rows: what
// a page about the eval says before its samples are read.
func (s *Store) EvalCounts(ctx context.Context, runID, evalName string) (rows, failed, lone int, err error) {
	if err := s.flush(ctx); err != nil {
		return 0, 0, 0, fmt.Errorf("counts of %s/%s: %w", runID, evalName, err)
	}
	err = s.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM samples WHERE run_id = $1 AND eval_name = $2),
		(SELECT count(*) FROM failures WHERE run_id = $1 AND eval_name = $2),
		(SELECT count(*) FROM failures f WHERE f.run_id = $1 AND f.eval_name = $2 AND NOT EXISTS
			(SELECT 1 FROM samples s WHERE s.run_id = f.run_id AND s.eval_name = f.eval_name AND s.sample_id = f.sample_id))`,
		runID, evalName).Scan(&rows, &failed, &lone)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("counts of %s/%s: %w", runID, evalName, err)
	}
	return rows, failed, lone, nil
}
