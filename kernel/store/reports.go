package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// The read side that reports use: a whole eval's samples with their answers
// in one pass, rather than one lookup per sample, so a 200,000-sample run is
// read in seconds.

// SampleAnswer is one sample of an eval as a report shows it: the sample,
// and either the answer it got or why it got none.
type SampleAnswer struct {
	SampleRecord
	// Answered: a response is journaled under the sample's request key.
	Answered     bool
	Text         string
	FinishReason string
	PromptTokens int
	OutputTokens int
	Latency      time.Duration
	// Request is the journaled request, {"messages": [...], "params": {...}}:
	// the exact messages sent after fitting. Empty unless asked for.
	Request json.RawMessage
	// Failed: the sample's request failed for good in this run. A failed
	// sample that was never journaled as a sample has only its ID,
	// RequestKey and the failure.
	Failed      bool
	FailCode    string
	FailMessage string
}

// Read says how much of each sample EachSampleAnswer reads: the fewer
// columns, the faster a 200,000-sample eval is read.
type Read int

const (
	// ReadSample reads the sample and its failure, not its answer.
	ReadSample Read = iota
	// ReadAnswer adds the answer.
	ReadAnswer
	// ReadRequest adds the request, which holds the whole context.
	ReadRequest
)

// EachSampleAnswer calls fn for every sample of one eval of a run by ID,
// then for every failed sample that has no sample row, by ID, reading
// as much of each as read says. fn must not keep the *SampleAnswer: it is
// reused. The order is the primary key's, which SQLite reads without
// sorting: sorting by stream position would sort every row with its whole
// request, which on a 200,000-sample journal spills to disk.
func (s *Store) EachSampleAnswer(ctx context.Context, runID, evalName string, read Read, fn func(*SampleAnswer) error) error {
	if err := s.eachSample(ctx, runID, evalName, "", read, fn); err != nil {
		return err
	}
	return s.eachLoneFailure(ctx, runID, evalName, fn)
}

