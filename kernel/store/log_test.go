package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hayloft/hayloft/sdk"
)

// testLog builds a log file as the appender writes it, records in
// batches, one per group commit; v1, as the release before batches wrote
// it (HAYLOG1: the records alone).
type testLog struct {
	b     []byte
	id    [segmentIDBytes]byte
	v1    bool
	flags uint32 // of the batches to come
}

func newTestLog(v1 bool) *testLog {
	l := &testLog{v1: v1, flags: batchSynced}
	if v1 {
		l.b = []byte(logMagicV1)
		return l
	}
	copy(l.id[:], "seg-id-1")
	l.b = append([]byte(logMagic), l.id[:]...)
	return l
}

// batch appends recs as one group commit and returns where each starts.
func (l *testLog) batch(recs ...[]byte) []int {
	if !l.v1 {
		n := 0
		var sum uint32
		for _, r := range recs {
			n += len(r)
			sum = recordsCRC(sum, r)
		}
		l.b = appendBatchHeader(l.b, &l.id, int64(len(l.b)), int64(n), l.flags, sum)
	}
	starts := make([]int, len(recs))
	for i, r := range recs {
		starts[i] = len(l.b)
		l.b = append(l.b, r...)
	}
	return starts
}

// tornFixture is a closed journal holding one run and eval, and the log a
// process killed before feeding it would leave: a header and records,
// each a response with its attempt and sample as the runner's Puts frame
// them, two to a group commit, then one failure alone in the last (short,
// so that cutting it at every offset is quick).
type tornFixture struct {
	db      []byte // the database file
	run     string
	log     []byte
	keys    []string // of the records, in order
	starts  []int    // where each response's record starts
	ends    []int    // and ends
	batches []int    // where each batch starts (a version 2 log), the failure's last
	lastOff int      // where the last batch (version 1: record) starts: the failure's
	l       *testLog // that built log, for more batches
}

func newTornFixture(t *testing.T, records int) *tornFixture {
	return buildTornFixture(t, records, newTestLog(false))
}

// newTornFixtureV1 is newTornFixture with a log of format version 1.
func newTornFixtureV1(t *testing.T, records int) *tornFixture {
	return buildTornFixture(t, records, newTestLog(true))
}

func buildTornFixture(t *testing.T, records int, l *testLog) *tornFixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "j.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "torn.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutEval(ctx, run, EvalInfo{Name: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := &tornFixture{db: db, run: run}
	k := mustKeyer(t, testIdentity())
	var recs [][]byte
	for i := range records {
		r := mustKeyed(t, k, testRequest(i))
		resp := &sdk.GenerateResponse{Text: fmt.Sprintf("answer %d", i), FinishReason: "stop", Attempts: []sdk.Attempt{{Status: 200}},
			Usage: sdk.Usage{PromptTokens: 3, CompletionTokens: 4}}
		if i%2 == 0 { // and odd ones with no cached count: a NULL in the record
			resp.Usage.CachedTokens = &i
		}
		rows, err := responseRows(k, r, resp, 5*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		smp := &sdk.Sample{ID: fmt.Sprint(i), Question: "q", Targets: []string{"a"}}
		sr, err := sampleRow(run, "e", smp, SampleMeta{Index: i, RequestKey: r.Key})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := encodeRecord(append(rows, sr), time.Now().UnixNano())
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
		f.keys = append(f.keys, r.Key)
	}
	for i := 0; i < len(recs); i += 2 {
		f.batches = append(f.batches, len(l.b))
		for j, at := range l.batch(recs[i:min(i+2, len(recs))]...) {
			f.starts = append(f.starts, at)
			f.ends = append(f.ends, at+len(recs[i+j]))
		}
	}
	rec, err := encodeRecord([]row{{table: failuresTable, args: []any{run, "e", "last", "k", CodeTimeout, "slow"}}}, time.Now().UnixNano())
	if err != nil {
		t.Fatal(err)
	}
	f.lastOff = len(l.b)
	f.batches = append(f.batches, len(l.b))
	l.batch(rec)
	f.log, f.l = l.b, l
	return f
}

// open writes the journal with the log cut to n bytes and opens it.
func (f *tornFixture) open(t *testing.T, n int) (*Store, string) {
	t.Helper()
	s, path, err := f.openLog(t, f.log[:n], nil)
	if err != nil {
		t.Fatalf("open with the log cut at %d of %d bytes: %v", n, len(f.log), err)
	}
	return s, path
}

// openLog writes the journal with log as a dead process's segment,
// dead-1.log, and opens it with logger.
func (f *tornFixture) openLog(t *testing.T, log []byte, logger hclog.Logger) (*Store, string, error) {
	t.Helper()
	path := f.writeDeadLog(t, log)
	s, err := OpenWith(context.Background(), path, Options{Logger: logger})
	return s, path, err
}

// present reports which of the fixture's responses, and whether its
// failure, the journal s holds.
// replay opens a journal whose dead process left log, and returns which of
// its records' responses and whether its failure are in the journal, what
// Open warned, and the journal's path; the journal is closed again.
func (f *tornFixture) replay(t *testing.T, log []byte) (responses []bool, failure bool, w *warnings, path string) {
	t.Helper()
	w = new(warnings)
	s, path, err := f.openLog(t, log, w.logger())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	responses, failure = f.present(t, s)
	s.Close()
	return responses, failure, w, path
}

func (f *tornFixture) present(t *testing.T, s *Store) (responses []bool, failure bool) {
	t.Helper()
	ctx := context.Background()
	for _, key := range f.keys {
		_, ok, err := s.LookupResponse(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		responses = append(responses, ok)
	}
	samples, err := s.Samples(ctx, f.run, "e")
	if err != nil {
		t.Fatal(err)
	}
	// A response and its sample are one record: they come and go together.
	if n := count(responses); len(samples) != n {
		t.Fatalf("%d samples for %d responses", len(samples), n)
	}
	failures, err := s.Failures(ctx, f.run, "e")
	if err != nil {
		t.Fatal(err)
	}
	return responses, len(failures) == 1
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// warnings is a logger for Options.Logger that keeps what it is told.
type warnings struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *warnings) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (w *warnings) logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: w, Level: hclog.Warn})
}

