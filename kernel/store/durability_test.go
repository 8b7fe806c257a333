package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// A segment whose owner dies while another process is replaying other
// segments must be replayed from its progress row as it is when the lock
// is taken, not as it was read at the start of replayLogs: else records
// fed by the owner are fed again (attempts have no key: duplicated).
func TestReplayReadsProgressUnderLock(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	ctx := context.Background()
	a, path := openAt(t)
	a.fmu.Lock()
	a.feedWait = time.Hour
	a.fmu.Unlock()
	const n = 10
	for i := range n {
		if err := a.PutAttempt(ctx, fmt.Sprintf("live-%d", i), 1, "200", time.Millisecond, ""); err != nil {
			t.Fatal(err)
		}
	}
	// "kill -9" of a right after its feed commits: its locks go.
	a.fmu.Lock()
	a.fedHook = func(int) {
		a.fmu.Lock()
		for _, seg := range a.segs {
			seg.f.Close()
		}
		a.fmu.Unlock()
	}
	a.fmu.Unlock()
	// A dead process's big segment, sorted first, keeps the opener busy.
	log := newTestLog(false)
	var recs [][]byte
	for i := range 150000 {
		rec, err := encodeRecord([]row{{table: attemptsTable, args: []any{fmt.Sprintf("dead-%d", i), 1, "200", 1.0, ""}}}, time.Now().UnixNano())
		if err != nil {
			t.Fatal(err)
		}
		if recs = append(recs, rec); len(recs) == 64 {
			log.batch(recs...)
			recs = recs[:0]
		}
	}
	log.batch(recs...)
	if err := os.WriteFile(filepath.Join(path+logDirSuffix, "00000000-dead.log"), log.b, 0o644); err != nil {
		t.Fatal(err)
	}
	type res struct {
		s   *Store
		err error
	}
	ch := make(chan res, 1)
	start := time.Now()
	go func() {
		c, err := Open(ctx, path)
		ch <- res{c, err}
	}()
	time.Sleep(150 * time.Millisecond) // c has read journal_logs and is feeding the dead segment
	if err := a.flush(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-ch
	t.Logf("opener took %v", time.Since(start))
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.s.Close()
	var dup int
	if err := r.s.db.QueryRow(`SELECT count(*) FROM attempts WHERE request_key LIKE 'live-%'`).Scan(&dup); err != nil {
		t.Fatal(err)
	}
	if dup != n {
		t.Errorf("%d attempt rows for %d attempts put: the live-then-dead segment was fed twice (stale fed offset)", dup, n)
	}
	a.Close()
}

// A feed that fails once (the database busy past busy_timeout, say) and then
// succeeds leaves nothing unfed; Close should then neither fail nor keep the
// log.
func TestFeedErrorClearedByLaterFeed(t *testing.T) {
	ctx := context.Background()
	s, path := openAt(t)
	raw := rawDB(t, path)
	for _, q := range []string{
		`CREATE TABLE fail_once (x)`,
		`INSERT INTO fail_once VALUES (1)`,
		`CREATE TRIGGER fail_once_t BEFORE INSERT ON attempts WHEN EXISTS (SELECT 1 FROM fail_once) BEGIN SELECT RAISE(ABORT, 'transient'); END`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutAttempt(ctx, "k", 1, "200", time.Millisecond, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.flush(ctx); err == nil {
		t.Fatal("feed did not fail")
	}
	raw.Exec(`DELETE FROM fail_once`)
	if err := s.flush(ctx); err != nil {
		t.Fatalf("feed after the fault: %v", err)
	}
	at, _ := s.Attempts(ctx, "k")
	if len(at) != 1 {
		t.Fatalf("%d attempts", len(at))
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close failed although everything was fed: %v", err)
	}
	logs, _ := filepath.Glob(filepath.Join(path+logDirSuffix, "*.log"))
	if len(logs) != 0 {
		t.Errorf("fully fed log kept: %v", logs)
	}
}

// If removing a closed, fully fed segment fails after its records were
// committed (here: deleting its progress row), the feeder must not put
// those committed records back in the queue and feed them again.
func TestDropFailureDoesNotRefeed(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MB")
	}
	ctx := context.Background()
	s, path := openAt(t)
	raw := rawDB(t, path)
	if _, err := raw.Exec(`CREATE TRIGGER fail_drop BEFORE DELETE ON journal_logs BEGIN SELECT RAISE(ABORT, 'busy'); END`); err != nil {
		t.Fatal(err)
	}
	k := mustKeyer(t, testIdentity())
	text := strings.Repeat("x", 1<<20)
	const puts = 70 // > 64 MB: the first segment is closed
	for i := range puts {
		r := mustKeyed(t, k, testRequest(i))
		resp := &sdk.GenerateResponse{Text: text, FinishReason: "stop", Attempts: []sdk.Attempt{{Status: 200}}}
		if err := s.PutResponse(ctx, k, r, resp, time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	err1 := s.flush(ctx)
	err2 := s.flush(ctx)
	t.Logf("flush errors: %v / %v", err1, err2)
	s.fmu.Lock()
	t.Logf("after the failed drop: queue %d records, unfed %d", len(s.queue), s.unfed)
	s.fmu.Unlock()
	raw.Exec(`DROP TRIGGER fail_drop`)
	t.Logf("Close: %v", s.Close())
	var n int
	raw.QueryRow(`SELECT count(*) FROM attempts`).Scan(&n)
	if n != puts {
		t.Errorf("%d attempt rows for %d attempts put: committed records re-queued and fed again after dropSegments failed", n, puts)
	}
}

// Under SyncBatch the WAL is synced before a fed log is removed, even when
// another connection's read snapshot keeps the checkpoint from copying
// (and so from syncing) the frames that hold the log's rows; and after the
// run and eval rows, which records in the log refer to. Under SyncOS it is
// not (nothing there survives a power loss for sure).
func TestWALSyncedBeforeWhatDependsOnIt(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []Sync{SyncBatch, SyncOS} {
		t.Run(string(mode), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.db")
			s, err := OpenWith(ctx, path, Options{Sync: mode})
			if err != nil {
				t.Fatal(err)
			}
			reader, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Close()
			tx, err := reader.Begin()
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var x int
			if err := tx.QueryRow(`SELECT count(*) FROM attempts`).Scan(&x); err != nil { // the snapshot
				t.Fatal(err)
			}
			before := s.walSyncs.Load()
			run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "x.hcl"})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.PutEval(ctx, run, EvalInfo{Name: "e", Task: "t", Model: "m"}); err != nil {
				t.Fatal(err)
			}
			rowsSynced := s.walSyncs.Load() - before
			for i := range 100 {
				if err := s.PutAttempt(ctx, fmt.Sprint("k", i), 1, "200", time.Millisecond, ""); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.flush(ctx); err != nil {
				t.Fatal(err)
			}
			fed := s.walSyncs.Load()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			logs, _ := filepath.Glob(filepath.Join(path+logDirSuffix, "*.log"))
			if len(logs) != 0 {
				t.Fatalf("fed log kept: %v", logs)
			}
			want := int64(2)
			if mode == SyncOS {
				want = 0
			}
			if rowsSynced != want {
				t.Errorf("the run and eval rows: %d WAL syncs, want %d", rowsSynced, want)
			}
			if removal := s.walSyncs.Load() - fed; (removal > 0) != (mode == SyncBatch) {
				t.Errorf("removing the fed log: %d WAL syncs", removal)
			}
		})
	}
}

// openAt opens a fresh journal and returns it with its path; the test
// closes it.
func openAt(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}
