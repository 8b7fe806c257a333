package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Journal v2: a response, a sample and its scores, a failure or an attempt
// counts once its record is in the process's append-only log and synced
// (one fsync per group of records, however many goroutines wait on it).
// The queryable database is fed from the log in the background, in large
// batches, and from a dead process's log when the journal is next opened.
//
// A log is a set of segment files in the directory beside the database
// (path + "-log"). A live process holds an exclusive flock on each of its
// segments, so another process opening the journal feeds only the segments
// of processes that are gone. The table journal_logs records, in the same
// transaction as the rows, how far each segment has been fed, so a segment
// half fed when its process died is fed from there on, never twice.

// logDirSuffix names a journal's log directory after its database.
const logDirSuffix = "-log"

// segmentBytes is the size past which the log starts a new segment; a
// segment is removed once it is closed and fully fed.
const segmentBytes = 64 << 20

// The feeder lets records build up to feedRecords or feedBytes, or for
// feedDelay, before feeding them: SQLite's cost per row falls steeply with
// the size of the transaction, and nothing waits on the feed except
// readers, which ask for it (flush). Each feed rewrites every page of the
// hash-keyed indexes it touches, so the cost per sample falls until a feed
// holds a few thousand records (BenchmarkFeed: 512 records a feed cost a
// third more per sample than 4096, 16384 no less than 4096). The delay is
// long enough for a run at a few thousand samples/s to reach feedRecords
// first; a slower run, whose feed costs little, feeds once a second.
const (
	feedRecords = 4096
	feedBytes   = 16 << 20
	feedDelay   = time.Second
)

// directWriteBytes is the size from which a record is written on its own
// instead of copied into the group commit's buffer.
const directWriteBytes = 256 << 10

// reserveBytes is how far ahead of its records a segment is zeroed: the
// zeros, synced once, make each group commit an overwrite that fdatasync
// flushes without a file-system journal commit for the file's new size. A
// new segment reserves firstReserveBytes, and each reservation doubles the
// last up to reserveBytes: the first samples of a run wait for the first
// reservation's sync, and a short run never writes 4 MB of zeros.
const (
	firstReserveBytes = 256 << 10
	reserveBytes      = 4 << 20
)

// segment is one log file of this process.
type segment struct {
	name string // base name: the key in journal_logs
	f    *os.File
	id   [segmentIDBytes]byte // random: every batch header's checksum covers it
	// reserved is the end of the zeroed, synced space; the appender's.
	reserved int64
	// Guarded by Store.fmu:
	size   int64 // bytes written and synced
	fed    int64 // end of the last record in the database
	closed bool  // no more appends: removed once fed to size
}

// logOp is one Put call's record, waiting for the group commit.
type logOp struct {
	rec  []byte // framed record
	rows []row
	at   int64
	done chan error
}

// fedItem is a synced record waiting to be fed to the database.
type fedItem struct {
	seg  *segment
	end  int64
	rows []row
	at   int64
	size int
}

