package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Run statuses. A run is "running" from BeginRun until FinishRun; one still
// "running" after its process is gone was killed.
const (
	StatusRunning     = "running"
	StatusDone        = "done"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
)

// RunInfo describes a run as it starts.
type RunInfo struct {
	ConfigPath string
	ConfigText string // the config as read, so a report can show what ran
	Version    string // hayloft's version
	// Shard and Shards: the run is shard Shard of Shards (kernel/shard);
	// Shards 0 is an unsharded run.
	Shard, Shards int
}

// Run is a journaled run.
type Run struct {
	ID         string
	StartedAt  time.Time
	FinishedAt time.Time // zero while running
	Status     string
	ConfigPath string
	ConfigText string
	ConfigHash string // hex SHA-256 of ConfigText
	Version    string
	// OverheadUS is the kernel's own CPU time per sample, in µs (PutOverhead).
	OverheadUS float64
	// Shard of Shards, as in RunInfo.
	Shard, Shards int
}

// EvalInfo describes one eval of a run: a task answered by one model,
// optionally through a retriever, scored by a set of scorers.
type EvalInfo struct {
	Name      string // unique within the run
	Task      string
	Model     string
	Retriever string // empty for the full-context control
	Scorers   []string
	// Eval is the config's eval block the row belongs to: one block runs a
	// row per model and retriever, each under its own Name.
	Eval string
	// Position orders the rows of a run as they ran; Evals lists them so.
	Position int
	// Outcome is how the row ended, as FinishEval put it; PutEval ignores
	// it.
	Outcome Outcome
}

// ErrNotFound is returned when a run or eval named by the caller does not exist.
var ErrNotFound = errors.New("not found")

// BeginRun journals a new run and returns its ID. IDs sort by start time:
// the UTC start to the microsecond, then random bits so runs started in the
// same microsecond (tests, parallel CI jobs) stay distinct.
func (s *Store) BeginRun(ctx context.Context, info RunInfo) (string, error) {
	now := time.Now()
	var rnd [4]byte
	rand.Read(rnd[:])
	id := now.UTC().Format("20060102T150405.000000Z") + "-" + hex.EncodeToString(rnd[:])
	sum := sha256.Sum256([]byte(info.ConfigText))
	hash := hex.EncodeToString(sum[:])
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if info.Shards > 0 {
			// In the same transaction as the insert: two shards starting
			// at once with different counts cannot both pass.
			if err := checkShards(ctx, tx, hash, info); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO runs (id, started_at, status, config_path, config_text, config_hash, version, shard, shards)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			id, formatTime(now), StatusRunning, info.ConfigPath, info.ConfigText, hash, info.Version, info.Shard, info.Shards)
		return err
	})
	if err == nil {
		// The run's samples and scores are journaled through the log,
		// which a power loss spares: their run row must be as durable.
		err = s.syncWAL()
	}
	if err != nil {
		return "", fmt.Errorf("begin run for %s: %w", info.ConfigPath, err)
	}
	return id, nil
}

// FinishRun records how run ended: StatusDone, StatusInterrupted or
// StatusFailed.
func (s *Store) FinishRun(ctx context.Context, runID, status string) error {
	switch status {
	case StatusDone, StatusInterrupted, StatusFailed:
	default:
		return fmt.Errorf("finish run %s: status %q is not one of %q, %q, %q", runID, status, StatusDone, StatusInterrupted, StatusFailed)
	}
	// A finished run's samples are all in the database, for whoever reads
	// it next.
	if err := s.flush(ctx); err != nil {
		return fmt.Errorf("finish run %s: %w", runID, err)
	}
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return execOne(ctx, tx, `UPDATE runs SET status = $1, finished_at = $2 WHERE id = $3`,
			status, formatTime(time.Now()), runID)
	})
	if err != nil {
		return fmt.Errorf("finish run %s: %w", runID, err)
	}
	// Everything is fed: the database is checkpointed now, in the
	// background (see checkpointSoon), while the caller reads the run
	// (its report), rather than by Close after it.
	s.FeedSoon()
	return nil
}

