package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hayloft/hayloft/kernel/store/pgtest"
	"github.com/hayloft/hayloft/sdk"
)

// pgTestPassword is the test superuser's password, which the tests check
// is never written anywhere.
const pgTestPassword = pgtest.Password

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// testPostgres returns the DSN (without password; PGPASSWORD is set) of a
// new, empty database on the test cluster, or skips (fails under CI).
func testPostgres(t *testing.T) string {
	t.Helper()
	return pgtest.NewDatabase(t)
}

// The PostgreSQL password comes from the environment and is written
// nowhere: not in the database, the log, Path, or an error, even when the
// DSN itself carries it (store = env("PG_DSN")).
func TestPostgresPasswordIsNeverWritten(t *testing.T) {
	dsn := testPostgres(t)
	t.Chdir(t.TempDir())
	ctx := context.Background()
	withPassword := strings.Replace(dsn, "postgres@", "postgres:"+pgTestPassword+"@", 1)
	s, err := Open(ctx, withPassword)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.Path(), pgTestPassword) {
		t.Errorf("Path() = %q shows the password", s.Path())
	}
	run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "pg.hcl", ConfigText: `store = env("PG_DSN")`})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutEval(ctx, run, EvalInfo{Name: "e"}); err != nil {
		t.Fatal(err)
	}
	k := mustKeyer(t, testIdentity())
	r := mustKeyed(t, k, testRequest(1))
	if err := s.PutResponse(ctx, k, r, &sdk.GenerateResponse{Text: "x"}, 0); err != nil {
		t.Fatal(err)
	}
	var logged []byte
	logs, _ := filepath.Glob(filepath.Join(s.logDir, "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		logged = append(logged, b...)
	}
	if len(logs) == 0 || bytes.Contains(logged, []byte(pgTestPassword)) {
		t.Errorf("log files %v: %d bytes, password present = %v", logs, len(logged), bytes.Contains(logged, []byte(pgTestPassword)))
	}
	// Every text the journal holds, in every table.
	var dump string
	err = s.db.QueryRowContext(ctx, `SELECT string_agg(t::text, ' ') FROM (
		SELECT row_to_json(r)::text AS t FROM runs r UNION ALL SELECT row_to_json(e)::text FROM evals e
		UNION ALL SELECT row_to_json(x)::text FROM responses x UNION ALL SELECT row_to_json(l)::text FROM journal_logs l) all_rows`).Scan(&dump)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(dump, pgTestPassword) || !strings.Contains(dump, "pg.hcl") {
		t.Errorf("the database's rows hold the password (or the dump is empty): %.300s", dump)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Errors: a wrong password, an unknown database, an unreachable server.
	t.Setenv("PGPASSWORD", "")
	for _, bad := range []string{
		strings.Replace(withPassword, pgTestPassword, pgTestPassword+"-wrong", 1),
		strings.Replace(withPassword, "/hayloft_t", "/missing_t", 1),
		"postgres://postgres:" + pgTestPassword + "@127.0.0.1:1/x?sslmode=disable&connect_timeout=2",
	} {
		_, err := Open(ctx, bad)
		if err == nil {
			t.Fatalf("Open(%s) succeeded", redactDSN(bad))
		}
		if strings.Contains(err.Error(), pgTestPassword) {
			t.Errorf("error shows the password: %v", err)
		}
		if !strings.Contains(err.Error(), "open journal postgres://postgres@127.0.0.1:") {
			t.Errorf("error does not name the store: %v", err)
		}
	}
}

// PostgreSQL's migrations mirror SQLite's version for version: a journal's
// schema version means the same columns on both.
func TestPostgresMigrationsMatchSQLite(t *testing.T) {
	if len(pgMigrations) != len(migrations) {
		t.Errorf("%d PostgreSQL migrations, %d SQLite ones", len(pgMigrations), len(migrations))
	}
}

// PostgreSQL's text refuses U+0000, which a model's answer or a data set's
// question may hold. Fed as is, that one row would fail every feed after
// it (one transaction), Close, and every later Open of the journal. The
// feed stores U+FFFD in its place, says so, and the journal goes on.
func TestPostgresStoresNULAsReplacement(t *testing.T) {
	dsn := testPostgres(t)
	t.Chdir(t.TempDir())
	ctx := context.Background()
	var w warnings
	s, err := OpenWith(ctx, dsn, Options{Logger: w.logger()})
	if err != nil {
		t.Fatal(err)
	}
	k := mustKeyer(t, testIdentity())
	bad := mustKeyed(t, k, testRequest(1))
	if err := s.PutResponse(ctx, k, bad, &sdk.GenerateResponse{Text: "nul \x00 here"}, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	good := mustKeyed(t, k, testRequest(2))
	if err := s.PutResponse(ctx, k, good, &sdk.GenerateResponse{Text: "fine"}, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key, text string
	}{{bad.Key, "nul \uFFFD here"}, {good.Key, "fine"}} {
		resp, ok, err := s.LookupResponse(ctx, c.key)
		if err != nil || !ok || resp.Response.Text != c.text {
			t.Errorf("response %q: %+v, found %v, %v", c.text, resp, ok, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !strings.Contains(w.String(), "U+0000") {
		t.Errorf("warned %q, want the replacement said", w.String())
	}
	s, err = Open(ctx, dsn)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if _, ok, err := s.LookupResponse(ctx, good.Key); err != nil || !ok {
		t.Errorf("after reopen, the valid response: found %v, %v", ok, err)
	}
}

// On PostgreSQL too, a record the database refuses (class 23: a sample of
// an eval the journal lacks) is set aside in a file beside the log, and
// the records around it are fed.
func TestPostgresRefusedRecordIsSetAside(t *testing.T) {
	dsn := testPostgres(t)
	t.Chdir(t.TempDir())
	ctx := context.Background()
	run, logDir := refusedJournal(t, dsn)
	writeRefusedLog(t, logDir, run)
	var w warnings
	s, err := OpenWith(ctx, dsn, Options{Logger: w.logger()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	samples, err := s.Samples(ctx, run, "e")
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 2 || samples[0].ID != "a" || samples[1].ID != "c" {
		t.Errorf("samples fed %d, want a and c", len(samples))
	}
	if _, err := os.Stat(filepath.Join(logDir, "dead-7.log"+unfedSuffix)); err != nil || !strings.Contains(w.String(), "set aside") || !strings.Contains(w.String(), "23503") {
		t.Errorf("set aside: %v; warned %q", err, w.String())
	}
}