// logRows journals rows through the log: it returns once their record is
// synced. ctx bounds only the wait to be accepted, as for submit.
func (s *Store) logRows(ctx context.Context, rows ...row) error {
	at := time.Now().UnixNano()
	rec, err := encodeRecord(rows, at)
	if err != nil {
		return err
	}
	op := &logOp{rec: rec, rows: rows, at: at, done: make(chan error, 1)}
	select {
	case s.logOps <- op:
	case <-s.closing:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-op.done
}

// appender is the log's writer goroutine: the group commit of the log.
func (s *Store) appender() {
	defer close(s.logStopped)
	batch := make([]*logOp, 0, maxBatch)
	var buf []byte
	busy := false
	// taken is when the last batch was taken; gap the mean time between
	// records since.
	var taken time.Time
	var gap time.Duration
	for {
		select {
		case op := <-s.logOps:
			batch = append(batch[:0], op)
		case <-s.closing:
			return
		}
		batch = gather(batch, s.logOps)
		now := time.Now()
		if !taken.IsZero() {
			gap = now.Sub(taken) / time.Duration(len(batch))
		}
		taken = now
		if busy && s.sync == SyncBatch {
			batch = s.linger(batch, gap)
		}
		busy = len(batch) >= busyRecords && batchBytes(batch) < lingerBytes
		var err error
		buf, err = s.appendBatch(batch, buf[:0])
		for _, op := range batch {
			op.done <- err
		}
		clear(batch)
		if cap(buf) > 4<<20 {
			buf = nil // do not keep one long context's buffer for the run
		}
	}
}

// While records come in faster than the log syncs them, the appender
// lingers before it syncs a batch, for more records to share the fsync: on
// this machine's disk an fdatasync costs some 115 µs of CPU (more than the
// 20 µs the feed spends on a sample), and at 4,000 samples/s the log synced
// every 10 records, 0.2 fsyncs per sample. Busy is a batch of busyRecords
// or more, under lingerBytes: one caller, or a few at a time, never waits,
// nor do long records (long contexts' requests), whose fsync is mostly the
// writing of their pages and which would be held the longer.
//
// It lingers while records keep coming: it stops when none has come for
// lingerGaps times the mean time between records over the last batch
// (within [lingerGapMin, lingerMax]). When the writers are all in the
// batch already, each waiting on its record, that ends the wait soon
// (BenchmarkSampleJournal4 paid 60 % more CPU per sample for a fixed 1 ms);
// at 4,000 samples/s on a loaded machine, where the gaps between records
// are long and uneven, a fixed 200 µs ended it before it had gathered
// anything. The wait is at most lingerMax, ended early by lingerRecords or
// lingerBytes.
const (
	busyRecords   = 8
	lingerGaps    = 4
	lingerGapMin  = 50 * time.Microsecond
	lingerMax     = time.Millisecond
	lingerRecords = 64
	lingerBytes   = 1 << 20
)

// linger adds to batch the records that come within s.lingerMax (lingerMax
// but in tests), each within lingerGaps × gap of the last, up to
// lingerRecords or lingerBytes, and returns it.
func (s *Store) linger(batch []*logOp, gap time.Duration) []*logOp {
	bytes := batchBytes(batch)
	if len(batch) >= lingerRecords || bytes >= lingerBytes {
		return batch
	}
	deadline := time.Now().Add(s.lingerMax)
	quiet := min(max(lingerGaps*gap, lingerGapMin), s.lingerMax)
	t := time.NewTimer(quiet)
	defer t.Stop()
	for len(batch) < lingerRecords && bytes < lingerBytes {
		select {
		case op := <-s.logOps:
			batch = append(batch, op)
			bytes += len(op.rec)
			left := time.Until(deadline)
			if left <= 0 {
				return batch
			}
			t.Reset(min(quiet, left))
		case <-t.C:
			return batch
		case <-s.closing:
			return batch
		}
	}
	return batch
}

func batchBytes(batch []*logOp) int {
	n := 0
	for _, op := range batch {
		n += len(op.rec)
	}
	return n
}

// appendBatch writes and syncs batch's records, then queues them for the
// feeder. buf is scratch space, returned for reuse.
func (s *Store) appendBatch(batch []*logOp, buf []byte) ([]byte, error) {
	if s.seg == nil {
		seg, err := newSegment(s.logDir)
		if err != nil {
			return buf, fmt.Errorf("journal log %s: %w", s.logDir, err)
		}
		s.fmu.Lock()
		s.segs = append(s.segs, seg)
		s.fmu.Unlock()
		s.seg = seg
	}
	seg := s.seg
	total := 0
	for _, op := range batch {
		total += len(op.rec)
	}
	// seg.size is the appender's to write; the feeder only reads it, under
	// fmu, and the appender changes it only under fmu below.
	err := seg.reserve(seg.size + batchHeaderBytes + int64(total))
	// The batch's header says the file up to here is synced, which the
	// reader takes as proof that a bad record before it is damage, not a
	// torn tail: true, as this goroutine alone appends, and only once the
	// last batch's sync has returned (or, under SyncOS, its writes).
	var flags uint32
	if s.sync == SyncBatch {
		flags = batchSynced
	}
	var sum uint32
	for _, op := range batch {
		sum = recordsCRC(sum, op.rec)
	}
	buf = appendBatchHeader(buf, &seg.id, seg.size, int64(total), flags, sum)
	// Short records go out together from buf, in one write; a long one
	// (a long context's request) is written from its own record rather
	// than copied once more: 64 long answers arriving at once would
	// otherwise double what they hold.
	at := seg.size
	for i := 0; err == nil && i < len(batch); i++ {
		rec := batch[i].rec
		if len(rec) < directWriteBytes {
			buf = append(buf, rec...)
			continue
		}
		if len(buf) > 0 {
			if _, err = seg.f.WriteAt(buf, at); err != nil {
				break
			}
			at += int64(len(buf))
			buf = buf[:0]
		}
		_, err = seg.f.WriteAt(rec, at)
		at += int64(len(rec))
	}
	if err == nil && len(buf) > 0 {
		_, err = seg.f.WriteAt(buf, at)
	}
	if err == nil && s.sync == SyncBatch {
		err = syncData(seg.f)
	}
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if err != nil {
		// What reached the file is unknown: a torn tail at worst, which the
		// reader drops. Append nothing more after it.
		seg.closed = true
		s.seg = nil
		return buf, fmt.Errorf("journal log %s: %w", filepath.Join(s.logDir, seg.name), err)
	}
	end := seg.size + batchHeaderBytes
	for _, op := range batch {
		end += int64(len(op.rec))
		s.queue = append(s.queue, fedItem{seg: seg, end: end, rows: op.rows, at: op.at, size: len(op.rec)})
		s.queuedBytes += len(op.rec)
	}
	s.unfed += len(batch)
	seg.size = end
	if seg.size >= segmentBytes {
		seg.closed = true
		s.seg = nil
	}
	select {
	case s.feedKick <- struct{}{}:
	default:
	}
	return buf, nil
}

// newSegment creates and locks a new log file in dir.
func newSegment(dir string) (*segment, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// Another process opening the journal may remove a .new file between
	// its creation and its lock (removeStrayNew cannot tell it from one a
	// dead process left): the file is then made again under a new name.
	var err error
	for range newSegmentTries {
		var seg *segment
		if seg, err = tryNewSegment(dir); !errors.Is(err, errSegmentTaken) {
			return seg, err
		}
	}
	return nil, fmt.Errorf("create a log file in %s: %w", dir, err)
}

// newSegmentTries bounds the retries of newSegment; each loses only to a
// journal being opened at that very moment. Not 8: a sweep of .new files
// in a loop (TestNewSegmentRacesStrayRemoval) on a loaded machine took a
// third of the tries, and 8 losses in a row came once in 20 runs of 300
// segments (on main too); 64 never did.
const newSegmentTries = 64

// errSegmentTaken is a new file removed or locked by another process
// before its creator locked it.
var errSegmentTaken = errors.New("new log file taken by another process before it was locked")

func tryNewSegment(dir string) (*segment, error) {
	var rnd [4]byte
	rand.Read(rnd[:])
	name := fmt.Sprintf("%s-%d-%s.log", time.Now().UTC().Format("20060102T150405.000000Z"), os.Getpid(), hex.EncodeToString(rnd[:]))
	path := filepath.Join(dir, name)
	// Created under a name replay does not look at, and renamed once
	// locked: another process opening the journal takes the lock of every
	// .log file it finds to tell dead logs from live ones, and a new file
	// seen before its owner locked it would look dead.
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	ok, err := lockFile(f)
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("lock %s: %w", tmp, err)
	}
	if !ok {
		// Held by a process about to remove it as stray.
		f.Close()
		return nil, errSegmentTaken
	}
	// Locked, but perhaps after it was removed: the lock is then on a
	// file no name leads to.
	if fi, err := f.Stat(); err != nil {
		f.Close()
		return nil, err
	} else if at, err := os.Stat(tmp); err != nil || !os.SameFile(fi, at) {
		f.Close()
		return nil, errSegmentTaken
	}
	seg := &segment{name: name, f: f, size: int64(logHeaderBytes), fed: int64(logHeaderBytes), reserved: int64(logHeaderBytes)}
	rand.Read(seg.id[:])
	if _, err := f.Write(append([]byte(logMagic), seg.id[:]...)); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	// The file's name must outlive a crash along with its records.
	if err := syncDir(dir); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return seg, nil
}

