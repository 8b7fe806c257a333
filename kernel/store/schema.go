package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations[i] takes the schema from version i to version i+1; the version
// lives in PRAGMA user_version. Append only: a released migration is never
// edited, because journals in the wild were built by it.
//
// The SQL keeps to what SQLite and PostgreSQL share where it costs nothing
// (TEXT timestamps in one fixed UTC format, ON CONFLICT upserts, $n
// placeholders in the statements, except the writer's multi-row INSERTs,
// whose '?' SQLite binds faster: see rows.go); the DDL is SQLite's own and a
// PostgreSQL store will carry its own list.
var migrations = []string{
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
	scorers   TEXT NOT NULL, -- JSON array of scorer names
	PRIMARY KEY (run_id, name)
);

CREATE TABLE samples (
	run_id        TEXT NOT NULL,
	eval_name     TEXT NOT NULL,
	sample_id     TEXT NOT NULL,
	seq           INTEGER NOT NULL, -- position in the task's stream
	question      TEXT NOT NULL,
	targets       TEXT NOT NULL,    -- JSON array
	length_tokens INTEGER NOT NULL,
	tokenizer     TEXT NOT NULL,
	depth         REAL NOT NULL,
	language      TEXT NOT NULL,
	subtask       TEXT NOT NULL,
	metadata      TEXT NOT NULL,    -- JSON object
	retriever     TEXT NOT NULL,
	truncated     INTEGER NOT NULL,
	sent_tokens   INTEGER NOT NULL,
	chunks        TEXT NOT NULL,    -- JSON array of kept chunk ids
	request_key   TEXT NOT NULL,
	PRIMARY KEY (run_id, eval_name, sample_id),
	FOREIGN KEY (run_id, eval_name) REFERENCES evals (run_id, name)
);