// eachSample reads the sample rows of an eval, or only the one with
// sampleID when that is set.
func (s *Store) eachSample(ctx context.Context, runID, evalName, sampleID string, read Read, fn func(*SampleAnswer) error) error {
	// Samples, answers and failures come through this process's log; the
	// lone failures and failure read after this see the same flush.
	if err := s.flush(ctx); err != nil {
		return fmt.Errorf("samples of %s/%s: %w", runID, evalName, err)
	}
	answer, requestCol, join := `0, '', '', 0, 0, 0`, `''`, ""
	if read >= ReadAnswer {
		answer = `r.key IS NOT NULL, COALESCE(r.text, ''), COALESCE(r.finish_reason, ''), COALESCE(r.prompt_tokens, 0),
			COALESCE(r.completion_tokens, 0), COALESCE(r.latency_ms, 0)`
		join = `LEFT JOIN responses r ON r.key = sa.request_key`
	}
	if read >= ReadRequest {
		requestCol = `COALESCE(r.request, '')`
	}
	args := []any{runID, evalName}
	where := ""
	if sampleID != "" {
		where = " AND sa.sample_id = $3"
		args = append(args, sampleID)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT sa.sample_id, sa.seq, sa.question, sa.targets, sa.length_tokens, sa.tokenizer,
			sa.depth, sa.language, sa.subtask, sa.metadata, sa.retriever, sa.truncated, sa.sent_tokens, sa.request_key,
			`+answer+`, `+requestCol+`,
			f.sample_id IS NOT NULL, COALESCE(f.code, ''), COALESCE(f.message, ''), sa.grid_length, sa.grid_depth
		FROM samples sa
			`+join+`
			LEFT JOIN failures f ON f.run_id = sa.run_id AND f.eval_name = sa.eval_name AND f.sample_id = sa.sample_id
		WHERE sa.run_id = $1 AND sa.eval_name = $2`+where+`
		ORDER BY sa.sample_id`, args...)
	if err != nil {
		return fmt.Errorf("samples of %s/%s: %w", runID, evalName, err)
	}
	defer rows.Close()
	var (
		a                 SampleAnswer
		targets, metadata string
		request           []byte
		latencyMS         float64
		gridLength        sql.NullInt64
		gridDepth         sql.NullFloat64
	)
	for rows.Next() {
		a = SampleAnswer{}
		if err := rows.Scan(&a.ID, &a.Index, &a.Question, &targets, &a.Length.Tokens, &a.Length.Tokenizer,
			&a.Depth, &a.Language, &a.Subtask, &metadata, &a.Retriever, &a.Truncated, &a.SentTokens, &a.RequestKey,
			&a.Answered, &a.Text, &a.FinishReason, &a.PromptTokens, &a.OutputTokens, &latencyMS, &request,
			&a.Failed, &a.FailCode, &a.FailMessage, &gridLength, &gridDepth); err != nil {
			return fmt.Errorf("samples of %s/%s: %w", runID, evalName, err)
		}
		if targets != "[]" {
			if err := json.Unmarshal([]byte(targets), &a.Targets); err != nil {
				return fmt.Errorf("samples of %s/%s: sample %s: targets: %w", runID, evalName, a.ID, err)
			}
		}
		if metadata != "{}" {
			if err := json.Unmarshal([]byte(metadata), &a.Metadata); err != nil {
				return fmt.Errorf("samples of %s/%s: sample %s: metadata: %w", runID, evalName, a.ID, err)
			}
		}
		if gridLength.Valid || gridDepth.Valid {
			a.Grid = &sdk.GridPoint{Length: int(gridLength.Int64), Depth: gridDepth.Float64}
		}
		a.Latency = time.Duration(latencyMS * float64(time.Millisecond))
		if len(request) > 0 {
			a.Request = request
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

// eachLoneFailure reads the failures of an eval's samples that have no
// sample row.
func (s *Store) eachLoneFailure(ctx context.Context, runID, evalName string, fn func(*SampleAnswer) error) error {
	var a SampleAnswer
	// Failures of samples never journaled as samples (the request failed
	// before PutResult).
	frows, err := s.db.QueryContext(ctx, `SELECT f.sample_id, f.request_key, f.code, f.message FROM failures f
		WHERE f.run_id = $1 AND f.eval_name = $2 AND NOT EXISTS (
			SELECT 1 FROM samples sa WHERE sa.run_id = f.run_id AND sa.eval_name = f.eval_name AND sa.sample_id = f.sample_id)
		ORDER BY f.sample_id`, runID, evalName)
	if err != nil {
		return fmt.Errorf("failures of %s/%s: %w", runID, evalName, err)
	}
	defer frows.Close()
	for frows.Next() {
		a = SampleAnswer{Failed: true}
		a.Depth = -1
		if err := frows.Scan(&a.ID, &a.RequestKey, &a.FailCode, &a.FailMessage); err != nil {
			return fmt.Errorf("failures of %s/%s: %w", runID, evalName, err)
		}
		if err := fn(&a); err != nil {
			return err
		}
	}
	if err := frows.Err(); err != nil {
		return fmt.Errorf("failures of %s/%s: %w", runID, evalName, err)
	}
	return nil
}

// SampleAnswerByID returns one sample of an eval with its request, or
// ErrNotFound.
func (s *Store) SampleAnswerByID(ctx context.Context, runID, evalName, sampleID string) (*SampleAnswer, error) {
	var found *SampleAnswer
	err := s.eachSample(ctx, runID, evalName, sampleID, ReadRequest, func(a *SampleAnswer) error {
		c := *a
		found = &c
		return nil
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return s.failure(ctx, runID, evalName, sampleID)
	}
	return found, nil
}

func (s *Store) failure(ctx context.Context, runID, evalName, sampleID string) (*SampleAnswer, error) {
	a := &SampleAnswer{Failed: true}
	a.ID, a.Depth = sampleID, -1
	err := s.db.QueryRowContext(ctx, `SELECT request_key, code, message FROM failures WHERE run_id = $1 AND eval_name = $2 AND sample_id = $3`,
		runID, evalName, sampleID).Scan(&a.RequestKey, &a.FailCode, &a.FailMessage)
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("sample %s/%s/%s: %w", runID, evalName, sampleID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sample %s/%s/%s: %w", runID, evalName, sampleID, err)
	}
	return a, nil
}

// EvalAttempts returns every journaled try at the requests of an eval's
// samples (answered or failed), by request key, oldest first. Tries are
// journaled per request, so a request asked in an earlier run shows those
// tries too.
func (s *Store) EvalAttempts(ctx context.Context, runID, evalName string) (map[string][]AttemptRecord, error) {
	if err := s.flush(ctx); err != nil {
		return nil, fmt.Errorf("attempts of %s/%s: %w", runID, evalName, err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT a.request_key, a.attempt, a.status, a.latency_ms, a.error, a.created_at
		FROM attempts a WHERE a.request_key IN (
			SELECT request_key FROM samples WHERE run_id = $1 AND eval_name = $2
			UNION SELECT request_key FROM failures WHERE run_id = $1 AND eval_name = $2)
		ORDER BY a.id`, runID, evalName)
	if err != nil {
		return nil, fmt.Errorf("attempts of %s/%s: %w", runID, evalName, err)
	}
	return scanAttempts(rows, runID+"/"+evalName)
}

