// Package store is hayloft's journal: what makes a run resumable and a
// crash harmless. A model's response is journaled the moment it arrives,
// keyed by a hash of the request (see RequestKey), so a rerun of the same
// config asks the model only for what is missing.
//
// The journal holds runs, the evals of each run, the samples each eval saw,
// the response cache, failed samples, every model attempt, scores, and the
// retrievers' embedding cache, in one SQLite file that sqlite3 can query.
//
// Durability (journal v2): responses, samples, scores, failures and attempts
// are first appended to the process's own log (log.go, logfile.go), in
// checksummed records synced once per group of callers; a Put returns once
// its record is synced, and from then on survives kill -9. The database is
// fed from the log in large batches in the background, and from the logs of
// dead processes when the journal is next opened. Runs, evals and the
// embedding cache are written to the database directly. Reads flush the
// feed first, so they see every Put that has returned.
//
// Concurrency: a *Store is safe for use from many goroutines, and several
// processes may share one journal. Reads go through a small connection pool
// (WAL mode). Writes to the database go through one writer goroutine that
// commits whatever has queued up in a single transaction (group commit).
//
// Secrets: nothing written here may hold an API key. The runner builds
// ModelIdentity from the model's non-secret settings only; NewKeyer checks
// it once and PutResponse refuses identities that look as if they carry
// credentials.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DefaultPath is where the journal lives unless the config says otherwise,
// relative to the working directory.
const DefaultPath = ".hayloft/hayloft.db"

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("store: closed")

// busyTimeout bounds how long a statement waits for another process holding
// the write lock (a second hayloft run on the same journal, a report reading
// during a checkpoint) before failing.
const busyTimeout = 10 * time.Second

// maxBatch caps one group commit. Larger batches amortise the commit further
// but make every caller in the batch wait for all of it.
const maxBatch = 512

// Sync says when a journaled record counts as written.
type Sync string

const (
	// SyncBatch, the default: once its group commit is fsynced. A record
	// survives kill -9, an OS crash and a power loss.
	SyncBatch Sync = "batch"
	// SyncOS: once its group commit is written to the operating system. A
	// record survives kill -9 of hayloft, not an OS crash or a power loss
	// (journal v1's promise, with SQLite's synchronous=NORMAL). It saves
	// the fsync, most of the log's cost when few samples finish at once.
	SyncOS Sync = "os"
)

// Options tune an open journal; the zero value is the default.
type Options struct {
	Sync Sync // "" is SyncBatch
	// Logger hears what the journal recovers from without failing: a dead
	// process's log damaged (a bad sector, a stray write) before records
	// that follow it, whose lost records are named there. nil is
	// hclog.Default(): such a loss must not pass unseen.
	Logger hclog.Logger
}

// Store is an open journal. Create it with Open; close it with Close.
type Store struct {
	path    string // as given, or a PostgreSQL DSN without its password
	db      *sql.DB
	dialect *dialect
	log     hclog.Logger

	// wconn is the writer goroutine's own connection, taken from db for the
	// store's lifetime so writes never queue behind readers for a connection.
	wconn *sql.Conn
	// stmts are the hot reads, prepared once (database/sql then keeps one
	// prepared copy per connection) to save parsing SQL for every lookup.
	// Read-only after Open.
	stmts map[string]*sql.Stmt
	// inserts are the writer's multi-row INSERTs, prepared on first use;
	// only the writer goroutine touches them until Close.
	inserts insertStmts
	// writerCache is the page cache set on wconn, in KiB; 0 for the
	// database's default. The writer goroutine's alone (setWriterCache).
	writerCache int
	known       knownKeys
	repeated    atomic.Int64 // see RepeatedResponses
	// answerBufs are *answerBuf, kept from one range of report reads to
	// the next (responserows.go).
	answerBufs sync.Pool
	evals      knownEvals
	ops        chan *writeOp // unbuffered: a send succeeds only when the writer takes it
	closing    chan struct{} // closed by Close: no new calls
	quit       chan struct{} // closed by Close once the feed is done: the writer stops
	stopped    chan struct{} // closed by the writer

	// The log (log.go). seg is the appender's alone; the rest is guarded
	// by fmu.
	sync        Sync
	logDir      string
	logOps      chan *logOp   // unbuffered, as ops
	lingerMax   time.Duration // see linger
	seg         *segment
	fmu         sync.Mutex
	segs        []*segment // this process's segments not yet removed
	queue       []fedItem  // synced, not yet fed
	queuedBytes int
	unfed       int // records synced and not yet fed
	feedErr     error
	// dropErr is what removing fed segments met (dropSegments): their
	// records are in the database, so nothing is fed again for it; Close
	// reports it.
	dropErr error
	// walSyncs counts syncWAL's syncs (tests).
	walSyncs atomic.Int64
	feedKick chan struct{} // buffered 1: records were queued
	feedNow  atomic.Bool   // FeedSoon was called: feed without waiting for more
	follow   atomic.Bool   // FeedFollow: feed whatever is queued, as it comes
	// fedHook, when set (tests, under fmu), hears how many records each
	// feed of the feeder put in the database; feedWait, when set (tests,
	// under fmu), replaces feedDelay.
	fedHook     func(records int)
	feedWait    time.Duration
	flushReq    chan chan error
	logStopped  chan struct{} // closed by the appender
	feedStopped chan struct{} // closed by the feeder
	// ckpt is closed when the checkpoint checkpointSoon began ends; nil
	// before the first. The feeder's alone, and Close's after it stops.
	ckpt chan struct{}

	// testHookCommit, when set (by tests, before the first write), runs
	// in the writer after it has collected a batch and before it commits:
	// from then on, no write is taken until the commit ends.
	testHookCommit func()

	once sync.Once
}

