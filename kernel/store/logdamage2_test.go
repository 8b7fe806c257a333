package store

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Tests of the journal log's handling of damage beyond logdamage_test.go's:
// the file's header, records copied over others, the fed offset as proof,
// damaged batch headers, and the cost of many damaged records.

// writeDeadLog writes the fixture's journal with log as the dead process's
// segment dead-1.log, and returns the database's path.
func (f *tornFixture) writeDeadLog(t *testing.T, log []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.db")
	if err := os.WriteFile(path, f.db, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(path+logDirSuffix, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path+logDirSuffix, "dead-1.log"), log, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeDeadLogFed is writeDeadLog with the dead process's progress row
// saying it had fed its log up to fed.
func (f *tornFixture) writeDeadLogFed(t *testing.T, log []byte, fed int64) string {
	t.Helper()
	path := f.writeDeadLog(t, log)
	db := rawDB(t, path)
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO journal_logs (name, fed, updated_at) VALUES ('dead-1.log', ?, 'x')`, fed); err != nil {
		t.Fatal(err)
	}
	return path
}

// The file's header (magic and segment id) is synced with the first
// reservation and can be damaged like any byte after it. One byte of the
// segment id damaged must not make every batch header fail (the whole
// segment read as a torn tail, nothing fed, the log removed without a
// word), nor one byte of the magic make Open refuse the journal: every
// record is fed, the log is kept as damaged, and a warning names the
// header's bytes and says that no record is lost to them.
func TestSegmentHeaderDamage(t *testing.T) {
	f := newTornFixture(t, 8)
	for _, c := range []struct {
		name    string
		damage  []int // bytes flipped
		regions []region
	}{
		{"segment id", []int{len(logMagic) + 3}, []region{{len(logMagic), segmentIDBytes}}},
		{"magic", []int{2}, []region{{0, len(logMagic)}}},
		{"magic and segment id", []int{2, len(logMagic)}, []region{{0, logHeaderBytes}}},
		// The id is then taken from the second batch's header, and the
		// first batch's records are read by their own framing.
		{"segment id and the first batch header", []int{len(logMagic) + 3, logHeaderBytes + 20},
			[]region{{len(logMagic), segmentIDBytes + batchHeaderBytes}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := append(bytes.Clone(f.log), make([]byte, 8192)...)
			for _, at := range c.damage {
				log[at] ^= 0x10
			}
			scan, fed, err := readLogBytes(t, log, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []region
			for _, d := range scan.damage {
				got = append(got, region{off: int(d.off), size: int(d.size)})
				if !d.framing {
					t.Errorf("region %+v: records lost, want the framing only", d)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.regions) || len(fed) != len(f.keys)+1 {
				t.Errorf("damage %v, %d records read; want %v, %d", got, len(fed), c.regions, len(f.keys)+1)
			}
			responses, failure, w, path := f.replay(t, log)
			if count(responses) != len(f.keys) || !failure {
				t.Errorf("responses %v, failure %v: want every record fed", responses, failure)
			}
			left, _ := os.ReadDir(path + logDirSuffix)
			if len(left) != 1 || left[0].Name() != "dead-1.log"+damagedSuffix {
				t.Errorf("log directory holds %v, want the damaged log kept", left)
			}
			warned := w.String()
			for _, r := range c.regions {
				if want := fmt.Sprintf("offset=%d bytes=%d", r.off, r.size); !strings.Contains(warned, want) {
					t.Errorf("the warning does not say %q: %s", want, warned)
				}
			}
			if strings.Count(warned, "[WARN]") != len(c.regions) || strings.Count(warned, "none is lost") != len(c.regions) || strings.Contains(warned, "asked again") {
				t.Errorf("warned %q: want %d warnings that nothing is lost", warned, len(c.regions))
			}
		})
	}
}

// A file whose magic is not a log's and that holds no valid batch header
// is still refused: a damaged magic is told only by the batches after it.
func TestNotALog(t *testing.T) {
	f := newTornFixture(t, 2)
	for _, log := range [][]byte{
		append([]byte("NOTALOG!"), make([]byte, 100)...),
		append([]byte("NOTALOG!"), f.log[len(logMagic):f.batches[1]+10]...), // the batch header cut
	} {
		log[len(logMagic)+segmentIDBytes+5] ^= 1 // the first batch header, if any, damaged
		if _, _, err := readLogBytes(t, log, 0); err == nil || !strings.Contains(err.Error(), "not a hayloft journal log") {
			t.Errorf("%q...: err %v, want not a log", log[:12], err)
		}
	}
}

// A record's checksum covers its payload, not where it lies: a stray write
// that lays a valid record over another of the same length passes it. The
// batch header's checksum of its records' framings does not: the copy is
// found, not fed, and the record it replaced reported lost. A copy from
// outside the segment cannot be told from the batch's own records: none of
// them is fed, and they are reported lost. Never silently.
func TestRecordCopiedOverAnother(t *testing.T) {
	f := newTornFixture(t, 8)
	other := newTornFixture(t, 8) // the same records at other times
	st, en := f.starts, f.ends
	for _, c := range []struct {
		name    string
		src     []byte
		lost    []int
		regions []region
		warn    string
	}{
		{"a copy of a record of the segment", f.log[st[0]:en[0]], []int{2}, []region{{st[2], en[2] - st[2]}},
			fmt.Sprintf("copy_of_offset=%d", st[0])},
		{"a copy of a later record of the segment", f.log[st[4]:en[4]], []int{2}, []region{{st[2], en[2] - st[2]}},
			fmt.Sprintf("copy_of_offset=%d", st[4])},
		{"a record from another log", other.log[other.starts[2]:other.ends[2]], []int{2, 3}, []region{{st[2], en[3] - st[2]}},
			"none of them was fed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(c.src) != en[2]-st[2] || bytes.Equal(c.src, f.log[st[2]:en[2]]) {
				t.Fatalf("the copy is %d bytes, the record %d, or the same", len(c.src), en[2]-st[2])
			}
			log := append(bytes.Clone(f.log), make([]byte, 8192)...)
			copy(log[st[2]:], c.src)
			scan, _, err := readLogBytes(t, log, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := regions(scan); fmt.Sprint(got) != fmt.Sprint(c.regions) {
				t.Errorf("damage %v, want %v", got, c.regions)
			}
			responses, failure, w, path := f.replay(t, log)
			for i, ok := range responses {
				if want := !slices.Contains(c.lost, i); ok != want {
					t.Errorf("response %d present = %v, want %v", i, ok, want)
				}
			}
			if !failure {
				t.Error("the last batch's record not fed")
			}
			left, _ := os.ReadDir(path + logDirSuffix)
			warned := w.String()
			t.Log(warned)
			if len(left) != 1 || !strings.Contains(warned, fmt.Sprintf("offset=%d bytes=%d", c.regions[0].off, c.regions[0].size)) ||
				!strings.Contains(warned, c.warn) || !strings.Contains(warned, "asked again") {
				t.Errorf("%d files kept, warned %q", len(left), warned)
			}
		})
	}
}

// The dead process's fed offset (journal_logs) past the start of the last
// batch proves that batch synced: its process fed records only once their
// batch's sync had returned. A damaged record in it is then damage, not the
// torn tail: the records after it in the batch are fed, and the damage is
// reported. A fed offset at the batch's start proves nothing of it.
func TestFedOffsetProvesLastBatch(t *testing.T) {
	f := newTornFixture(t, 8)
	// The log without the failure's batch: responses 6 and 7 are the last
	// batch.
	for _, c := range []struct {
		name    string
		damaged int   // the record damaged
		fed     int   // the fed offset
		want    []int // responses fed by the replay
		region  bool
		warn    string
	}{
		{"fed past the damage", 6, f.ends[6], []int{7}, true, "nothing is lost"},
		{"fed up to the damage", 7, f.ends[6], []int{}, true, "asked again"},
		{"fed into the batch, damage before it", 6, f.starts[6] + 1, []int{7}, true, "asked again"},
		{"fed up to the batch only: a torn tail", 6, f.batches[3], []int{}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := append(bytes.Clone(f.log[:f.lastOff]), make([]byte, 8192)...)
			log[f.starts[c.damaged]+20] ^= 0x5a
			scan, _, err := readLogBytes(t, log, int64(c.fed))
			if err != nil {
				t.Fatal(err)
			}
			want := []logDamage(nil)
			if c.region {
				want = []logDamage{{off: int64(f.starts[c.damaged]), size: int64(f.ends[c.damaged] - f.starts[c.damaged]), synced: true}}
			}
			if fmt.Sprint(scan.damage) != fmt.Sprint(want) {
				t.Errorf("damage %+v, want %+v", scan.damage, want)
			}
			path := f.writeDeadLogFed(t, log, int64(c.fed))
			var w warnings
			s, err := OpenWith(context.Background(), path, Options{Logger: w.logger()})
			if err != nil {
				t.Fatal(err)
			}
			responses, _ := f.present(t, s)
			s.Close()
			for i, ok := range responses {
				if ok != slices.Contains(c.want, i) {
					t.Errorf("response %d present %v", i, ok)
				}
			}
			warned := w.String()
			t.Log(warned)
			if c.region != (warned != "") || !strings.Contains(warned, c.warn) {
				t.Errorf("warned %q, want %q", warned, c.warn)
			}
		})
	}
}

// A batch header overwritten (a stray write) loses none of its batch's
// records, each framed with its own checksum, when a valid header after it
// proves the batch written: they are read and fed.
func TestDamagedBatchHeaderKeepsIntactRecords(t *testing.T) {
	f := newTornFixture(t, 8)
	log := append(bytes.Clone(f.log), make([]byte, 8192)...)
	clear(log[f.batches[1] : f.batches[1]+batchHeaderBytes])
	responses, failure, w, _ := f.replay(t, log)
	if count(responses) != len(f.keys) || !failure {
		t.Errorf("batch header zeroed: responses %v, failure %v; want every record", responses, failure)
	}
	if want := fmt.Sprintf("offset=%d bytes=%d", f.batches[1], batchHeaderBytes); !strings.Contains(w.String(), want) || !strings.Contains(w.String(), "none is lost") {
		t.Errorf("warned %q, want %s and that nothing is lost", w.String(), want)
	}
}

// A replay that feeds past damage records its progress no further than the
// damage until it has warned of it. Cut off before it is done (here, by a
// rename that fails), the next replay reads the damaged region again and
// says the record is lost: not "nothing is lost", which it would say of a
// region before an offset the log's own process had fed.
func TestInterruptedReplayReportsLoss(t *testing.T) {
	f := newTornFixture(t, 8)
	log := append(bytes.Clone(f.log), make([]byte, 8192)...)
	log[f.starts[2]+20] ^= 0x5a // a record's payload: response 2 lost
	path := f.writeDeadLog(t, log)
	// Something in the way of the rename: a directory of that name.
	blocker := filepath.Join(path+logDirSuffix, "dead-1.log"+damagedSuffix)
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	var w1 warnings
	if s, err := OpenWith(context.Background(), path, Options{Logger: w1.logger()}); err == nil {
		s.Close()
		t.Fatal("the rename did not fail; the test's premise is gone")
	}
	region := fmt.Sprintf("offset=%d bytes=%d", f.starts[2], f.ends[2]-f.starts[2])
	if !strings.Contains(w1.String(), region) || !strings.Contains(w1.String(), "asked again") {
		t.Errorf("the cut-off replay warned %q", w1.String())
	}
	db := rawDB(t, path)
	var fed int64
	if err := db.QueryRow(`SELECT fed FROM journal_logs WHERE name = 'dead-1.log'`).Scan(&fed); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if fed != int64(f.starts[2]) {
		t.Errorf("the cut-off replay recorded the log fed to %d, want the damage's start %d", fed, f.starts[2])
	}
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}

	var w2 warnings
	s, err := OpenWith(context.Background(), path, Options{Logger: w2.logger()})
	if err != nil {
		t.Fatal(err)
	}
	responses, failure := f.present(t, s)
	s.Close()
	if count(responses) != len(f.keys)-1 || responses[2] || !failure {
		t.Errorf("responses %v, failure %v: want all but 2", responses, failure)
	}
	warned := w2.String()
	if strings.Contains(warned, "nothing is lost") || !strings.Contains(warned, "asked again") || !strings.Contains(warned, region) {
		t.Errorf("response 2 is lost, but the second replay warned %q", strings.TrimSpace(warned))
	}
}

// faultyReaderAt reads a real file, but a read that touches [bad, bad+n)
// fails as a read of an unreadable sector does (EIO); it counts the bytes
// read.
type faultyReaderAt struct {
	f      *os.File
	bad, n int64
	read   atomic.Int64
}

func (r *faultyReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if r.n > 0 && off < r.bad+r.n && off+int64(len(p)) > r.bad {
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: syscall.EIO}
	}
	n, err := r.f.ReadAt(p, off)
	r.read.Add(int64(n))
	return n, err
}

// readFaulty reads the version 2 log in file path as readLog does, through
// r: the scan, and the offsets of the records fed.
func readFaulty(t *testing.T, log []byte, bad, n int64) (logScan, []int64, *faultyReaderAt, error) {
	t.Helper()
	fr := &faultyReaderAt{f: logFile(t, log), bad: bad, n: n}
	var fed []int64
	r := &logReader{f: fr, size: int64(len(log)), fn: func(rec logRecord) error { fed = append(fed, rec.end); return nil }}
	copy(r.id[:], log[len(logMagic):logHeaderBytes])
	r.br = bufio.NewReaderSize(nil, 1<<20)
	scan, err := r.read()
	return scan, fed, fr, err
}

// A damaged record costs the replay a look at where the next batch should
// start, not a read of resyncChunk and two refills of the reader's 1 MB
// buffer: a log with 3,000 damaged records (one per batch) is read about
// once, as a healthy one is, not as some 9 GB.
func TestResyncReadsPerBadRecord(t *testing.T) {
	f := newTornFixture(t, 2)
	rec := f.log[f.starts[0]:f.ends[0]]
	l := newTestLog(false)
	var bad []int
	for range 3000 {
		bad = append(bad, l.batch(rec)[0]+20)
	}
	l.batch(rec)
	log := append(l.b, make([]byte, reserveBytes)...)
	_, fed, healthy, err := readFaulty(t, log, 0, 0)
	if err != nil || len(fed) != 3001 {
		t.Fatalf("healthy: %d fed, %v", len(fed), err)
	}
	for _, at := range bad {
		log[at] ^= 1
	}
	start := time.Now()
	scan, fed, damaged, err := readFaulty(t, log, 0, 0)
	took := time.Since(start)
	if err != nil || len(fed) != 1 || len(scan.damage) != 3000 {
		t.Fatalf("damaged: %d fed, %d regions, %v", len(fed), len(scan.damage), err)
	}
	t.Logf("log of %d bytes: healthy read %d bytes; with 3000 damaged records read %d bytes in %v",
		len(log), healthy.read.Load(), damaged.read.Load(), took)
	if damaged.read.Load() > 2*int64(len(log)) {
		t.Errorf("replaying a %d-byte log with 3000 damaged records read %d bytes (%.0fx the file)",
			len(log), damaged.read.Load(), float64(damaged.read.Load())/float64(len(log)))
	}
}