// Cutting the log anywhere in its last batch (a torn tail after kill -9,
// or a power loss that left the zeros reserved past it) loses that batch
// only: opening never fails, nor warns, every earlier record is fed, and
// the log is removed. The same for a version 1 log cut in its last record.
func TestTornTailAtEveryOffset(t *testing.T) {
	for _, c := range []struct {
		name   string
		f      *tornFixture
		zeroed int // bytes of zeros after the cut
	}{
		{"v2", newTornFixture(t, 3), 0},
		{"v2 reserved", newTornFixture(t, 3), 4096},
		{"v1", newTornFixtureV1(t, 3), 0},
		{"v1 reserved", newTornFixtureV1(t, 3), 4096},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.f
			for n := f.lastOff; n <= len(f.log); n++ {
				var w warnings
				log := append(slices.Clip(f.log[:n]), make([]byte, c.zeroed)...)
				s, path, err := f.openLog(t, log, w.logger())
				if err != nil {
					t.Fatalf("log cut at %d of %d: %v", n, len(f.log), err)
				}
				responses, failure := f.present(t, s)
				if count(responses) != len(f.keys) {
					t.Fatalf("log cut at %d of %d: responses present %v", n, len(f.log), responses)
				}
				if want := n == len(f.log); failure != want {
					t.Fatalf("log cut at %d of %d: last record present = %v, want %v", n, len(f.log), failure, want)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if left, _ := os.ReadDir(path + logDirSuffix); len(left) != 0 {
					t.Fatalf("log cut at %d: %d files left in the log directory after replay", n, len(left))
				}
				if w.String() != "" {
					t.Fatalf("log cut at %d: a torn tail warned: %s", n, w.String())
				}
			}
		})
	}
}

