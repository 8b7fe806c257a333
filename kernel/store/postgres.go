package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// A PostgreSQL journal is shared by processes on many machines (the shards
// of one run). Each process keeps its log on its own disk, in
// .hayloft/log/ under the working directory, and feeds it to the database
// as an SQLite journal's process does.
//
// The password never comes from the journal's location: pgx reads
// PGPASSWORD (or ~/.pgpass) when the DSN has none, and a DSN that does
// carry one should come from the environment (store = env("PG_DSN")).
// Errors and Path show the DSN without it.

func isPostgres(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// redactDSN is dsn without its password, as errors may show it.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable DSN)"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	if q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func openPostgres(ctx context.Context, dsn string) (db *sql.DB, dl *dialect, name, logDir string, err error) {
	name = redactDSN(dsn)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's own message redacts the password too; say which store.
		return nil, nil, "", "", fmt.Errorf("open journal %s: %w", name, err)
	}
	sum := sha256.Sum256([]byte(name))
	logDir, err = filepath.Abs(filepath.Join(".hayloft", "log", "postgres-"+hex.EncodeToString(sum[:6])))
	if err != nil {
		return nil, nil, "", "", fmt.Errorf("open journal %s: %w", name, err)
	}
	return stdlib.OpenDB(*cfg), postgresDialect, name, logDir, nil
}

var postgresDialect = &dialect{name: "postgres", numbered: true, migrate: migratePostgres, noNUL: true}

// schemaLockKey serialises migrations of processes opening one new
// PostgreSQL journal at once (pg_advisory_xact_lock).
const schemaLockKey = 0x6861796c6f6674 // "hayloft"

// migratePostgres brings the database up to len(pgMigrations) in one
// transaction (PostgreSQL's DDL is transactional), under an advisory lock.
func migratePostgres(ctx context.Context, conn *sql.Conn) (err error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(schemaLockKey)); err != nil {
		return fmt.Errorf("lock schema: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS hayloft_schema (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create schema version table: %w", err)
	}
	var v int
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM hayloft_schema`).Scan(&v); {
	case err == sql.ErrNoRows:
		if _, err := tx.ExecContext(ctx, `INSERT INTO hayloft_schema (version) VALUES (0)`); err != nil {
			return fmt.Errorf("set schema version: %w", err)
		}
	case err != nil:
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(pgMigrations) {
		return newerSchemaError(v, len(pgMigrations))
	}
	for ; v < len(pgMigrations); v++ {
		if _, err := tx.ExecContext(ctx, pgMigrations[v]); err != nil {
			return fmt.Errorf("migrate schema %d to %d: %w", v, v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE hayloft_schema SET version = $1`, v); err != nil {
		return fmt.Errorf("set schema version %d: %w", v, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit schema version %d: %w", v, err)
	}
	return nil
}

