package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// CachedResponse is a journaled successful response.
type CachedResponse struct {
	Key       string
	Identity  ModelIdentity
	Response  *sdk.GenerateResponse // Attempts is not filled in; see Attempts
	Latency   time.Duration
	CreatedAt time.Time
}

// LookupResponse returns the cached response for key. Only successful
// responses are cached, so a request that failed last time misses and is
// asked again.
func (s *Store) LookupResponse(ctx context.Context, key string) (*CachedResponse, bool, error) {
	if known, err := s.known.has(ctx, s.db, key); err != nil {
		return nil, false, fmt.Errorf("lookup response %s: %w", key, err)
	} else if !known {
		return nil, false, nil
	}
	var (
		c                CachedResponse
		identity         string
		latencyMS        float64
		created          string
		text, finish     string
		prompt, complete int
		cachedTokens     sql.NullInt64
	)
	scan := func() error {
		return s.stmts[selectResponse].QueryRowContext(ctx, key).
			Scan(&identity, &text, &finish, &prompt, &complete, &latencyMS, &created, &cachedTokens)
	}
	err := scan()
	if errors.Is(err, sql.ErrNoRows) {
		// Known but not in the database: journaled by this process and
		// still on its way from the log (two evals sending one request).
		if err := s.flush(ctx); err != nil {
			return nil, false, fmt.Errorf("lookup response %s: %w", key, err)
		}
		err = scan()
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("lookup response %s: %w", key, err)
	}
	if err := json.Unmarshal([]byte(identity), &c.Identity); err != nil {
		return nil, false, fmt.Errorf("lookup response %s: identity: %w", key, err)
	}
	if c.CreatedAt, err = parseTime(created); err != nil {
		return nil, false, fmt.Errorf("lookup response %s: created_at: %w", key, err)
	}
	c.Key = key
	c.Latency = time.Duration(latencyMS * float64(time.Millisecond))
	c.Response = &sdk.GenerateResponse{
		Text:         text,
		FinishReason: finish,
		Usage:        sdk.Usage{PromptTokens: prompt, CompletionTokens: complete},
	}
	if cachedTokens.Valid {
		n := int(cachedTokens.Int64)
		c.Response.Usage.CachedTokens = &n
	}
	return &c, true, nil
}

// PutResponse journals a successful response to the request r, keyed by
// k, with every attempt it took, and returns once it is committed. The first
// response stored under a key wins: a second one (two evals sending the
// same request at once) is dropped, so every reader of the cache sees the
// same answer. An identity that looks as if it carries a credential is
// refused. The journal keeps the request's messages and params; the
// sample is journaled apart (PutResult), since storing it here would keep
// every long context twice.
func (s *Store) PutResponse(ctx context.Context, k *Keyer, r Keyed, resp *sdk.GenerateResponse, latency time.Duration) error {
	if k.invalid != nil {
		return fmt.Errorf("put response %s: %w", r.Key, k.invalid)
	}
	if resp == nil {
		return fmt.Errorf("put response %s: nil response", r.Key)
	}
	rows, err := responseRows(k, r, resp, latency)
	if err != nil {
		return fmt.Errorf("put response %s: %w", r.Key, err)
	}
	// Known before it is logged, so that of two puts of one key at once
	// one counts as repeated: the log keeps the first it was handed.
	if !s.known.addNew(r.Key) {
		s.repeated.Add(1)
	}
	if err := s.logRows(ctx, rows...); err != nil {
		return fmt.Errorf("put response %s: %w", r.Key, err)
	}
	return nil
}

// RepeatedResponses is how many PutResponse calls of this Store found
// their key known already: journaled by this process, or in the journal
// when LookupResponse first read it. Their response may not be the one
// the journal keeps (the first wins), so a sum over a row's answers as
// the caller saw them (see runner's prefix-cache use) may differ from the
// journal's own while this count moves; when it stays, every response
// this process put is the one kept, unless another process put the same
// key meanwhile.
func (s *Store) RepeatedResponses() int64 { return s.repeated.Load() }

// responseRows are the rows of one PutResponse: the response, then its
// attempts.
func responseRows(k *Keyer, r Keyed, resp *sdk.GenerateResponse, latency time.Duration) ([]row, error) {
	request, err := r.journalValue()
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	rows := make([]row, 1, 1+len(resp.Attempts))
	rows[0] = row{table: responsesTable, args: []any{r.Key, k.identity, request, resp.Text, resp.FinishReason,
		resp.Usage.PromptTokens, resp.Usage.CompletionTokens, ms(latency), nullInt(resp.Usage.CachedTokens)}}
	return appendAttempts(rows, r.Key, resp.Attempts), nil
}

