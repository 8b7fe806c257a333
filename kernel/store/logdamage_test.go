package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// logFile writes log to a file and opens it for reading, until the test
// ends.
func logFile(t testing.TB, log []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.log")
	if err := os.WriteFile(path, log, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// readLogBytes writes log to a file and reads it back with readLog from
// offset from: the scan, and where each record fed starts.
func readLogBytes(t *testing.T, log []byte, from int64) (logScan, []int64, error) {
	t.Helper()
	f := logFile(t, log)
	var fed []int64
	var last int64
	scan, err := readLog(f, from, func(r logRecord) error {
		if r.end <= last {
			t.Fatalf("record ending at %d fed after one ending at %d", r.end, last)
		}
		last = r.end
		fed = append(fed, r.end)
		return nil
	})
	return scan, fed, err
}

// region is a damaged region as a test expects it.
type region struct{ off, size int }

// regions are the damaged regions of scan.
func regions(scan logScan) []region {
	var out []region
	for _, d := range scan.damage {
		out = append(out, region{int(d.off), int(d.size)})
	}
	return out
}

// A record or batch header damaged inside the synced part of a log (a
// valid batch follows it) is not a torn tail: every valid record before
// and after it is fed, Open succeeds, the log is kept as NAME.damaged, and
// a warning names the file, the offset and the size of each damaged
// region. Damage in the last batch is still the torn tail: dropped without
// a word.
func TestDamagedLog(t *testing.T) {
	// Four batches of two responses, then the failure's batch.
	f := newTornFixture(t, 8)
	unsynced := buildTornFixture(t, 8, func() *testLog { l := newTestLog(false); l.flags = 0; return l }())
	b, st, en := f.batches, f.starts, f.ends
	flip := func(at ...int) func([]byte) []byte {
		return func(log []byte) []byte {
			for _, i := range at {
				log[i] ^= 0x5a
			}
			return log
		}
	}
	zero := func(from, to int) func([]byte) []byte {
		return func(log []byte) []byte {
			clear(log[from:to])
			return log
		}
	}
	setLen := func(rec int, n uint32) func([]byte) []byte {
		return func(log []byte) []byte {
			binary.LittleEndian.PutUint32(log[st[rec]:], n)
			return log
		}
	}
	then := func(fs ...func([]byte) []byte) func([]byte) []byte {
		return func(log []byte) []byte {
			for _, f := range fs {
				log = f(log)
			}
			return log
		}
	}
	for _, c := range []struct {
		name     string
		f        *tornFixture
		damage   func([]byte) []byte
		lost     []int    // responses lost
		regions  []region // damage reported
		failure  bool     // the last batch's record fed
		unsynced bool     // the warning blames journal_sync = "os"
		intact   bool     // the regions are framing only: no record lost
	}{
		{name: "a record's payload", damage: flip(st[2] + 20),
			lost: []int{2}, regions: []region{{st[2], en[2] - st[2]}}, failure: true},
		{name: "the first record's payload", damage: flip(st[0] + 9),
			lost: []int{0}, regions: []region{{st[0], en[0] - st[0]}}, failure: true},
		{name: "a record's checksum", damage: flip(st[3] + 5),
			lost: []int{3}, regions: []region{{st[3], en[3] - st[3]}}, failure: true},
		// A bad length does not say where the next record starts: salvage
		// finds it, byte by byte, by the records that run from it to the
		// batch's end.
		{name: "a record's length, impossible", damage: setLen(2, 0xffffffff),
			lost: []int{2}, regions: []region{{st[2], en[2] - st[2]}}, failure: true},
		{name: "a record's length, zero", damage: setLen(2, 0),
			lost: []int{2}, regions: []region{{st[2], en[2] - st[2]}}, failure: true},
		// A bad batch header's records are read by their own framing.
		{name: "a batch header zeroed", damage: zero(b[1], b[1]+batchHeaderBytes),
			regions: []region{{b[1], batchHeaderBytes}}, failure: true, intact: true},
		{name: "a batch header's length", damage: flip(b[1] + 24),
			regions: []region{{b[1], batchHeaderBytes}}, failure: true, intact: true},
		{name: "a batch header's marker", damage: flip(b[2]),
			regions: []region{{b[2], batchHeaderBytes}}, failure: true, intact: true},
		{name: "a batch header and its first record", damage: flip(b[2]+3, st[4]+20),
			lost: []int{4}, regions: []region{{b[2], en[4] - b[2]}}, failure: true},
		{name: "zeros across two batches", damage: zero(st[3]+10, st[5]+10),
			lost: []int{3, 4, 5}, regions: []region{{st[3], b[3] - st[3]}}, failure: true},
		{name: "two regions", damage: flip(st[1]+30, st[6]+30),
			lost: []int{1, 6}, regions: []region{{st[1], en[1] - st[1]}, {st[6], en[6] - st[6]}}, failure: true},
		{name: "junk holding the marker in the damage", damage: then(zero(b[1], b[1]+batchHeaderBytes),
			func(log []byte) []byte { copy(log[st[2]+4:], batchMarker+"junk junk junk junk junk junk"); return log }),
			lost: []int{2}, regions: []region{{b[1], en[2] - b[1]}}, failure: true},
		{name: "a synced batch and the torn last one", damage: then(flip(st[2]+20), func(log []byte) []byte { return log[:len(log)-5] }),
			lost: []int{2}, regions: []region{{st[2], en[2] - st[2]}}},
		// The last batch's header proves the one before it synced: with
		// that header torn too, nothing tells its damage from the tail.
		{name: "the batch before a torn last one", damage: flip(st[7]+20, b[4]+3),
			lost: []int{7}},
		{name: "the last batch only", damage: flip(f.lastOff + batchHeaderBytes + 12)},
		{name: "the last batch's header only", damage: zero(f.lastOff, f.lastOff+batchHeaderBytes)},
		{name: "written under SyncOS", f: unsynced, damage: flip(unsynced.starts[4] + 20),
			lost: []int{4}, regions: []region{{unsynced.starts[4], unsynced.ends[4] - unsynced.starts[4]}}, failure: true, unsynced: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := cmp.Or(c.f, f)
			// The zeros reserved ahead of the records follow the log.
			log := append(c.damage(bytes.Clone(f.log)), make([]byte, 8192)...)

			scan, _, err := readLogBytes(t, log, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := regions(scan)
			for _, d := range scan.damage {
				if d.synced == c.unsynced {
					t.Errorf("region at %d: synced %v", d.off, d.synced)
				}
			}
			if !reflect.DeepEqual(got, c.regions) {
				t.Errorf("damage %v, want %v", got, c.regions)
			}

			var w warnings
			s, path, err := f.openLog(t, log, w.logger())
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			responses, failure := f.present(t, s)
			for i, ok := range responses {
				if want := !slices.Contains(c.lost, i); ok != want {
					t.Errorf("response %d present = %v, want %v", i, ok, want)
				}
			}
			if failure != c.failure {
				t.Errorf("failure present = %v, want %v", failure, c.failure)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			logPath := filepath.Join(path+logDirSuffix, "dead-1.log")
			left, _ := os.ReadDir(path + logDirSuffix)
			if len(c.regions) == 0 {
				if len(left) != 0 || w.String() != "" {
					t.Fatalf("a torn tail left %d files, warned %q", len(left), w.String())
				}
				return
			}
			if len(left) != 1 || left[0].Name() != "dead-1.log"+damagedSuffix {
				t.Fatalf("log directory holds %v, want only the damaged log kept", left)
			}
			if kept, err := os.ReadFile(logPath + damagedSuffix); err != nil || !bytes.Equal(kept, log) {
				t.Errorf("the damaged log was not kept as it was (%v)", err)
			}
			warned := w.String()
			t.Log(warned)
			if n := strings.Count(warned, "[WARN]"); n != len(c.regions) {
				t.Errorf("%d warnings for %d damaged regions", n, len(c.regions))
			}
			for _, r := range c.regions {
				said := "asked again when the run is resumed"
				if c.intact {
					said = "none is lost"
				}
				for _, want := range []string{fmt.Sprintf("offset=%d bytes=%d", r.off, r.size), said} {
					if !strings.Contains(warned, want) {
						t.Errorf("the warning does not say %q", want)
					}
				}
				// hclog quotes a value that holds a comma, as some test names do.
				for k, v := range map[string]string{"log": logPath, "kept_as": logPath + damagedSuffix} {
					if !strings.Contains(warned, k+"="+v+" ") && !strings.Contains(warned, fmt.Sprintf("%s=%q", k, v)) &&
						!strings.HasSuffix(strings.TrimSpace(warned), k+"="+v) {
						t.Errorf("the warning does not say %s=%s", k, v)
					}
				}
			}
			if c.intact && strings.Contains(warned, "asked again") {
				t.Errorf("no record is lost, but the warning says one will be asked again")
			}
			if strings.Contains(warned, "journal_sync") != c.unsynced {
				t.Errorf("the warning blames journal_sync = %q: %v", SyncOS, !c.unsynced)
			}
		})
	}
}

// Bytes after the torn tail that look like a batch but are not one of
// this segment's, written where they lie, cannot pass for the proof that
// the tail was synced: the reader neither warns nor feeds what follows
// them. Only a real header does (the last case, the control).
func TestForgedBatchHeaders(t *testing.T) {
	f := newTornFixture(t, 4)
	k := mustKeyer(t, testIdentity())
	extra := mustKeyed(t, k, testRequest(100))
	rows, err := responseRows(k, extra, &sdk.GenerateResponse{Text: "extra"}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := encodeRecord(rows, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The failure's batch torn: a byte of its record flipped.
	torn := bytes.Clone(f.log)
	torn[len(torn)-3] ^= 1
	pos := int64(len(torn)) + 100 // past some zeros
	other := [segmentIDBytes]byte{'o', 't', 'h', 'e', 'r'}
	for _, c := range []struct {
		name   string
		header []byte
		real   bool
	}{
		{"the marker and junk", append([]byte(batchMarker), bytes.Repeat([]byte{0xa5}, batchHeaderBytes)...), false},
		{"the marker and zeros", append([]byte(batchMarker), make([]byte, batchHeaderBytes)...), false},
		{"another segment's header", appendBatchHeader(nil, &other, pos, int64(len(rec)), batchSynced, recordsCRC(0, rec)), false},
		{"a header of this segment copied from elsewhere", slices.Clone(f.log[f.batches[1] : f.batches[1]+batchHeaderBytes]), false},
		{"a header for another offset", appendBatchHeader(nil, &f.l.id, pos+1, int64(len(rec)), batchSynced, recordsCRC(0, rec)), false},
		{"a header whose batch runs past the file", appendBatchHeader(nil, &f.l.id, pos, 1<<20, batchSynced, recordsCRC(0, rec)), false},
		{"a header with an unknown flag", appendBatchHeader(nil, &f.l.id, pos, int64(len(rec)), 1<<7, recordsCRC(0, rec)), false},
		{"a header with a bad checksum", func() []byte {
			h := appendBatchHeader(nil, &f.l.id, pos, int64(len(rec)), batchSynced, recordsCRC(0, rec))
			h[batchHeaderBytes-1] ^= 1
			return h
		}(), false},
		{"a real header", appendBatchHeader(nil, &f.l.id, pos, int64(len(rec)), batchSynced, recordsCRC(0, rec)), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := append(slices.Clone(torn), make([]byte, pos-int64(len(torn)))...)
			log = append(append(log, c.header...), rec...)
			log = append(log, make([]byte, 1000)...)
			var w warnings
			s, path, err := f.openLog(t, log, w.logger())
			if err != nil {
				t.Fatal(err)
			}
			responses, failure := f.present(t, s)
			_, fedExtra, err := s.LookupResponse(context.Background(), extra.Key)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			if count(responses) != len(f.keys) || failure {
				t.Errorf("responses %v, failure %v: want all, and no failure", responses, failure)
			}
			left, _ := os.ReadDir(path + logDirSuffix)
			if c.real {
				if !fedExtra || len(left) != 1 || !strings.Contains(w.String(), fmt.Sprintf("offset=%d", f.lastOff+batchHeaderBytes)) {
					t.Errorf("a real batch after the damage: fed %v, %d files kept, warned %q", fedExtra, len(left), w.String())
				}
				return
			}
			if fedExtra || len(left) != 0 || w.String() != "" {
				t.Errorf("a forged header was taken: the record after it fed %v, %d files kept, warned %q", fedExtra, len(left), w.String())
			}
		})
	}
}

// Junk that holds batch markers but no valid header makes no batch of
// itself, however it falls across the reader's chunks.
func TestResyncIgnoresMarkers(t *testing.T) {
	f := newTornFixture(t, 2)
	junk := bytes.Repeat([]byte(batchMarker+"\x00\x01\x02"), 3*resyncChunk/7)
	log := append(slices.Clone(f.log[:f.lastOff]), junk...)
	scan, fed, err := readLogBytes(t, log, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.damage) != 0 || scan.end != int64(f.lastOff) || len(fed) != 2 {
		t.Fatalf("scan %+v, %d records fed; want the end at %d, 2 records", scan, len(fed), f.lastOff)
	}
	// A real batch after the junk, straddling a chunk boundary, is found.
	for _, shift := range []int{-20, -1, 0, 1, 20} {
		l := slices.Clone(log)
		at := len(f.log[:f.lastOff]) + resyncChunk + shift
		l = l[:at]
		l = appendBatchHeader(l, &f.l.id, int64(at), int64(len(f.log)-f.lastOff-batchHeaderBytes), batchSynced, recordsCRC(0, f.log[f.lastOff+batchHeaderBytes:]))
		l = append(l, f.log[f.lastOff+batchHeaderBytes:]...)
		scan, fed, err := readLogBytes(t, l, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(fed) != 3 || len(scan.damage) != 1 || scan.damage[0].off != int64(f.lastOff) || scan.damage[0].size != int64(at-f.lastOff) {
			t.Errorf("header at chunk boundary %+d: scan %+v, %d records fed", shift, scan, len(fed))
		}
	}
}

// Damage where the dead process had fed its log past it loses nothing:
// it is still reported, and the log kept, but as no loss.
func TestDamageBeforeFedOffset(t *testing.T) {
	f := newTornFixture(t, 4)
	log := bytes.Clone(f.log)
	log[f.starts[1]+20] ^= 1
	path := f.writeDeadLogFed(t, log, int64(f.ends[3]))
	var w warnings
	s, err := OpenWith(context.Background(), path, Options{Logger: w.logger()})
	if err != nil {
		t.Fatal(err)
	}
	_, failure := f.present(t, s)
	s.Close()
	if !failure {
		t.Error("the record past the fed offset was not fed")
	}
	if got := w.String(); !strings.Contains(got, "nothing is lost") || !strings.Contains(got, fmt.Sprintf("offset=%d", f.starts[1])) {
		t.Errorf("warned %q", got)
	}
	if _, err := os.Stat(filepath.Join(path+logDirSuffix, "dead-1.log"+damagedSuffix)); err != nil {
		t.Error(err)
	}
}

// A log of format version 1 (HAYLOG1), as a process of the release before
// batches leaves it when killed before feeding it, replays whole: every
// record, from the start or from its fed offset, the zeros reserved after
// them the end.
func TestV1LogReplays(t *testing.T) {
	f := newTornFixtureV1(t, 5)
	log := append(slices.Clone(f.log), make([]byte, 4096)...)
	if !bytes.HasPrefix(log, []byte("HAYLOG1\n")) {
		t.Fatalf("fixture starts %q", log[:8])
	}
	scan, fed, err := readLogBytes(t, log, 0)
	if err != nil || len(fed) != 6 || scan.end != int64(len(f.log)) || len(scan.damage) != 0 {
		t.Fatalf("read: %d records, %+v, %v", len(fed), scan, err)
	}
	if _, fed, _ := readLogBytes(t, log, int64(f.ends[2])); len(fed) != 3 {
		t.Fatalf("read from the fourth record: %d records", len(fed))
	}
	responses, failure, w, path := f.replay(t, log)
	if count(responses) != len(f.keys) || !failure {
		t.Errorf("responses %v, failure %v: want all", responses, failure)
	}
	if left, _ := os.ReadDir(path + logDirSuffix); len(left) != 0 || w.String() != "" {
		t.Errorf("%d files left, warned %q", len(left), w.String())
	}
}

// The appender writes one batch per group commit, each header at its own
// offset, flagged synced under SyncBatch only, and its records read back
// whole.
func TestAppenderWritesBatches(t *testing.T) {
	for _, mode := range []Sync{SyncBatch, SyncOS} {
		t.Run(string(mode), func(t *testing.T) {
			ctx := context.Background()
			s, err := OpenWith(ctx, filepath.Join(t.TempDir(), "j.db"), Options{Sync: mode})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			k := mustKeyer(t, testIdentity())
			const puts = 200
			var wg sync.WaitGroup
			for w := range 16 {
				wg.Go(func() {
					for i := w; i < puts; i += 16 {
						r := mustKeyed(t, k, testRequest(i))
						if err := s.PutResponse(ctx, k, r, &sdk.GenerateResponse{Text: "a"}, time.Millisecond); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			s.fmu.Lock()
			seg := s.segs[0]
			size := seg.size
			s.fmu.Unlock()
			raw, err := os.ReadFile(filepath.Join(s.logDir, seg.name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(raw, []byte(logMagic)) || !bytes.Equal(raw[len(logMagic):logHeaderBytes], seg.id[:]) {
				t.Fatalf("header %q", raw[:logHeaderBytes])
			}
			want := uint32(0)
			if mode == SyncBatch {
				want = batchSynced
			}
			batches := 0
			for off := int64(logHeaderBytes); off < size; batches++ {
				r := &logReader{id: seg.id, size: int64(len(raw))}
				n, flags, ok := r.header(raw[off:off+batchHeaderBytes], off)
				if !ok || flags != want {
					t.Fatalf("batch %d at %d: header ok %v, flags %d", batches, off, ok, flags)
				}
				off += batchHeaderBytes + n
			}
			scan, fed, err := readLogBytes(t, raw, 0)
			if err != nil || len(fed) != puts || scan.end != size || len(scan.damage) != 0 {
				t.Fatalf("read back %d of %d records, %+v (size %d), %v", len(fed), puts, scan, size, err)
			}
			t.Logf("%d records in %d batches", puts, batches)
		})
	}
}