// reserve makes sure the file is zeroed and synced up to at least end,
// extending it by reserveBytes at a time. A reader takes a header of zeros
// with no valid batch after it for the end of the log.
func (seg *segment) reserve(end int64) error {
	if end <= seg.reserved {
		return nil
	}
	to := max(end, seg.reserved+min(reserveBytes, max(firstReserveBytes, seg.reserved)))
	zeros := make([]byte, min(to-seg.reserved, 1<<20))
	for off := seg.reserved; off < to; {
		n := min(int64(len(zeros)), to-off)
		if _, err := seg.f.WriteAt(zeros[:n], off); err != nil {
			return err
		}
		off += n
	}
	if err := seg.f.Sync(); err != nil {
		return err
	}
	seg.reserved = to
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// feeder moves synced records into the database in large batches, until
// the appender has stopped and everything it wrote is fed.
func (s *Store) feeder() {
	defer close(s.feedStopped)
	var waiters []chan error
	final := false
	for {
		// soon: this feed is one FeedSoon asked for.
		soon := false
		due := func() bool {
			if s.feedNow.Swap(false) {
				soon = true
			}
			return soon || s.feedDue()
		}
		select {
		case <-s.feedKick:
		case w := <-s.flushReq:
			waiters = append(waiters, w)
		case <-s.logStopped:
			final = true
		}
		if !final && len(waiters) == 0 && !due() {
			s.fmu.Lock()
			wait := cmp.Or(s.feedWait, feedDelay)
			s.fmu.Unlock()
			timer := time.NewTimer(wait)
		wait:
			for {
				select {
				case <-timer.C:
					break wait
				case w := <-s.flushReq:
					waiters = append(waiters, w)
					break wait
				case <-s.logStopped:
					final = true
					break wait
				case <-s.feedKick:
					if due() {
						break wait
					}
				}
			}
			timer.Stop()
		}
		// Whoever asked for a flush while this feed was being prepared is
		// served by it too.
	more:
		for {
			select {
			case w := <-s.flushReq:
				waiters = append(waiters, w)
			default:
				break more
			}
		}
		s.fmu.Lock()
		items := s.queue
		s.queue, s.queuedBytes = nil, 0
		s.fmu.Unlock()
		fed, err := s.feed(items, true)
		s.fmu.Lock()
		if err != nil {
			rest := items[fed:]
			s.queue = append(rest, s.queue...)
			for _, it := range rest {
				s.queuedBytes += it.size
			}
		}
		// The error of the last feed only: one that failed and was fed
		// again (its items first) is no longer an error of the journal.
		s.feedErr = err
		s.fmu.Unlock()
		s.fmu.Lock()
		hook := s.fedHook
		s.fmu.Unlock()
		if err == nil && len(items) > 0 && hook != nil {
			hook(len(items))
		}
		for _, w := range waiters {
			w <- err
		}
		waiters = waiters[:0]
		if final {
			return
		}
		if soon && err == nil {
			s.checkpointSoon()
		}
	}
}

// FeedSoon asks for what the log holds to be fed now rather than when more
// has queued, and returns at once. A caller that will read soon (a run whose
// last samples are done, before its aggregates and report) gets the feed
// done meanwhile instead of waiting for it when it reads.
//
// Once that feed is done, the database is also checkpointed (see
// checkpoint): Close must checkpoint before it removes the log, and the
// pages written since the last checkpoint (up to 4 MB) then no longer wait
// for it.
func (s *Store) FeedSoon() {
	s.feedNow.Store(true)
	select {
	case s.feedKick <- struct{}{}:
	default:
	}
}

// FeedFollow, on, has the feeder feed whatever the log has synced as soon
// as it has, in as many small feeds as that takes, until it is called off.
// For the end of a task's samples: the last ones are at the model, the
// records of those answered meanwhile would otherwise wait for the run's
// end to be fed in one go (some 500 records, 15-25 ms in the 50 ms row of
// bench/throughput, beside the bootstrap of the run's metrics and ahead
// of the report's reads), and the cores have time for them now: no request
// follows those answers. Small feeds cost more per record (BenchmarkFeed),
// so it is for the last few hundred records of a run, not for all of them.
func (s *Store) FeedFollow(on bool) {
	s.follow.Store(on)
	if on {
		select {
		case s.feedKick <- struct{}{}:
		default:
		}
	}
}

// feedDue reports whether the queue is worth a feed now: a feed's worth
// queued, or anything while the feeder follows the log (FeedFollow).
func (s *Store) feedDue() bool {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	return len(s.queue) >= feedRecords || s.queuedBytes >= feedBytes || s.follow.Load() && len(s.queue) > 0
}

// feed inserts items' rows and the segments' progress in one transaction,
// then removes the segments that are closed and fully fed. live: the
// segments are this process's, whose fed offsets the feeder tracks.
//
// A row the database refuses (a constraint or a value it cannot store)
// would fail that transaction, and so every feed after it and the
// journal's next Open: such a feed is made again one item at a time, and
// an item refused alone is set aside (quarantine), not fed. fed is how
// many of items, from the first, are in the journal or set aside when err
// is not nil: the rest are for the caller to feed again.
func (s *Store) feed(items []fedItem, live bool) (fed int, err error) {
	err = s.feedTx(items, live)
	if err == nil {
		return len(items), nil
	}
	if !refused(err) {
		return 0, err
	}
	var set []string // the files records were set aside in
	var first error  // the first refusal
	defer func() {
		if len(set) > 0 {
			s.log.Warn("journal: records the database refused are set aside, not fed: their rows are not in the journal, and the samples they hold will be asked again when the run is resumed; every other record is fed",
				"records", len(set), "error", first.Error(), "kept_in", strings.Join(slices.Compact(set), ","))
		}
	}()
	for i := range items {
		err := s.feedTx(items[i:i+1], live)
		if err != nil && refused(err) {
			// Refused alone, while the others go in: the item, not the
			// journal. Its record goes to a file beside the log, and its
			// progress is fed without it.
			path, qerr := s.quarantine(items[i], err)
			if qerr != nil {
				return i, qerr
			}
			set, first = append(set, path), cmp.Or(first, err)
			err = s.feedTx([]fedItem{{seg: items[i].seg, end: items[i].end, at: items[i].at}}, live)
		}
		if err != nil {
			return i, err
		}
	}
	return len(items), nil
}

// refused is an error of the database refusing a row for what it holds
// (SQLite: a constraint, a datatype mismatch; PostgreSQL: classes 22 data
// exception and 23 integrity constraint violation), which trying again
// cannot mend, as against one of the database itself (busy, gone, full).
func refused(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		if se.Code() == sqlite3.SQLITE_CONSTRAINT_TRIGGER {
			// The journal has no triggers: one someone added says
			// nothing of the row, and may pass the next time.
			return false
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_TOOBIG:
			return true
		}
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23"))
}

// unfedSuffix names the file beside a log segment that holds the records
// of it the database refused (a version 1 log: hayloft's own format, for
// whoever mends the cause to read or feed again). Replay passes over it.
const unfedSuffix = ".unfed"

// quarantine appends the item's record to its segment's unfed file,
// synced, and returns the file's path.
func (s *Store) quarantine(it fedItem, cause error) (string, error) {
	path := filepath.Join(s.logDir, it.seg.name+unfedSuffix)
	fail := func(err error) (string, error) {
		return path, fmt.Errorf("journal log %s: set aside a record the journal refused (%v): %w", path, cause, err)
	}
	rec, err := encodeRecord(it.rows, it.at)
	if err != nil {
		return fail(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if fi.Size() == 0 {
		rec = append([]byte(logMagicV1), rec...)
	}
	if _, err := f.Write(rec); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if fi.Size() == 0 {
		// The file is new: its name must outlive a power loss too.
		if err := syncDir(s.logDir); err != nil {
			return fail(err)
		}
	}
	return path, nil
}

// feedTx is feed's one transaction.
func (s *Store) feedTx(items []fedItem, live bool) error {
	if len(items) == 0 {
		return nil
	}
	n := 0
	for _, it := range items {
		n += len(it.rows)
	}
	rows := make([]row, 0, n)
	progress := map[*segment]int64{}
	var st stamper
	for _, it := range items {
		stamp := st.format(it.at)
		for _, r := range it.rows {
			r.at = stamp
			rows = append(rows, r)
		}
		progress[it.seg] = max(progress[it.seg], it.end)
	}
	if s.dialect.noNUL {
		if n := replaceNUL(rows); n > 0 {
			s.log.Warn("journal: PostgreSQL's text cannot hold U+0000: the journal stores U+FFFD in its place (the run scored the text as the model gave it)", "values", n)
		}
	}
	now := formatTime(time.Now())
	cache := feedCacheKiB(items)
	exec := func(ctx context.Context, tx *sql.Tx) error {
		if err := s.setWriterCache(ctx, tx, cache); err != nil {
			return err
		}
		for seg, end := range progress {
			if _, err := tx.ExecContext(ctx, `INSERT INTO journal_logs (name, fed, updated_at) VALUES ($1, $2, $3)
				ON CONFLICT (name) DO UPDATE SET fed = excluded.fed, updated_at = excluded.updated_at`,
				seg.name, end, now); err != nil {
				return err
			}
		}
		return nil
	}
	if err := s.internalWrite(&writeOp{exec: exec, rows: rows, done: make(chan error, 1)}); err != nil {
		return fmt.Errorf("journal %s: feed %d records from the log: %w", s.path, len(items), err)
	}
	if !live {
		return nil
	}
	var drop []*segment
	s.fmu.Lock()
	for seg, end := range progress {
		seg.fed = max(seg.fed, end)
	}
	keep := s.segs[:0]
	for _, seg := range s.segs {
		if seg.closed && seg.fed >= seg.size {
			drop = append(drop, seg)
		} else {
			keep = append(keep, seg)
		}
	}
	clear(s.segs[len(keep):])
	s.segs = keep
	s.unfed -= len(items)
	s.fmu.Unlock()
	// The items are in the database: failing to remove their segments
	// must not have them fed again (the caller requeues on an error). A
	// segment left behind is replayed from its progress row, with nothing
	// left to feed, when the journal is next opened.
	if err := s.dropSegments(drop); err != nil {
		s.fmu.Lock()
		s.dropErr = errors.Join(s.dropErr, err)
		s.fmu.Unlock()
	}
	return nil
}

// The writer's page cache. SQLite's default, 2,000 KiB, holds about 500
// pages, fewer than the indexes a run of 20,000 short samples builds (some
// 1,700 pages: request keys are hashes, so every feed touches most of the
// key indexes' pages). Each feed then spilled dirty pages to the WAL
// mid-transaction and read pages back that the last feed had evicted
// (BenchmarkFeed, 20,000 samples: 15,500 page reads and 32,000 writes at
// 2,000 KiB, 6,700 and 27,000 at 8 MiB, no fewer at 32 MiB). Feeds of long
// records (long contexts' requests) gain nothing from it, their pages are
// written once, and would fill it with pages no one reads again, so they
// go back to the default, which frees the rest.
const (
	defaultCacheKiB = 2000
	feedCacheKiBMax = 8 << 10
	// bigCacheRecord is the mean bytes of text per record up to which a
	// feed gets feedCacheKiBMax.
	bigCacheRecord = 16 << 10
)

// replaceNUL replaces U+0000 in rows' string values with U+FFFD and
// returns how many values it changed. A model's answer or a data set's
// text may hold one; PostgreSQL refuses it, and a row it refuses would
// fail every feed after it (one transaction), and the journal's next Open:
// better one character changed, and said, than the journal stuck.
func replaceNUL(rows []row) int {
	n := 0
	for _, r := range rows {
		for i, a := range r.args {
			if v, ok := a.(string); ok && strings.IndexByte(v, 0) >= 0 {
				r.args[i] = strings.ReplaceAll(v, "\x00", "\uFFFD")
				n++
			}
		}
	}
	return n
}

// feedCacheKiB is the writer's page cache for feeding items.
func feedCacheKiB(items []fedItem) int {
	bytes := 0
	for _, it := range items {
		for _, r := range it.rows {
			bytes += boundBytes(r.args)
		}
	}
	if bytes <= bigCacheRecord*len(items) {
		return feedCacheKiBMax
	}
	return defaultCacheKiB
}

// setWriterCache sets the writer's page cache to kib, if the dialect has
// one and it differs. It runs in the writer goroutine, which alone
// touches writerCache.
func (s *Store) setWriterCache(ctx context.Context, tx *sql.Tx, kib int) error {
	if s.dialect.cacheSize == "" || s.writerCache == kib {
		return nil
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(s.dialect.cacheSize, kib)); err != nil {
		return fmt.Errorf("set the writer's page cache: %w", err)
	}
	s.writerCache = kib
	return nil
}

// checkpointSoon copies what the WAL holds into the database file
// (SQLite; PASSIVE: it waits for no reader or writer, and copies what it
// can), so that the checkpoint Close runs before removing the log has
// little left to do. A failure is left for that one to meet.
//
// It runs beside the feeder, not in it: a run's last samples are fed
// while an earlier FeedSoon's checkpoint is still copying pages (a few
// tens of ms for 5,000 samples), and the readers waiting on that feed
// (the end of a run: its prefix-cache sums, FinishRun, the report) would
// otherwise wait for the checkpoint too. One at a time: a FeedSoon while
// one runs adds nothing, as that one copies what was fed before it began
// and the next checkpoint the rest. Only the feeder calls it, and
// dropSegments waits for it (checkpointed).
func (s *Store) checkpointSoon() {
	if s.dialect.checkpoint == "" {
		return
	}
	if s.ckpt != nil {
		select {
		case <-s.ckpt:
		default:
			return
		}
	}
	done := make(chan struct{})
	s.ckpt = done
	go func() {
		defer close(done)
		s.db.Exec(s.dialect.checkpoint)
	}()
}

// checkpointed waits for the checkpoint checkpointSoon began, if any: the
// feeder's, or Close's once the feeder has stopped.
func (s *Store) checkpointed() {
	if s.ckpt != nil {
		<-s.ckpt
	}
}

// dropSegments removes fed segments: the file first, then its progress
// row (a row left by a crash in between names no file and is harmless).
// Their rows must survive what the log survives before it goes: syncWAL.
func (s *Store) dropSegments(segs []*segment) error {
	if len(segs) == 0 {
		return nil
	}
	defer func() {
		for _, seg := range segs {
			seg.f.Close() // after the removal: the lock goes with it
		}
	}()
	if err := s.syncWAL(); err != nil {
		return fmt.Errorf("journal %s: before removing the fed log: %w", s.path, err)
	}
	var errs []error
	for _, seg := range segs {
		path := filepath.Join(s.logDir, seg.name)
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		name := seg.name
		errs = append(errs, s.internalWrite(&writeOp{exec: func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `DELETE FROM journal_logs WHERE name = $1`, name)
			return err
		}, done: make(chan error, 1)}))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("journal %s: remove fed log: %w", s.path, err)
	}
	return nil
}

// syncWAL makes what SQLite has committed so far survive a power loss, as
// the log's synced records do, under SyncBatch. SQLite commits with
// synchronous=NORMAL: a commit reaches the WAL unsynced, and a checkpoint
// syncs the WAL only when it has frames it may copy, which it has not
// while another connection's read snapshot (a report, another shard) holds
// them back. So the WAL is synced here, before what depends on those
// commits: removing the log their rows were fed from, and (BeginRun,
// PutEval) acknowledging records whose rows name a run or eval written
// straight to the database. PostgreSQL's commits are durable already, and
// SyncOS promises no more than the OS's own flushing.
func (s *Store) syncWAL() error {
	if s.sync != SyncBatch || s.dialect.checkpoint == "" {
		return nil
	}
	db := strings.TrimSuffix(s.logDir, logDirSuffix)
	f, err := os.Open(db + "-wal")
	if errors.Is(err, os.ErrNotExist) {
		// No WAL: every commit was checkpointed into the database file,
		// which the checkpoint synced; synced again here, to be sure.
		f, err = os.Open(db)
	}
	if err != nil {
		return fmt.Errorf("sync the write-ahead log: %w", err)
	}
	defer f.Close()
	if err := syncData(f); err != nil {
		return fmt.Errorf("sync the write-ahead log: %w", err)
	}
	s.walSyncs.Add(1)
	return nil
}

// flush returns once every record synced before the call is in the
// database, so reads see every Put that has returned.
func (s *Store) flush(ctx context.Context) error {
	s.fmu.Lock()
	idle := s.unfed == 0
	s.fmu.Unlock()
	if idle {
		return nil
	}
	ch := make(chan error, 1)
	select {
	case s.flushReq <- ch:
	case <-s.feedStopped:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// replayLogs feeds the segments of processes that are gone (those no one
// holds a lock on) into the database and removes them. It runs at Open,
// before anything is journaled.
func (s *Store) replayLogs(ctx context.Context) error {
	entries, err := os.ReadDir(s.logDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal log %s: %w", s.logDir, err)
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".log.new") {
			removeStrayNew(filepath.Join(s.logDir, e.Name()))
			continue
		}
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		if err := s.replaySegment(ctx, e.Name()); err != nil {
			return err
		}
	}
	return nil
}

// removeStrayNew removes a segment a process died creating (newSegment),
// unless its creator still holds it. It never holds a record: records are
// appended only once it is renamed.
func removeStrayNew(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if ok, err := lockFile(f); err == nil && ok {
		os.Remove(path)
	}
}

// replayBatch is how many records a replay feeds per transaction.
const replayBatch = feedRecords

// replaySegment feeds a dead process's segment from where its progress row
// says it was fed to, and removes it. The row is read once the segment's
// lock is held: its process may have fed more, and died, while this one
// replayed others.
func (s *Store) replaySegment(ctx context.Context, name string) error {
	path := filepath.Join(s.logDir, name)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil // another process replayed it meanwhile
	}
	if err != nil {
		return fmt.Errorf("journal log %s: %w", path, err)
	}
	defer f.Close()
	ok, err := lockFile(f)
	if err != nil {
		return fmt.Errorf("journal log %s: lock: %w", path, err)
	}
	if !ok {
		return nil // its process is alive and feeds it itself
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil // replayed and removed between our open and our lock
	}
	var from int64
	err = s.db.QueryRowContext(ctx, `SELECT fed FROM journal_logs WHERE name = $1`, name).Scan(&from)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("journal %s: read the progress of log %s: %w", s.path, name, err)
	}
	seg := &segment{name: name, f: f}
	var batch []fedItem
	flush := func() error {
		_, err := s.feed(batch, false)
		batch = batch[:0]
		return err
	}
	scan, err := readLog(f, from, func(r logRecord) error {
		// Past damage not yet reported, the progress recorded stops at
		// the damage: if this replay is cut off, the next reads the
		// damaged region again and reports it (warnDamage).
		end := r.end
		if r.hold > 0 {
			end = min(end, r.hold)
		}
		batch = append(batch, fedItem{seg: seg, end: end, rows: r.rows, at: r.at})
		if len(batch) >= replayBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("journal log %s: %w; the records before it are in the journal (move the file aside to open the journal without the rest)", path, err)
	}
	// Records past the valid end are a torn tail: never acknowledged.
	if err := s.syncWAL(); err != nil {
		return fmt.Errorf("journal log %s: before removing it: %w", path, err)
	}
	if len(scan.damage) > 0 {
		// Kept under a name replay passes over: fed, it must not be fed
		// again, but what the damage held is for someone to look at. The
		// warning comes first: a replay cut off before the rename reads
		// the log again and warns again, rather than not at all.
		kept := path + damagedSuffix
		s.warnDamage(path, kept, from, scan.damage)
		if err := os.Rename(path, kept); err != nil {
			return fmt.Errorf("journal log %s: keep it, damaged: %w", path, err)
		}
		if err := syncDir(s.logDir); err != nil {
			return fmt.Errorf("journal log %s: keep it, damaged: %w", path, err)
		}
	} else if err := os.Remove(path); err != nil {
		return fmt.Errorf("journal log %s: %w", path, err)
	}
	return s.internalWrite(&writeOp{exec: func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM journal_logs WHERE name = $1`, name)
		return err
	}, done: make(chan error, 1)})
}

// damagedSuffix is added to the name of a log found damaged once it is fed.
const damagedSuffix = ".damaged"

// warnDamage says what damage in the log at path, fed from offset from on
// and kept at kept, cost: the records in a damaged region are lost, unless
// the log had been fed past it. Only its process, from memory, feeds a log
// past damage: a replay records its progress no further than the first
// damage it has not yet reported (logRecord.hold), so an offset past a
// region is never an earlier replay's that was cut off.
func (s *Store) warnDamage(path, kept string, from int64, damage []logDamage) {
	const (
		askedAgain = ", and the samples they held will be asked again when the run is resumed; "
		around     = "every valid record before and after the damage is in the journal"
	)
	for _, d := range damage {
		args := []any{"log", path, "offset", d.off, "bytes", d.size, "kept_as", kept}
		var msg string
		switch {
		case d.copyOf > 0:
			msg = "record overwritten by a copy of another record of the log (a misdirected write; it passes its own checksum, not its batch's): " +
				"the copy was not fed, the record it replaced is lost" + askedAgain + "every other record is in the journal"
			args = append(args, "copy_of_offset", d.copyOf)
		case d.unverified:
			msg = "batch whose records each pass their checksum but not the batch's: one of them was overwritten by a record from elsewhere " +
				"(a misdirected write), and which cannot be told, so none of them was fed: they are lost" + askedAgain + around
		case d.framing:
			msg = "damaged in its framing (the file's header or a batch header; a disk fault or a stray write): the records were read past it, and none is lost to it"
		case d.off+d.size <= from:
			msg = "damaged (a disk fault or a stray write) where its records had been fed to the journal before: nothing is lost"
		case d.unreadable:
			msg = "has sectors the disk could not read (an I/O error: a failing disk): the records in them, if any, are lost" + askedAgain +
				"every record that could be read is in the journal; check the disk"
		case d.synced:
			msg = "damaged inside the part that had been synced (a disk fault or a stray write, not a cut-off last write): the records there are lost" + askedAgain + around
		default:
			msg = "damaged before records written after it: it was written with journal_sync = \"os\", and an OS crash or a power loss " +
				"can do this (as can a disk fault); the records there are lost" + askedAgain + around
		}
		s.log.Warn("journal log "+msg, args...)
	}
}