// Any byte of the last batch damaged (a power loss persists its pages in
// any order, some not at all) is a torn tail too: that batch is dropped,
// silently, and nothing before it.
func TestTornTailWithFlippedBytes(t *testing.T) {
	f := newTornFixture(t, 3)
	for i := f.lastOff; i < len(f.log); i++ {
		var w warnings
		log := append(bytes.Clone(f.log), make([]byte, 1024)...)
		log[i] ^= 0xff
		s, path, err := f.openLog(t, log, w.logger())
		if err != nil {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
		responses, failure := f.present(t, s)
		if count(responses) != len(f.keys) || failure {
			t.Fatalf("byte %d flipped: responses %v, failure %v; want all, and no failure", i, responses, failure)
		}
		s.Close()
		if left, _ := os.ReadDir(path + logDirSuffix); len(left) != 0 || w.String() != "" {
			t.Fatalf("byte %d flipped: %d files left, warned %q", i, len(left), w.String())
		}
	}
}

// A log cut inside its header, or empty, holds nothing and opens cleanly.
func TestTornHeader(t *testing.T) {
	for _, f := range []*tornFixture{newTornFixture(t, 1), newTornFixtureV1(t, 1)} {
		for n := range f.starts[0] {
			s, _ := f.open(t, n)
			if _, ok, err := s.LookupResponse(context.Background(), f.keys[0]); err != nil || ok {
				t.Fatalf("cut at %d: ok=%v err=%v", n, ok, err)
			}
			s.Close()
		}
	}
}

// A record gives back every value of every logged table as written,
// NULLs included (a sample without a grid point, a response whose server
// gave no cached count): the feed inserts what a direct write would.
func TestRecordRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows []row
	}{
		{"sample with a grid point", []row{{table: samplesTable, args: []any{"r", "e", "s", int64(3), "q", "[]", int64(1000), "tok", 0.5,
			"en", "", "{}", "", true, int64(900), "[]", "k", int64(1024), 0.25}}}},
		{"sample without one", []row{{table: samplesTable, args: []any{"r", "e", "s", int64(3), "q", "[]", int64(1000), "tok", 0.5,
			"en", "", "{}", "", false, int64(900), "[]", "k", nil, nil}}}},
		{"response with cached tokens, then an attempt", []row{
			{table: responsesTable, args: []any{"k", "{}", "{}", "text", "stop", int64(10), int64(2), 1.5, int64(8)}},
			{table: attemptsTable, args: []any{"k", int64(1), "ok", 1.5, ""}},
		}},
		{"response without", []row{{table: responsesTable, args: []any{"k", "{}", "{}", "", "stop", int64(10), int64(2), 1.5, nil}}}},
		{"score and failure", []row{
			{table: scoresTable, args: []any{"r", "e", "s", "x", 1.0, false, "{}", "[]"}},
			{table: failuresTable, args: []any{"r", "e", "s", "k", "timeout", "slow"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := encodeRecord(tc.rows, 42)
			if err != nil {
				t.Fatal(err)
			}
			rows, at, err := decodeRecord(rec[8:])
			if err != nil {
				t.Fatal(err)
			}
			if at != 42 || !reflect.DeepEqual(rows, tc.rows) {
				t.Errorf("decoded at %d: %+v\nwant %+v", at, rows, tc.rows)
			}
		})
	}
}

// A record whose checksum holds but whose content does not decode is not a
// torn tail: Open refuses, naming the file and offset, and keeps the file.
func TestCorruptRecordIsAnError(t *testing.T) {
	f := newTornFixture(t, 2)
	rec, err := encodeRecord([]row{{table: scoresTable, args: []any{"r", "e", "s", "x", 1.0, false, "{}", "[]"}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Table id 99 with a valid checksum.
	rec[16] = 99
	payload := rec[8:]
	var fixed bytes.Buffer
	fixed.Write(rec[:4])
	fixed.Write(crcBytes(payload))
	fixed.Write(payload)
	off := f.l.batch(fixed.Bytes())[0]
	f.log = f.l.b
	dir := t.TempDir()
	path := filepath.Join(dir, "j.db")
	os.WriteFile(path, f.db, 0o644)
	os.MkdirAll(path+logDirSuffix, 0o755)
	logPath := filepath.Join(path+logDirSuffix, "dead-2.log")
	os.WriteFile(logPath, f.log, 0o644)
	_, err = Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "dead-2.log") || !strings.Contains(err.Error(), "unknown table 99") ||
		!strings.Contains(err.Error(), fmt.Sprintf("offset %d:", off)) {
		t.Fatalf("Open = %v, want an error naming the log, the bad record and its offset %d", err, off)
	}
	if _, err := os.Stat(logPath); err != nil {
		t.Fatalf("the corrupt log was not kept: %v", err)
	}
}

// A segment half fed when its process died is fed from where it stopped:
// its rows are never inserted twice (attempts have no key to dedupe on).
func TestReplayResumesFromFedOffset(t *testing.T) {
	f := newTornFixture(t, 3)
	f.log = f.log[:f.lastOff] // without the failure
	ctx := context.Background()
	s, path := f.open(t, len(f.log))
	s.Close()
	// Make it look as if the first two records had been fed and the
	// process died: the same log again, with its progress row.
	db := rawDB(t, path)
	second := f.ends[1]
	if _, err := db.Exec(`DELETE FROM attempts WHERE request_key = ?`, f.keys[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM responses WHERE key = ?`, f.keys[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO journal_logs (name, fed, updated_at) VALUES ('dead-1.log', ?, 'x')`, second); err != nil {
		t.Fatal(err)
	}
	db.Close()
	os.WriteFile(filepath.Join(path+logDirSuffix, "dead-1.log"), f.log, 0o644)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, key := range f.keys {
		if _, ok, _ := s.LookupResponse(ctx, key); !ok {
			t.Errorf("response %d missing", i)
		}
		at, err := s.Attempts(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(at) != 1 {
			t.Errorf("response %d has %d attempts, want 1", i, len(at))
		}
	}
	var rows int
	s.db.QueryRow(`SELECT count(*) FROM journal_logs`).Scan(&rows)
	if rows != 0 {
		t.Errorf("%d progress rows left after the log was removed", rows)
	}
}

// The log of a live process (another Store on the same journal) is its
// own to feed: opening the journal leaves it alone.
func TestLiveLogIsNotReplayed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.db")
	a, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	k := mustKeyer(t, testIdentity())
	r := mustKeyed(t, k, testRequest(1))
	if err := a.PutResponse(ctx, k, r, &sdk.GenerateResponse{Text: "a"}, 0); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(path+logDirSuffix, "*.log"))
	if len(logs) != 1 {
		t.Fatalf("%d log files, want 1", len(logs))
	}
	b, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(logs[0]); err != nil {
		t.Fatalf("a live process's log was taken: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(logs[0]); !os.IsNotExist(err) {
		t.Fatalf("log not removed by its own Close: %v", err)
	}
	c, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok, err := c.LookupResponse(ctx, r.Key); err != nil || !ok {
		t.Fatalf("response lost: ok=%v err=%v", ok, err)
	}
}

// The journal keeps a request once however many attempts it took: in the
// log record and in the database.
func TestRequestStoredOncePerResponse(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	k := mustKeyer(t, testIdentity())
	marker := strings.Repeat("needle in a haystack ", 200)
	req := &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: marker}}}
	r := mustKeyed(t, k, req)
	resp := &sdk.GenerateResponse{Text: "x", Attempts: []sdk.Attempt{{Status: 503, Error: "busy"}, {Status: 429, Error: "slow"}, {Status: 200}}}
	if err := s.PutResponse(ctx, k, r, resp, time.Second); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(s.logDir, "*.log"))
	if len(logs) != 1 {
		t.Fatalf("%d log files, want 1", len(logs))
	}
	raw, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(raw, []byte(marker)); n != 1 {
		t.Errorf("the log holds the request %d times, want 1", n)
	}
	at, err := s.Attempts(ctx, r.Key)
	if err != nil || len(at) != 3 {
		t.Fatalf("attempts = %v, %v", at, err)
	}
	var n int
	s.db.QueryRow(`SELECT count(*) FROM responses WHERE instr(request, ?) > 0`, marker).Scan(&n)
	if n != 1 {
		t.Errorf("the database holds the request %d times, want 1", n)
	}
}