// writeOp is one caller's share of a group commit: SQL to run (exec), or
// rows to insert, which the writer merges with the other callers' rows into
// multi-row INSERTs. An op may be applied twice (once in the batch, once
// alone if the batch failed), so exec must only issue SQL.
type writeOp struct {
	exec func(ctx context.Context, tx *sql.Tx) error
	rows []row
	done chan error
}

// Open opens the journal at path, creating the file and its parent directory
// if needed, and migrates it to SchemaVersion. A journal written by a newer
// hayloft, or a file that is not an SQLite database, is an error naming the
// file.
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, opts Options) (*Store, error) {
	switch opts.Sync {
	case "":
		opts.Sync = SyncBatch
	case SyncBatch, SyncOS:
	default:
		return nil, fmt.Errorf("open journal %s: journal_sync %q is not %q or %q", path, opts.Sync, SyncBatch, SyncOS)
	}
	if path == "" {
		path = DefaultPath
	}
	if opts.Logger == nil {
		opts.Logger = hclog.Default()
	}
	db, dl, name, logDir, err := openDB(ctx, path)
	if err != nil {
		return nil, err
	}
	path = name
	// One connection is the writer's; the rest serve concurrent reads, which
	// WAL lets proceed alongside the writer.
	conns := 1 + max(4, runtime.GOMAXPROCS(0))
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)

	wconn, err := writerConn(ctx, db, dl)
	if err != nil {
		db.Close()
		return nil, openError(path, err)
	}
	stmts := make(map[string]*sql.Stmt, len(preparedStatements))
	for _, q := range preparedStatements {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			closeStmts(stmts)
			wconn.Close()
			db.Close()
			return nil, openError(path, fmt.Errorf("prepare %.40q: %w", q, err))
		}
		stmts[q] = st
	}
	s := &Store{
		path:        path,
		db:          db,
		wconn:       wconn,
		stmts:       stmts,
		dialect:     dl,
		log:         opts.Logger,
		inserts:     insertStmts{db: db, dialect: dl},
		ops:         make(chan *writeOp),
		closing:     make(chan struct{}),
		quit:        make(chan struct{}),
		stopped:     make(chan struct{}),
		sync:        opts.Sync,
		logDir:      logDir,
		logOps:      make(chan *logOp),
		lingerMax:   lingerMax,
		feedKick:    make(chan struct{}, 1),
		flushReq:    make(chan chan error),
		logStopped:  make(chan struct{}),
		feedStopped: make(chan struct{}),
	}
	if dl.rawInserts {
		s.inserts.conn = wconn
	}
	go s.writer()
	// What dead processes logged but never fed goes in before anything
	// reads the journal.
	if err := s.replayLogs(ctx); err != nil {
		close(s.quit)
		<-s.stopped
		closeStmts(stmts)
		s.inserts.close()
		wconn.Close()
		db.Close()
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	go s.appender()
	go s.feeder()
	return s, nil
}