// knownKeys is the set of response keys the journal holds, loaded on the
// first lookup and kept current by PutResponse: a run over new samples then
// answers its misses from memory instead of querying SQLite for each. A
// response another process journals meanwhile only costs a miss here: the
// request is asked again, never answered wrongly.
type knownKeys struct {
	once sync.Once
	err  error
	mu   sync.RWMutex
	keys map[string]struct{}
}

func (k *knownKeys) has(ctx context.Context, db *sql.DB, key string) (bool, error) {
	// One caller's cancellation must not poison the set for the others.
	k.once.Do(func() { k.err = k.load(context.WithoutCancel(ctx), db) })
	if k.err != nil {
		return false, k.err
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	_, ok := k.keys[key]
	return ok, nil
}

func (k *knownKeys) load(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT key FROM responses`)
	if err != nil {
		return fmt.Errorf("load response keys: %w", err)
	}
	defer rows.Close()
	keys := map[string]struct{}{}
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			return fmt.Errorf("load response keys: %w", err)
		}
		keys[key] = struct{}{}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load response keys: %w", err)
	}
	k.mu.Lock()
	for key := range k.keys { // added while loading
		keys[key] = struct{}{}
	}
	k.keys = keys
	k.mu.Unlock()
	return nil
}

// addNew adds key and reports whether it was not there yet.
func (k *knownKeys) addNew(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil {
		k.keys = map[string]struct{}{}
	}
	_, had := k.keys[key]
	k.keys[key] = struct{}{}
	return !had
}

const selectResponse = `SELECT identity, text, finish_reason, prompt_tokens, completion_tokens, latency_ms, created_at, cached_tokens
		FROM responses WHERE key = $1`

var (
	// The first response under a key wins.
	responsesTable = &table{
		name: "responses",
		columns: []string{"key", "identity", "request", "text", "finish_reason",
			"prompt_tokens", "completion_tokens", "latency_ms", "cached_tokens", "created_at"},
		conflict: `ON CONFLICT (key) DO NOTHING`,
		stamped:  true,
	}
	failuresTable = &table{
		name:    "failures",
		columns: []string{"run_id", "eval_name", "sample_id", "request_key", "code", "message", "created_at"},
		conflict: `ON CONFLICT (run_id, eval_name, sample_id) DO UPDATE SET request_key = excluded.request_key,
				code = excluded.code, message = excluded.message, created_at = excluded.created_at`,
		stamped: true,
	}
	attemptsTable = &table{
		name:    "attempts",
		columns: []string{"request_key", "attempt", "status", "latency_ms", "error", "created_at"},
		stamped: true,
	}
)

// Failure codes PutFailure records for errors that carry none of their own.
const (
	CodeRetriesExhausted = "retries_exhausted"
	CodeCanceled         = "canceled"
	CodeTimeout          = "timeout"
	CodeError            = "error"
)

// Failure is a sample whose request did not get an answer.
type Failure struct {
	SampleID   string
	RequestKey string
	Code       string // sdk.RequestError's Code, or one of the Code* constants
	Message    string
	CreatedAt  time.Time
}

// PutFailure journals that the request for a sample failed for good in this
// run. It is not cached: the next run asks again. A second failure of the
// same sample in the same run replaces the first.
func (s *Store) PutFailure(ctx context.Context, runID, evalName, sampleID, key string, failure error) error {
	code, msg := failureCode(failure)
	if err := s.evals.check(ctx, s.db, runID, evalName); err != nil {
		return fmt.Errorf("put failure %s/%s/%s: %w", runID, evalName, sampleID, err)
	}
	if err := s.logRows(ctx, row{table: failuresTable, args: []any{runID, evalName, sampleID, key, code, msg}}); err != nil {
		return fmt.Errorf("put failure %s/%s/%s: %w", runID, evalName, sampleID, err)
	}
	return nil
}

func failureCode(err error) (code, msg string) {
	if err == nil {
		return CodeError, ""
	}
	var re *sdk.RequestError
	switch {
	case errors.As(err, &re) && re.Code != "":
		return re.Code, re.Msg
	case sdk.IsRetryable(err):
		return CodeRetriesExhausted, err.Error()
	case errors.Is(err, context.Canceled):
		return CodeCanceled, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout, err.Error()
	}
	return CodeError, err.Error()
}

// Failures lists the failed samples of one eval of a run, by sample ID.
func (s *Store) Failures(ctx context.Context, runID, evalName string) ([]Failure, error) {
	if err := s.flush(ctx); err != nil {
		return nil, fmt.Errorf("failures of %s/%s: %w", runID, evalName, err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT sample_id, request_key, code, message, created_at FROM failures
		WHERE run_id = $1 AND eval_name = $2 ORDER BY sample_id`, runID, evalName)
	if err != nil {
		return nil, fmt.Errorf("failures of %s/%s: %w", runID, evalName, err)
	}
	defer rows.Close()
	var out []Failure
	for rows.Next() {
		var (
			f       Failure
			created string
		)
		if err := rows.Scan(&f.SampleID, &f.RequestKey, &f.Code, &f.Message, &created); err != nil {
			return nil, fmt.Errorf("failures of %s/%s: %w", runID, evalName, err)
		}
		if f.CreatedAt, err = parseTime(created); err != nil {
			return nil, fmt.Errorf("failures of %s/%s: sample %s: created_at: %w", runID, evalName, f.SampleID, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("failures of %s/%s: %w", runID, evalName, err)
	}
	return out, nil
}

// AttemptRecord is one journaled try at a request.
type AttemptRecord struct {
	Attempt   int
	Status    string // HTTP status code, or a word such as "timeout"; empty if none
	Latency   time.Duration
	Error     string
	CreatedAt time.Time
}

// PutAttempt journals one try at the request with key (one of
// GenerateResponse.Attempts, or of a failed request's attempt log).
func (s *Store) PutAttempt(ctx context.Context, key string, attempt int, status string, latency time.Duration, errMsg string) error {
	if err := s.logRows(ctx, row{table: attemptsTable, args: []any{key, attempt, status, ms(latency), errMsg}}); err != nil {
		return fmt.Errorf("put attempt %d of %s: %w", attempt, key, err)
	}
	return nil
}

// PutAttempts journals every try at a request that failed, in one write.
func (s *Store) PutAttempts(ctx context.Context, key string, attempts []sdk.Attempt) error {
	if len(attempts) == 0 {
		return nil
	}
	if err := s.logRows(ctx, appendAttempts(nil, key, attempts)...); err != nil {
		return fmt.Errorf("put attempts of %s: %w", key, err)
	}
	return nil
}

// appendAttempts appends the attempts rows of a request's tries to rows.
func appendAttempts(rows []row, key string, attempts []sdk.Attempt) []row {
	for i, a := range attempts {
		rows = append(rows, row{table: attemptsTable, args: []any{key, i + 1, attemptStatus(a), a.LatencyMS, a.Error}})
	}
	return rows
}

// attemptStatus words an attempt's outcome for the journal: "ok", "http 429",
// or "error" when no response arrived.
func attemptStatus(a sdk.Attempt) string {
	switch {
	case a.Error != "" && a.Status != 0:
		return fmt.Sprintf("http %d", a.Status)
	case a.Error != "":
		return "error"
	}
	return "ok"
}

// Attempts lists every journaled try at the request with key, oldest first.
func (s *Store) Attempts(ctx context.Context, key string) ([]AttemptRecord, error) {
	if err := s.flush(ctx); err != nil {
		return nil, fmt.Errorf("attempts of %s: %w", key, err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT attempt, status, latency_ms, error, created_at FROM attempts
		WHERE request_key = $1 ORDER BY id`, key)
	if err != nil {
		return nil, fmt.Errorf("attempts of %s: %w", key, err)
	}
	defer rows.Close()
	var out []AttemptRecord
	for rows.Next() {
		var (
			a         AttemptRecord
			latencyMS float64
			created   string
		)
		if err := rows.Scan(&a.Attempt, &a.Status, &latencyMS, &a.Error, &created); err != nil {
			return nil, fmt.Errorf("attempts of %s: %w", key, err)
		}
		a.Latency = time.Duration(latencyMS * float64(time.Millisecond))
		if a.CreatedAt, err = parseTime(created); err != nil {
			return nil, fmt.Errorf("attempts of %s: created_at: %w", key, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("attempts of %s: %w", key, err)
	}
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// nullInt is a nullable integer column's value: NULL for nil.
func nullInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