// testdata/journal-v1.db was written by the release before journal v2
// (commit ffa29b3) through its Store: one run, eval "e", 39 answered
// requests testRequest(0..38) under testIdentity with their samples,
// scores and attempts, request 39 failed (a failure and an attempt), one
// embedding. Opened under v2 it migrates, and resuming asks nothing again
// but the failed request.
func TestV1JournalResumesWithoutReasking(t *testing.T) {
	ctx := context.Background()
	src, err := os.Open("testdata/journal-v1.db")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), "hayloft.db")
	dst, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	var v int
	rawDB(t, path).QueryRow("PRAGMA user_version").Scan(&v)
	if v != 1 {
		t.Fatalf("fixture has schema %d, want 1", v)
	}

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := mustKeyer(t, testIdentity())
	asked := 0
	for i := range 40 {
		r := mustKeyed(t, k, testRequest(i))
		c, ok, err := s.LookupResponse(ctx, r.Key)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			asked++
			if i != 39 {
				t.Errorf("request %d would be asked again", i)
			}
			continue
		}
		if want := fmt.Sprintf("answer %d", i); c.Response.Text != want {
			t.Errorf("request %d: text %q, want %q", i, c.Response.Text, want)
		}
	}
	if asked != 1 {
		t.Errorf("resume asks %d requests, want 1 (the failed one)", asked)
	}
	runs, err := s.Runs(ctx)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs = %v, %v", runs, err)
	}
	run := runs[0].ID
	samples, err := s.Samples(ctx, run, "e")
	if err != nil || len(samples) != 39 {
		t.Fatalf("samples: %d, %v", len(samples), err)
	}
	scores, err := s.Scores(ctx, run, "e", "contains")
	if err != nil || len(scores) != 39 {
		t.Fatalf("scores: %d, %v", len(scores), err)
	}
	failures, err := s.Failures(ctx, run, "e")
	if err != nil || len(failures) != 1 || failures[0].Code != "server_error" {
		t.Fatalf("failures = %+v, %v", failures, err)
	}
	// New work lands in the migrated journal beside the old, through the
	// log, and the file stays a plain SQLite database.
	r := mustKeyed(t, k, testRequest(39))
	if err := s.PutResponse(ctx, k, r, &sdk.GenerateResponse{Text: "answer 39"}, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := s.PutResult(ctx, run, "e", &sdk.Sample{ID: "s39"}, SampleMeta{Index: 39, RequestKey: r.Key},
		[]NamedScore{{Scorer: "contains", Score: &sdk.ScoreResponse{Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	var responses, version int
	db.QueryRow("PRAGMA user_version").Scan(&version)
	db.QueryRow("SELECT count(*) FROM responses").Scan(&responses)
	if version != SchemaVersion || responses != 40 {
		t.Errorf("after resume: schema %d (want %d), %d responses (want 40)", version, SchemaVersion, responses)
	}
}

func crcBytes(p []byte) []byte {
	return binary.LittleEndian.AppendUint32(nil, crc32.Checksum(p, crcTable))
}

// Long records (a long context's request) are written from their own
// buffer, short ones together: in one group commit, mixed, each lands whole
// and in order, and the database gets every request as keyed.
func TestLongAndShortRecordsInOneGroupCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	k := mustKeyer(t, testIdentity())
	var keyed []Keyed
	for i := range 24 {
		content := fmt.Sprintf("short %d", i)
		if i%3 == 0 {
			content = strings.Repeat(fmt.Sprintf("long %d ", i), directWriteBytes/6)
		}
		keyed = append(keyed, mustKeyed(t, k, &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: content}}}))
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(keyed))
	for i, r := range keyed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.PutResponse(ctx, k, r, &sdk.GenerateResponse{Text: fmt.Sprint(i)}, time.Millisecond)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	for i, r := range keyed {
		want, err := r.journalForm()
		if err != nil {
			t.Fatal(err)
		}
		var request, text string
		if err := db.QueryRow(`SELECT request, text FROM responses WHERE key = ?`, r.Key).Scan(&request, &text); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if request != want || text != fmt.Sprint(i) {
			t.Errorf("response %d: request of %d bytes (want %d), text %q", i, len(request), len(want), text)
		}
	}
}