// openDB opens the database at path, an SQLite file or a PostgreSQL DSN
// (postgres:// or postgresql://), and says where its log lives. name is
// path as errors and Path show it: a DSN without its password.
func openDB(ctx context.Context, path string) (db *sql.DB, dl *dialect, name, logDir string, err error) {
	if isPostgres(path) {
		return openPostgres(ctx, path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, "", "", fmt.Errorf("open journal %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, nil, "", "", fmt.Errorf("open journal %s: %w", path, err)
	}
	db, err = sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, nil, "", "", fmt.Errorf("open journal %s: %w", path, err)
	}
	return db, sqliteDialect, path, abs + logDirSuffix, nil
}

// writerConn is the writer's connection, the schema brought up to date
// on it. Processes opening one new journal at once (shards started
// together) race to make it: SQLite answers SQLITE_BUSY without waiting
// while another connection switches the new file to WAL, so that is
// retried, within the busy timeout.
func writerConn(ctx context.Context, db *sql.DB, dl *dialect) (*sql.Conn, error) {
	deadline := time.Now().Add(busyTimeout)
	for {
		wconn, err := db.Conn(ctx)
		if err == nil {
			if err = dl.migrate(ctx, wconn); err == nil {
				if err = setupWriter(ctx, wconn, dl); err == nil {
					return wconn, nil
				}
			}
			wconn.Close()
		}
		var se *sqlite.Error
		if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return nil, err
		}
		t := time.NewTimer(time.Duration(5+rand.IntN(45)) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// setupWriter applies dl's writer settings to conn.
func setupWriter(ctx context.Context, conn *sql.Conn, dl *dialect) error {
	for _, q := range dl.writerSetup {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// dsn builds a file: URI so that any byte in the path (a '?', a '#') is
// escaped rather than taken for the start of the driver's parameters.
func dsn(abs string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	// IMMEDIATE takes the write lock at BEGIN, so a transaction never fails
	// half-way when it upgrades from reading to writing.
	q.Add("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// openError names the file in every error from opening it, and explains
// the codes SQLite gives for a file that is not a journal at all, which
// otherwise read as "file is not a database (26)".
func openError(path string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("open journal %s: not an SQLite database (was another file given as the journal?): %w", path, err)
		case sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("open journal %s: the database is corrupt: %w", path, err)
		}
	}
	return fmt.Errorf("open journal %s: %w", path, err)
}

// Path returns the journal's path as given to Open.
func (s *Store) Path() string { return s.path }

// Close waits for the writes already accepted to commit and feeds the log
// into the database, removing it, then closes the journal. If the feed
// fails, the log is kept and fed when the journal is next opened. Calls
// made after Close return ErrClosed.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		close(s.closing)
		<-s.logStopped
		<-s.feedStopped
		s.checkpointed()
		s.fmu.Lock()
		feedErr, dropErr := s.feedErr, s.dropErr
		if len(s.queue) > 0 && feedErr == nil {
			feedErr = errors.New("log not fed")
		}
		var drop []*segment
		if len(s.queue) == 0 {
			for _, seg := range s.segs {
				seg.closed = true
				if seg.fed >= seg.size {
					drop = append(drop, seg)
				}
			}
		}
		s.fmu.Unlock()
		if feedErr == nil {
			feedErr = s.dropSegments(drop)
		} else {
			feedErr = fmt.Errorf("%w; the log in %s is kept and fed when the journal is next opened", feedErr, s.logDir)
			for _, seg := range s.segs {
				seg.f.Close()
			}
		}
		close(s.quit)
		<-s.stopped
		err = errors.Join(dropErr, feedErr, closeStmts(s.stmts), s.inserts.close(), s.wconn.Close(), s.db.Close())
		if err != nil {
			err = fmt.Errorf("close journal %s: %w", s.path, err)
		}
	})
	return err
}

// write hands exec to the writer and waits until the transaction holding it
// has committed.
func (s *Store) write(ctx context.Context, exec func(context.Context, *sql.Tx) error) error {
	return s.submit(ctx, &writeOp{exec: exec, done: make(chan error, 1)})
}

// writeRows hands rows to the writer and waits until the transaction
// holding them has committed.
func (s *Store) writeRows(ctx context.Context, rows ...row) error {
	return s.submit(ctx, &writeOp{rows: rows, done: make(chan error, 1)})
}

// submit waits until op has committed. ctx bounds only the wait to be
// accepted: once the writer has taken the operation it commits regardless,
// and the caller learns the outcome, so a cancelled run never mistakes a
// written row for a lost one.
func (s *Store) submit(ctx context.Context, op *writeOp) error {
	select {
	case s.ops <- op:
	case <-s.closing:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-op.done
}

// internalWrite is submit for the store's own work (the feed), which must
// go through even while Close waits for it: the writer runs until quit.
func (s *Store) internalWrite(op *writeOp) error {
	s.ops <- op
	return <-op.done
}

func (s *Store) writer() {
	defer close(s.stopped)
	// The writer's context is its own: one caller's cancellation must not
	// abort a transaction shared with others.
	ctx := context.Background()
	batch := make([]*writeOp, 0, maxBatch)
	var rs rowSets
	for {
		select {
		case op := <-s.ops:
			batch = append(batch[:0], op)
		case <-s.quit:
			return
		}
		batch = gather(batch, s.ops)
		if s.testHookCommit != nil {
			s.testHookCommit()
		}
		s.commit(ctx, batch, &rs)
		clear(batch)
	}
}

// gather adds to batch, up to maxBatch, the callers already waiting to send
// on ops, without waiting for more: those that arrived while the previous
// group commit ran. It yields first: the callers the last commit released
// are runnable, but the first to send wakes the committer ahead of the
// rest, which would then miss this batch and pay for commits of their own
// (a batch of a few ops instead of dozens under 64 callers, at twice the
// CPU per row). Gosched waits for no timer, only for goroutines ready to
// run.
func gather[T any](batch []T, ops <-chan T) []T {
	runtime.Gosched()
	for len(batch) < maxBatch {
		select {
		case op := <-ops:
			batch = append(batch, op)
		default:
			return batch
		}
	}
	return batch
}

// commit applies batch in one transaction. If that fails, each operation is
// retried in a transaction of its own so one bad row (a foreign key naming an
// unknown eval, say) fails only its own caller.
func (s *Store) commit(ctx context.Context, batch []*writeOp, rs *rowSets) {
	// The created_at of every row in the batch: the time it began to commit,
	// formatted once rather than for each row.
	now := formatTime(time.Now())
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return s.apply(ctx, tx, batch, rs, now)
	})
	if err == nil || len(batch) == 1 {
		for _, op := range batch {
			op.done <- err
		}
		return
	}
	for i, op := range batch {
		op.done <- s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			return s.apply(ctx, tx, batch[i:i+1], rs, now)
		})
	}
}