// PutEval journals one eval of a run. It must precede the eval's samples,
// scores and failures. Putting the same eval twice replaces it.
func (s *Store) PutEval(ctx context.Context, runID string, e EvalInfo) error {
	scorers, err := json.Marshal(nonNil(e.Scorers))
	if err != nil {
		return fmt.Errorf("put eval %s/%s: %w", runID, e.Name, err)
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO evals (run_id, name, task, model, retriever, scorers, eval, position)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (run_id, name) DO UPDATE SET task = excluded.task, model = excluded.model,
				retriever = excluded.retriever, scorers = excluded.scorers, eval = excluded.eval,
				position = excluded.position`,
			runID, e.Name, e.Task, e.Model, e.Retriever, string(scorers), e.Eval, e.Position)
		return err
	})
	if err == nil {
		err = s.syncWAL() // as BeginRun's: the eval's records go through the log
	}
	if err != nil {
		return fmt.Errorf("put eval %s/%s: %w", runID, e.Name, err)
	}
	s.evals.add(runID, e.Name)
	return nil
}

// knownEvals are the evals the journal is known to hold. Rows that name an
// eval go through the log and reach the database after their Put has
// returned, too late to fail on its foreign key, so the eval is checked
// before: in memory for the evals this process put, else in the database.
type knownEvals struct {
	mu    sync.Mutex
	evals map[[2]string]struct{}
}

func (k *knownEvals) add(runID, name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.evals == nil {
		k.evals = map[[2]string]struct{}{}
	}
	k.evals[[2]string{runID, name}] = struct{}{}
}

// check returns an error wrapping ErrNotFound unless the eval was put.
func (k *knownEvals) check(ctx context.Context, db *sql.DB, runID, name string) error {
	k.mu.Lock()
	_, ok := k.evals[[2]string{runID, name}]
	k.mu.Unlock()
	if ok {
		return nil
	}
	var one int
	err := db.QueryRowContext(ctx, `SELECT 1 FROM evals WHERE run_id = $1 AND name = $2`, runID, name).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("eval %q of run %s: %w (put the eval first)", name, runID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("eval %q of run %s: %w", name, runID, err)
	}
	k.add(runID, name)
	return nil
}

// Evals lists the evals of a run in the order they ran (Position), then by
// name.
func (s *Store) Evals(ctx context.Context, runID string) ([]EvalInfo, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, task, model, retriever, scorers, eval, position,
			samples, cached, errors, truncated, error, expected
		FROM evals WHERE run_id = $1 ORDER BY position, name`, runID)
	if err != nil {
		return nil, fmt.Errorf("evals of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []EvalInfo
	for rows.Next() {
		var e EvalInfo
		var scorers string
		var expected sql.NullInt64
		o := &e.Outcome
		if err := rows.Scan(&e.Name, &e.Task, &e.Model, &e.Retriever, &scorers, &e.Eval, &e.Position,
			&o.Samples, &o.Cached, &o.Errors, &o.Truncated, &o.Error, &expected); err != nil {
			return nil, fmt.Errorf("evals of run %s: %w", runID, err)
		}
		o.Expected = int(expected.Int64)
		if err := json.Unmarshal([]byte(scorers), &e.Scorers); err != nil {
			return nil, fmt.Errorf("evals of run %s: eval %s: scorers: %w", runID, e.Name, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("evals of run %s: %w", runID, err)
	}
	return out, nil
}

const runColumns = `id, started_at, finished_at, status, config_path, config_text, config_hash, version, overhead_us, shard, shards`

// GetRun returns one run; the error wraps ErrNotFound if there is none.
func (s *Store) GetRun(ctx context.Context, runID string) (*Run, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, runID))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	return r, nil
}

// Runs lists every run, newest first.
func (s *Store) Runs(ctx context.Context) ([]*Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+runColumns+` FROM runs ORDER BY id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

func scanRun(row interface{ Scan(...any) error }) (*Run, error) {
	var (
		r                 Run
		started, finished sql.NullString
	)
	if err := row.Scan(&r.ID, &started, &finished, &r.Status, &r.ConfigPath, &r.ConfigText, &r.ConfigHash, &r.Version, &r.OverheadUS, &r.Shard, &r.Shards); err != nil {
		return nil, err
	}
	var err error
	if r.StartedAt, err = parseTime(started.String); err != nil {
		return nil, fmt.Errorf("run %s: started_at: %w", r.ID, err)
	}
	if finished.Valid {
		if r.FinishedAt, err = parseTime(finished.String); err != nil {
			return nil, fmt.Errorf("run %s: finished_at: %w", r.ID, err)
		}
	}
	return &r, nil
}

// execOne runs an UPDATE that must change a row: ErrNotFound when it
// names none.
func execOne(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ErrNotFound
	}
	return nil
}

// nonNil makes a nil slice encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ShardCountError is BeginRun's refusal of a sharded run whose count differs
// from an earlier sharded run of the same config in the journal: the samples
// would be assigned to other shards, so the shards' results could not be
// put together.
type ShardCountError struct {
	ConfigPath string
	Earlier    string // the earlier run's ID
	Had, Asked int
}

func (e *ShardCountError) Error() string {
	return fmt.Sprintf("%s was run in %d shards (run %s) and now in %d: the assignment of samples to shards would change and the shards' results would not add up; "+
		"run with %d shards, or use another journal (--store) for a different count", e.ConfigPath, e.Had, e.Earlier, e.Asked, e.Had)
}

func checkShards(ctx context.Context, tx *sql.Tx, configHash string, info RunInfo) error {
	var id string
	var had int
	err := tx.QueryRowContext(ctx, `SELECT id, shards FROM runs WHERE config_hash = $1 AND shards > 0 AND shards <> $2 ORDER BY id LIMIT 1`,
		configHash, info.Shards).Scan(&id, &had)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	return &ShardCountError{ConfigPath: info.ConfigPath, Earlier: id, Had: had, Asked: info.Shards}
}