// A segment its process died creating (before the rename that makes it a
// .log) is removed by the next Open; one still being created is left alone.
func TestStrayNewSegmentRemoved(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	logDir := s.logDir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(logDir, "20261124T000000.000000Z-1-00000000.log.new")
	if err := os.WriteFile(stray, []byte(logMagic), 0o644); err != nil {
		t.Fatal(err)
	}
	busy := filepath.Join(logDir, "20261124T000000.000000Z-2-00000000.log.new")
	f, err := os.Create(busy)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ok, err := lockFile(f); !ok || err != nil {
		t.Fatalf("lock %s: %v %v", busy, ok, err)
	}
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stray segment still there: %v", err)
	}
	if _, err := os.Stat(busy); err != nil {
		t.Errorf("a segment still being created was removed: %v", err)
	}
}

// A journal opened while another process creates a log file may take the
// half-made file for one a dead process left (removeStrayNew); the creator
// must notice and make another, never fail. flock locks conflict between
// two opens in one process, so goroutines stand in for the processes.
func TestNewSegmentRacesStrayRemoval(t *testing.T) {
	dir := t.TempDir()
	done := make(chan struct{})
	var swept sync.WaitGroup
	swept.Add(1)
	go func() {
		defer swept.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".log.new") {
					removeStrayNew(filepath.Join(dir, e.Name()))
				}
			}
		}
	}()
	for i := range 300 {
		seg, err := newSegment(dir)
		if err != nil {
			close(done)
			swept.Wait()
			t.Fatalf("segment %d: %v", i, err)
		}
		if _, err := os.Stat(filepath.Join(dir, seg.name)); err != nil {
			t.Errorf("segment %d: %v", i, err)
		}
		seg.f.Close()
	}
	close(done)
	swept.Wait()
}