// scanAttempts reads rows of (request_key, attempt, status, latency_ms,
// error, created_at) by request key, in their order, and closes rows; what
// names the rows in errors.
func scanAttempts(rows *sql.Rows, what string) (map[string][]AttemptRecord, error) {
	defer rows.Close()
	out := map[string][]AttemptRecord{}
	for rows.Next() {
		var (
			key       string
			a         AttemptRecord
			latencyMS float64
			created   string
		)
		if err := rows.Scan(&key, &a.Attempt, &a.Status, &latencyMS, &a.Error, &created); err != nil {
			return nil, fmt.Errorf("attempts of %s: %w", what, err)
		}
		a.Latency = time.Duration(latencyMS * float64(time.Millisecond))
		var err error
		if a.CreatedAt, err = parseTime(created); err != nil {
			return nil, fmt.Errorf("attempts of %s: request %s: created_at: %w", what, key, err)
		}
		out[key] = append(out[key], a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("attempts of %s: %w", what, err)
	}
	return out, nil
}

// EvalIdentity returns the identity of the model that answered an eval's
// samples, as journaled with its first answer; false when none answered.
func (s *Store) EvalIdentity(ctx context.Context, runID, evalName string) (ModelIdentity, bool, error) {
	var (
		id  ModelIdentity
		raw string
	)
	if err := s.flush(ctx); err != nil {
		return id, false, fmt.Errorf("model identity of %s/%s: %w", runID, evalName, err)
	}
	err := s.db.QueryRowContext(ctx, `SELECT r.identity FROM samples sa JOIN responses r ON r.key = sa.request_key
		WHERE sa.run_id = $1 AND sa.eval_name = $2 ORDER BY sa.seq LIMIT 1`, runID, evalName).Scan(&raw)
	if err == sql.ErrNoRows {
		return id, false, nil
	}
	if err != nil {
		return id, false, fmt.Errorf("model identity of %s/%s: %w", runID, evalName, err)
	}
	if err := json.Unmarshal([]byte(raw), &id); err != nil {
		return id, false, fmt.Errorf("model identity of %s/%s: %w", runID, evalName, err)
	}
	return id, true, nil
}

// RunProgress counts the samples and failures journaled for a run so far:
// a live view redraws when they change.
func (s *Store) RunProgress(ctx context.Context, runID string) (samples, failures int, err error) {
	if err := s.flush(ctx); err != nil {
		return 0, 0, fmt.Errorf("progress of run %s: %w", runID, err)
	}
	err = s.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM samples WHERE run_id = $1), (SELECT count(*) FROM failures WHERE run_id = $1)`, runID).
		Scan(&samples, &failures)
	if err != nil {
		return 0, 0, fmt.Errorf("progress of run %s: %w", runID, err)
	}
	return samples, failures, nil
}

// ScoreRow is one journaled score as a report reads it: Details is the
// journaled JSON object, undecoded (a report embeds it as it is).
type ScoreRow struct {
	SampleID string
	Scorer   string
	Value    float64
	Invalid  bool
	Details  json.RawMessage
}

// EachScore calls fn for every score of every scorer in one eval of a run,
// in no particular order. fn must not keep the *ScoreRow: it is reused.
func (s *Store) EachScore(ctx context.Context, runID, evalName string, fn func(*ScoreRow) error) error {
	if err := s.flush(ctx); err != nil {
		return fmt.Errorf("scores of %s/%s: %w", runID, evalName, err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT sample_id, scorer, value, invalid, details FROM scores
		WHERE run_id = $1 AND eval_name = $2`, runID, evalName)
	if err != nil {
		return fmt.Errorf("scores of %s/%s: %w", runID, evalName, err)
	}
	defer rows.Close()
	var r ScoreRow
	for rows.Next() {
		var details []byte
		if err := rows.Scan(&r.SampleID, &r.Scorer, &r.Value, &r.Invalid, &details); err != nil {
			return fmt.Errorf("scores of %s/%s: %w", runID, evalName, err)
		}
		r.Details = details
		if err := fn(&r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scores of %s/%s: %w", runID, evalName, err)
	}
	return nil
}