// apply runs the SQL of batch's ops in tx, then inserts all their rows, one
// multi-row INSERT per table and chunk (see rowSets). SQL first, so that an
// eval put in the same batch as its samples precedes them.
func (s *Store) apply(ctx context.Context, tx *sql.Tx, batch []*writeOp, rs *rowSets, now string) error {
	defer rs.reset()
	for _, op := range batch {
		if op.exec != nil {
			if err := op.exec(ctx, tx); err != nil {
				return err
			}
		}
		for _, r := range op.rows {
			rs.add(r, now)
		}
	}
	return rs.insert(ctx, tx, &s.inserts)
}

func (s *Store) inTx(ctx context.Context, f func(context.Context, *sql.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.inTxOnce(ctx, f)
		if err == nil || attempt == txTries || !transient(err) {
			return err
		}
		// PostgreSQL aborts one of two writers whose row locks cross (4
		// shards feeding the same responses): the same transaction, run
		// again after the other has committed, goes through.
		t := time.NewTimer(time.Duration(attempt) * time.Duration(5+rand.IntN(20)) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// txTries bounds the runs of a transaction PostgreSQL aborted as a
// deadlock or serialization failure.
const txTries = 5

// transient is an error PostgreSQL asks the client to retry the
// transaction for: deadlock_detected (40P01), serialization_failure (40001).
func transient(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

func (s *Store) inTxOnce(ctx context.Context, f func(context.Context, *sql.Tx) error) error {
	tx, err := s.wconn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("journal %s: begin: %w", s.path, err)
	}
	if err := f(ctx, tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("journal %s: commit: %w", s.path, err)
	}
	return nil
}

// preparedStatements are prepared at Open.
var preparedStatements = []string{selectResponse, selectEmbedding}

func closeStmts[K comparable](stmts map[K]*sql.Stmt) error {
	var errs []error
	for _, st := range stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// timeFormat is fixed-width so that stored times sort as text.
const timeFormat = "2006-01-02T15:04:05.000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

// stamper formats unix nanoseconds as formatTime does, for the feed, which
// stamps every record it inserts: time.Format, layout parsing included,
// was 2 % of a fast run's kernel CPU. Records come in time order, so the
// date and time of day of the last second formatted are kept and only the
// microseconds written; a record of the same microsecond as the last gets
// the same string.
type stamper struct {
	sec    int64  // the second prefix is of
	prefix []byte // "2006-01-02T15:04:05." at sec; nil: none yet
	us     int64  // the microsecond last is of
	last   string
}

func (st *stamper) format(ns int64) string {
	sec, frac := ns/1e9, ns%1e9
	if frac < 0 { // before 1970: the fraction counts up from the second below
		sec, frac = sec-1, frac+1e9
	}
	us := sec*1e6 + frac/1e3
	if st.prefix != nil && us == st.us {
		return st.last
	}
	if st.prefix == nil || sec != st.sec {
		st.prefix = time.Unix(sec, 0).UTC().AppendFormat(st.prefix[:0], timeFormat[:len("2006-01-02T15:04:05.")])
		st.sec = sec
	}
	var b [len(timeFormat) + 8]byte // room for a year beyond 9999
	n := copy(b[:], st.prefix)
	micro := frac / 1e3
	for i := n + 5; i >= n; i-- {
		b[i] = byte('0' + micro%10)
		micro /= 10
	}
	b[n+6] = 'Z'
	st.us, st.last = us, string(b[:n+7])
	return st.last
}

func parseTime(s string) (time.Time, error) { return time.Parse(timeFormat, s) }