// pgMigrations are migrations in PostgreSQL's types, version for version:
// the same tables and columns, so the same queries read both. Append only.
var pgMigrations = []string{
	// 1: the initial journal.
	`
CREATE TABLE runs (
	id          TEXT PRIMARY KEY,
	started_at  TEXT NOT NULL,
	finished_at TEXT,
	status      TEXT NOT NULL,
	config_path TEXT NOT NULL,
	config_text TEXT NOT NULL,
	config_hash TEXT NOT NULL,
	version     TEXT NOT NULL
);
CREATE INDEX runs_config_hash ON runs (config_hash);

CREATE TABLE evals (
	run_id    TEXT NOT NULL REFERENCES runs (id),
	name      TEXT NOT NULL,
	task      TEXT NOT NULL,
	model     TEXT NOT NULL,
	retriever TEXT NOT NULL,
	scorers   TEXT NOT NULL,
	PRIMARY KEY (run_id, name)
);

CREATE TABLE samples (
	run_id        TEXT NOT NULL,
	eval_name     TEXT NOT NULL,
	sample_id     TEXT NOT NULL,
	seq           BIGINT NOT NULL,
	question      TEXT NOT NULL,
	targets       TEXT NOT NULL,
	length_tokens BIGINT NOT NULL,
	tokenizer     TEXT NOT NULL,
	depth         DOUBLE PRECISION NOT NULL,
	language      TEXT NOT NULL,
	subtask       TEXT NOT NULL,
	metadata      TEXT NOT NULL,
	retriever     TEXT NOT NULL,
	truncated     BOOLEAN NOT NULL,
	sent_tokens   BIGINT NOT NULL,
	chunks        TEXT NOT NULL,
	request_key   TEXT NOT NULL,
	PRIMARY KEY (run_id, eval_name, sample_id),
	FOREIGN KEY (run_id, eval_name) REFERENCES evals (run_id, name)
);

CREATE TABLE responses (
	key               TEXT PRIMARY KEY,
	identity          TEXT NOT NULL,
	request           TEXT NOT NULL,
	text              TEXT NOT NULL,
	finish_reason     TEXT NOT NULL,
	prompt_tokens     BIGINT NOT NULL,
	completion_tokens BIGINT NOT NULL,
	latency_ms        DOUBLE PRECISION NOT NULL,
	created_at        TEXT NOT NULL
);

CREATE TABLE failures (
	run_id      TEXT NOT NULL,
	eval_name   TEXT NOT NULL,
	sample_id   TEXT NOT NULL,
	request_key TEXT NOT NULL,
	code        TEXT NOT NULL,
	message     TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	PRIMARY KEY (run_id, eval_name, sample_id),
	FOREIGN KEY (run_id, eval_name) REFERENCES evals (run_id, name)
);

CREATE TABLE attempts (
	id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	request_key TEXT NOT NULL,
	attempt     BIGINT NOT NULL,
	status      TEXT NOT NULL,
	latency_ms  DOUBLE PRECISION NOT NULL,
	error       TEXT NOT NULL,
	created_at  TEXT NOT NULL
);
CREATE INDEX attempts_request_key ON attempts (request_key);

CREATE TABLE scores (
	run_id     TEXT NOT NULL,
	eval_name  TEXT NOT NULL,
	sample_id  TEXT NOT NULL,
	scorer     TEXT NOT NULL,
	value      DOUBLE PRECISION NOT NULL,
	invalid    BOOLEAN NOT NULL,
	details    TEXT NOT NULL,
	stats      TEXT NOT NULL,
	created_at TEXT NOT NULL,
	PRIMARY KEY (run_id, eval_name, scorer, sample_id),
	FOREIGN KEY (run_id, eval_name) REFERENCES evals (run_id, name)
);

CREATE TABLE embeddings (
	embedder     TEXT NOT NULL,
	chunk_sha256 BYTEA NOT NULL,
	dims         BIGINT NOT NULL,
	vector       BYTEA NOT NULL,
	created_at   TEXT NOT NULL,
	PRIMARY KEY (embedder, chunk_sha256)
);
`,
	// 2: a report's reads without plugins: eval outcomes, metrics, the
	// run's overhead, each sample's grid point (as SQLite's 2).
	`
ALTER TABLE runs ADD COLUMN overhead_us DOUBLE PRECISION NOT NULL DEFAULT 0;

ALTER TABLE evals ADD COLUMN eval      TEXT NOT NULL DEFAULT '';
ALTER TABLE evals ADD COLUMN position  BIGINT NOT NULL DEFAULT 0;
ALTER TABLE evals ADD COLUMN samples   BIGINT NOT NULL DEFAULT 0;
ALTER TABLE evals ADD COLUMN cached    BIGINT NOT NULL DEFAULT 0;
ALTER TABLE evals ADD COLUMN errors    BIGINT NOT NULL DEFAULT 0;
ALTER TABLE evals ADD COLUMN truncated BIGINT NOT NULL DEFAULT 0;
ALTER TABLE evals ADD COLUMN error     TEXT NOT NULL DEFAULT '';

ALTER TABLE samples ADD COLUMN grid_length BIGINT;
ALTER TABLE samples ADD COLUMN grid_depth  DOUBLE PRECISION;

CREATE TABLE metrics (
	run_id     TEXT NOT NULL,
	eval_name  TEXT NOT NULL,
	scorer     TEXT NOT NULL,
	value      DOUBLE PRECISION NOT NULL,
	n          BIGINT NOT NULL,
	invalid    BIGINT NOT NULL,
	ci_low     DOUBLE PRECISION NOT NULL,
	ci_high    DOUBLE PRECISION NOT NULL,
	details    TEXT NOT NULL,
	created_at TEXT NOT NULL,
	PRIMARY KEY (run_id, eval_name, scorer),
	FOREIGN KEY (run_id, eval_name) REFERENCES evals (run_id, name)
);
`,
	// 3: sharded runs (as SQLite's 3).
	`
ALTER TABLE runs ADD COLUMN shard  BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN shards BIGINT NOT NULL DEFAULT 0;
`,
	// 4: the prompt tokens the server found in its prefix cache (as
	// SQLite's 4).
	`
ALTER TABLE responses ADD COLUMN cached_tokens BIGINT;
`,
	// 5: journal v2's log progress, as in SQLite.
	`
CREATE TABLE journal_logs (
	name       TEXT PRIMARY KEY,
	fed        BIGINT NOT NULL,
	updated_at TEXT NOT NULL
);
`,
	// 6: an eval row's expected sample count (as SQLite's 6).
	`
ALTER TABLE evals ADD COLUMN expected BIGINT;
`,
	// 7: an eval row's prefix-cache counters (as SQLite's 7).
	`
ALTER TABLE evals ADD COLUMN prefix_metrics TEXT;
`,
	// 8: an eval row's summed prefix-cache use (as SQLite's 8).
	`
ALTER TABLE evals ADD COLUMN prefix_use TEXT;
`,
}