-- The response cache. It is global, not per run: a rerun of the same config
-- finds its answers here by request key and asks the model only for the rest.
-- Failed requests never land here, so they are retried on the next run.
CREATE TABLE responses (
	key               TEXT PRIMARY KEY,
	identity          TEXT NOT NULL, -- JSON ModelIdentity
	request           TEXT NOT NULL, -- JSON {messages, params}
	text              TEXT NOT NULL,
	finish_reason     TEXT NOT NULL,
	prompt_tokens     INTEGER NOT NULL,
	completion_tokens INTEGER NOT NULL,
	latency_ms        REAL NOT NULL,
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

-- Every try at a request, successful or not, across runs.
CREATE TABLE attempts (
	id          INTEGER PRIMARY KEY,
	request_key TEXT NOT NULL,
	attempt     INTEGER NOT NULL,
	status      TEXT NOT NULL,
	latency_ms  REAL NOT NULL,
	error       TEXT NOT NULL,
	created_at  TEXT NOT NULL
);
CREATE INDEX attempts_request_key ON attempts (request_key);

CREATE TABLE scores (
	run_id     TEXT NOT NULL,
	eval_name  TEXT NOT NULL,
	sample_id  TEXT NOT NULL,
	scorer     TEXT NOT NULL,
	value      REAL NOT NULL,
	invalid    INTEGER NOT NULL,
	details    TEXT NOT NULL, -- JSON object
	stats      TEXT NOT NULL, -- JSON array
	created_at TEXT NOT NULL,
	PRIMARY KEY (run_id, eval_name, scorer, sample_id),
	FOREIGN KEY (run_id, eval_name) REFERENCES evals (run_id, name)
);

CREATE TABLE embeddings (
	embedder     TEXT NOT NULL,
	chunk_sha256 BLOB NOT NULL,
	dims         INTEGER NOT NULL,
	vector       BLOB NOT NULL, -- little-endian float32
	created_at   TEXT NOT NULL,
	PRIMARY KEY (embedder, chunk_sha256)
) WITHOUT ROWID;
`,
	// 2: what a report reads without calling a plugin. Each eval row's
	// outcome (its counts, its error, its order in the run and the config
	// eval it belongs to), every scorer's aggregate over the row, the run's
	// kernel overhead, and each sample's grid point as the task asked for it.
	`
ALTER TABLE runs ADD COLUMN overhead_us REAL NOT NULL DEFAULT 0;

ALTER TABLE evals ADD COLUMN eval      TEXT NOT NULL DEFAULT '';
ALTER TABLE evals ADD COLUMN position  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE evals ADD COLUMN samples   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE evals ADD COLUMN cached    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE evals ADD COLUMN errors    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE evals ADD COLUMN truncated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE evals ADD COLUMN error     TEXT NOT NULL DEFAULT '';

ALTER TABLE samples ADD COLUMN grid_length INTEGER; -- NULL: the task gave no grid point
ALTER TABLE samples ADD COLUMN grid_depth  REAL;

CREATE TABLE metrics (
	run_id     TEXT NOT NULL,
	eval_name  TEXT NOT NULL,
	scorer     TEXT NOT NULL,
	value      REAL NOT NULL,
	n          INTEGER NOT NULL,
	invalid    INTEGER NOT NULL,
	ci_low     REAL NOT NULL,
	ci_high    REAL NOT NULL,
	details    TEXT NOT NULL, -- JSON object; may hold sdk.Tables under sdk.TablesKey
	created_at TEXT NOT NULL,
	PRIMARY KEY (run_id, eval_name, scorer),
	FOREIGN KEY (run_id, eval_name) REFERENCES evals (run_id, name)
);
`,
	// 3: sharded runs (kernel/shard). shards is the count the run's samples
	// were split into (0: not sharded), shard the run's own index; status
	// groups a config's runs by shard, and BeginRun refuses a count that
	// differs from an earlier sharded run of the same config.
	`
ALTER TABLE runs ADD COLUMN shard  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN shards INTEGER NOT NULL DEFAULT 0;
`,
	// 4: the prompt tokens the server found in its prefix cache, as it
	// reported them; NULL where it did not say.
	`
ALTER TABLE responses ADD COLUMN cached_tokens INTEGER;
`,
	// 5: journal v2. Rows reach the tables above from each process's
	// append-only log (log.go); this records how far each log file has been
	// fed, in the same transaction as its rows, so a log is never fed twice.
	`
CREATE TABLE journal_logs (
	name       TEXT PRIMARY KEY, -- the log file's name in the journal's -log directory
	fed        INTEGER NOT NULL, -- byte offset up to which its records are in the tables
	updated_at TEXT NOT NULL
);
`,
	// 6: how many samples an eval row was to run, when its task could say
	// (sdk.SampleCounter); NULL where it could not. A report labels a row
	// an interrupted run left unfinished "95 of 330".
	`
ALTER TABLE evals ADD COLUMN expected INTEGER;
`,
	// 7: the server's prefix-cache counters over an eval row (JSON
	// PrefixMetrics), for servers whose responses carry no cached count.
	`
ALTER TABLE evals ADD COLUMN prefix_metrics TEXT;
`,
	// 8: what an eval row's responses said of the prefix cache (JSON
	// PrefixUse without its metrics), summed when the row finished, so a
	// report need not join every sample to its response again; NULL for
	// rows finished before, whose sums are computed when read.
	`
ALTER TABLE evals ADD COLUMN prefix_use TEXT;
`,
}

// SchemaVersion is the journal schema this build writes.
var SchemaVersion = len(migrations)

// migrate brings the database on conn up to len(list), in one transaction,
// so a failure leaves the journal at the version it had. The version is
// re-read inside the write transaction: two processes opening the same new
// journal at once must not both run migration 1. (A transaction per
// migration made a new journal's seven commits a fifth of `hayloft run`'s
// start-up.)
func migrate(ctx context.Context, conn *sql.Conn, list []string) error {
	// Check first without the write lock, which the common case (a current
	// journal, perhaps being written by a running hayloft) does not need.
	var v int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(list) {
		return newerSchemaError(v, len(list))
	}
	if v == len(list) {
		return nil
	}
	return migrateAll(ctx, conn, list)
}

func migrateAll(ctx context.Context, conn *sql.Conn, list []string) (err error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	var from int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&from); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case from > len(list):
		return newerSchemaError(from, len(list))
	case from == len(list):
		return tx.Commit()
	}
	for v := from; v < len(list); v++ {
		if _, err := tx.ExecContext(ctx, list[v]); err != nil {
			return fmt.Errorf("migrate schema %d to %d: %w", v, v+1, err)
		}
	}
	// PRAGMA takes no bound parameters; the version is an int we computed.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(list))); err != nil {
		return fmt.Errorf("set schema version %d: %w", len(list), err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit schema version %d: %w", len(list), err)
	}
	return nil
}

func newerSchemaError(found, known int) error {
	return fmt.Errorf("schema version %d is newer than this hayloft understands (%d); use a newer hayloft or another journal", found, known)
}

// dialect is what differs between the journal's databases.
type dialect struct {
	name string
	// numbered: statements take $1, $2 … rather than ?.
	numbered bool
	// rawInserts: the writer's INSERTs bypass database/sql (insertStmts).
	rawInserts bool
	migrate    func(ctx context.Context, conn *sql.Conn) error
	// checkpoint, run before a fed log is removed, makes the rows fed from
	// it durable; "" when a commit already is.
	checkpoint string
	// writerSetup is run on the writer's connection once it is migrated:
	// settings for the feed's large transactions that readers need not
	// share.
	writerSetup []string
	// cacheSize is the statement setting the writer's page cache, in KiB,
	// given as %d (see feedCacheKiB); "" where the database has no such
	// setting per connection.
	cacheSize string
	// noNUL: its text columns cannot hold U+0000 (PostgreSQL's TEXT).
	noNUL bool
}

var sqliteDialect = &dialect{
	name:       "sqlite",
	rawInserts: true,
	migrate:    func(ctx context.Context, conn *sql.Conn) error { return migrate(ctx, conn, migrations) },
	checkpoint: `PRAGMA wal_checkpoint(PASSIVE)`,
	cacheSize:  `PRAGMA cache_size = -%d`,
	writerSetup: []string{
		// A multi-row INSERT with constraints keeps a statement journal
		// (the pages it changed, as they were), so that a failing row
		// undoes only its statement. Past 64 KiB it spills to a temporary
		// file, which the feed's 64-row INSERTs into indexes keyed by
		// hashes (a page per row) did all the time: a pwrite per page,
		// about a fifth of the feed's CPU (BenchmarkFeed). In memory it
		// holds at most the pages one INSERT changes, and only while it
		// runs.
		`PRAGMA temp_store = MEMORY`,
		// The WAL is checkpointed when it reaches 4096 pages (16 MB, was
		// 1000, 4 MB): each checkpoint copies every page the feeds since
		// the last one changed, and the same index pages change in every
		// feed, so fewer checkpoints copy them fewer times. Nothing relies
		// on the automatic ones: the feeder checkpoints when a run's last
		// samples are fed (FeedSoon) and before a fed log is removed, and
		// Close does once more. BenchmarkFeed at 40,000 samples: the
		// checkpoints' share of the feed's CPU fell from 10-13 % to 7 %
		// (3 % at 16384 pages). Not more: what the automatic ones leave
		// is copied at the end of the run, before its report, and 64 MB
		// (16384 pages, no automatic checkpoint in a run of 20,000 short
		// samples) made that end 0.2 s longer than 16 MB, for no less CPU.
		//
		// The writer's page cache is sized by each feed (feedCacheKiB).
		`PRAGMA wal_autocheckpoint = 4096`,
	},
}