// linger takes the records that come while it waits, up to lingerRecords,
// and ends at once when the journal closes, its time is up, or no record
// came within lingerGaps times the gap it was given (at least lingerGapMin).
func TestLinger(t *testing.T) {
	for _, c := range []struct {
		name   string
		max    time.Duration
		gap    time.Duration
		send   int  // records sent while it lingers
		close  bool // close the journal once they are taken
		want   int  // records in the batch, the first included
		unsent int  // records left for the next batch
	}{
		{"fills up", time.Hour, time.Hour, lingerRecords - 1, false, lingerRecords, 0},
		{"stops at lingerRecords", time.Hour, time.Hour, lingerRecords + 5, false, lingerRecords, 6},
		{"closing", time.Hour, time.Hour, 3, true, 4, 0},
		{"time is up", time.Nanosecond, time.Hour, 0, false, 1, 0},
		{"no record within the gap", time.Hour, time.Nanosecond, 0, false, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Store{logOps: make(chan *logOp), closing: make(chan struct{}), lingerMax: c.max}
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				for range c.send - c.unsent {
					s.logOps <- &logOp{}
				}
				if c.close {
					close(s.closing)
				}
			}()
			rest := make(chan int)
			if c.unsent > 0 {
				// The records linger does not take wait for the next batch.
				go func() {
					<-sent
					n := 0
					for range c.unsent {
						s.logOps <- &logOp{}
						n++
					}
					rest <- n
				}()
			}
			got := s.linger([]*logOp{{}}, c.gap)
			if len(got) != c.want {
				t.Errorf("batch of %d records, want %d", len(got), c.want)
			}
			<-sent
			if c.unsent > 0 {
				for range c.unsent {
					<-s.logOps
				}
				if n := <-rest; n != c.unsent {
					t.Errorf("%d records left, want %d", n, c.unsent)
				}
			}
		})
	}
}

// linger stops once the batch holds lingerBytes: long records are not
// held back for more.
func TestLingerBytes(t *testing.T) {
	s := &Store{logOps: make(chan *logOp), closing: make(chan struct{}), lingerMax: time.Hour}
	long := &logOp{rec: make([]byte, lingerBytes/2)}
	if got := s.linger([]*logOp{{rec: make([]byte, lingerBytes)}}, time.Hour); len(got) != 1 {
		t.Errorf("a batch of lingerBytes took %d more records", len(got)-1)
	}
	done := make(chan []*logOp)
	go func() { done <- s.linger([]*logOp{long}, time.Hour) }()
	s.logOps <- long
	if got := <-done; len(got) != 2 {
		t.Errorf("batch of %d records, want 2", len(got))
	}
}

// feedDue: a feed's worth of records or bytes, or anything at all while
// the feeder follows the log.
func TestFeedDue(t *testing.T) {
	for _, c := range []struct {
		name    string
		records int
		bytes   int
		follow  bool
		want    bool
	}{
		{"empty", 0, 0, false, false},
		{"a few", 3, 300, false, false},
		{"feedRecords", feedRecords, 300, false, true},
		{"feedBytes", 1, feedBytes, false, true},
		{"following, empty", 0, 0, true, false},
		{"following, one", 1, 100, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Store{queue: make([]fedItem, c.records), queuedBytes: c.bytes}
			s.follow.Store(c.follow)
			if got := s.feedDue(); got != c.want {
				t.Errorf("feedDue() = %v, want %v", got, c.want)
			}
		})
	}
}

// While the feeder follows the log, a synced record reaches the database
// by itself: no flush, no FeedSoon, no feed's worth queued.
func TestFeedFollow(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fed := make(chan int, 16)
	s.fmu.Lock()
	s.fedHook = func(n int) { fed <- n }
	s.feedWait = time.Hour // no feed for want of records in time: only following feeds it
	s.fmu.Unlock()
	s.FeedFollow(true)
	k := mustKeyer(t, testIdentity())
	r := mustKeyed(t, k, testRequest(1))
	if err := s.PutResponse(ctx, k, r, &sdk.GenerateResponse{Text: "a"}, 0); err != nil {
		t.Fatal(err)
	}
	if n := <-fed; n != 1 {
		t.Fatalf("fed %d records, want 1", n)
	}
	var rows int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM responses WHERE key = ?", r.Key).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Errorf("%d rows of the response in the database, want 1", rows)
	}
}
