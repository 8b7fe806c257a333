package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"syscall"
	"testing"
)

// A bit flipped in a record's length, the result still a plausible
// length, does not make salvage take that length for where the next
// record starts: it would read on from inside the next record, find junk
// and call the rest of the batch damaged, losing an intact record. Salvage
// finds the next record by the records that run from it to the batch's
// end, and feeds it.
func TestPlausibleBadLengthLosesNextRecord(t *testing.T) {
	f := newTornFixture(t, 8)
	st, en, b := f.starts, f.ends, f.batches
	// Records 2 and 3 are batch 1; batch 2 starts at b[2].
	l2 := binary.LittleEndian.Uint32(f.log[st[2]:])
	room := uint32(b[2] - st[2] - 8)
	bad := uint32(0)
	for k := range 32 {
		if n := l2 ^ 1<<k; n != 0 && n <= room && n != uint32(en[2]-st[2]-8) && n > l2 {
			bad = n
			break
		}
	}
	if bad == 0 {
		t.Fatalf("no one-bit change of length %d stays within %d", l2, room)
	}
	log := append(bytes.Clone(f.log), make([]byte, 8192)...)
	binary.LittleEndian.PutUint32(log[st[2]:], bad)
	scan, _, err := readLogBytes(t, log, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("length %d -> %d (one bit): damage %+v", l2, bad, scan.damage)
	if want := []logDamage{{off: int64(st[2]), size: int64(en[2] - st[2]), synced: true}}; !slices.Equal(scan.damage, want) {
		t.Errorf("damage %+v, want record 2's only: %+v", scan.damage, want)
	}
	var w warnings
	s, _, err := f.openLog(t, log, w.logger())
	if err != nil {
		t.Fatal(err)
	}
	responses, _ := f.present(t, s)
	s.Close()
	if !responses[3] {
		t.Errorf("record 3 (offset %d, intact) lost after one bit of record 2's length flipped; responses %v", st[3], responses)
	}
}

// A record salvage finds by scanning that passes its checksum but does not
// decode is not an error (which would make Open refuse the journal), only
// not a record: here record 2's length is damaged to point at such a
// record, laid inside record 2 and ending where record 3 starts, which the
// reader before salvage's scan followed into "corrupt record".
func TestSalvageUndecodableMatchIsNotAnError(t *testing.T) {
	f := newTornFixture(t, 8)
	st, en := f.starts, f.ends
	log := append(bytes.Clone(f.log), make([]byte, 8192)...)
	// A record of 16 bytes of payload: a time, then an unknown table.
	payload := append(make([]byte, 8), 0xee, 1, 2, 3, 4, 5, 6, 7)
	at := en[2] - 8 - len(payload)
	binary.LittleEndian.PutUint32(log[at:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(log[at+4:], crc32.Checksum(payload, crcTable))
	copy(log[at+8:], payload)
	binary.LittleEndian.PutUint32(log[st[2]:], uint32(at-st[2]-8))
	scan, fed, err := readLogBytes(t, log, 0)
	if err != nil {
		t.Fatalf("a checksum-valid, undecodable record found in salvage: %v", err)
	}
	if want := []logDamage{{off: int64(st[2]), size: int64(en[2] - st[2]), synced: true}}; !slices.Equal(scan.damage, want) {
		t.Errorf("damage %+v, want record 2's only: %+v", scan.damage, want)
	}
	if !slices.Contains(fed, int64(en[3])) || len(fed) != len(f.keys) {
		t.Errorf("fed %v: want all %d records but record 2 (record 3 ends at %d)", fed, len(f.keys), en[3])
	}
}

// A valid record laid inside a damaged one (a stray write of another
// record of the log) passes its checksum and decodes, but the records
// from it do not run to the batch's end: salvage does not take it for the
// next record, and does not feed it.
func TestSalvageDoesNotFeedRecordInsideDamage(t *testing.T) {
	f := newTornFixture(t, 8)
	st, en := f.starts, f.ends
	log := append(bytes.Clone(f.log), make([]byte, 8192)...)
	last := f.lastOff + batchHeaderBytes
	rec := f.log[last : last+8+int(binary.LittleEndian.Uint32(f.log[last:]))]
	at := st[2] + 50
	if at+len(rec) >= en[2] {
		t.Fatalf("the last record (%d bytes) does not fit inside record 2", len(rec))
	}
	copy(log[at:], rec)
	scan, fed, err := readLogBytes(t, log, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []logDamage{{off: int64(st[2]), size: int64(en[2] - st[2]), synced: true}}; !slices.Equal(scan.damage, want) {
		t.Errorf("damage %+v, want record 2's only: %+v", scan.damage, want)
	}
	if slices.Contains(fed, int64(at+len(rec))) || len(fed) != len(f.keys) {
		t.Errorf("fed %v: want all %d records but record 2, and not the copy at %d", fed, len(f.keys), at)
	}
}

// The design's first example of damage, "a bad sector", is not garbage to
// the reader but a read that fails (EIO). It used to fail readLog, so
// replay failed and Open refused the journal ("move the file aside to open
// the journal without the rest"): a user who followed that lost every
// record of the segment. The 512 bytes unreadable are damage: every
// record before and after them is fed. (The reader is fed through a
// faulty io.ReaderAt over a real file: there is no device-mapper here to
// make a real bad sector.)
func TestUnreadableSectorFailsReplay(t *testing.T) {
	f := newTornFixture(t, 8)
	log := append(bytes.Clone(f.log), make([]byte, 8192)...)
	sector := int64(f.starts[4]) &^ 511
	scan, fed, _, err := readFaulty(t, log, sector, 512)
	if err != nil {
		t.Fatalf("one unreadable sector at %d: readLog fails, so Open refuses the journal: %v", sector, err)
	}
	t.Logf("sector %d unreadable: %d fed, damage %+v", sector, len(fed), scan.damage)
	if len(fed) < 7 || len(scan.damage) == 0 {
		t.Errorf("one unreadable sector: %d records fed, damage %+v", len(fed), scan.damage)
	}
	covered := false
	for _, d := range scan.damage {
		if d.off <= sector && sector+512 <= d.off+d.size && d.unreadable && d.synced && !d.framing {
			covered = true
		}
	}
	if !covered {
		t.Errorf("damage %+v does not report the unreadable sector [%d, %d)", scan.damage, sector, sector+512)
	}
}

// An unreadable sector with no valid batch header after it cannot be a
// torn tail (an I/O error is a disk fault, not a write cut off): it is
// reported as damage, and every record before it is fed.
func TestUnreadableSectorInTailReported(t *testing.T) {
	f := newTornFixture(t, 8)
	log := append(bytes.Clone(f.log), make([]byte, 8192)...)
	sector := (int64(len(f.log)) + 1024) &^ 511
	scan, fed, _, err := readFaulty(t, log, sector, 1024)
	if err != nil {
		t.Fatal(err)
	}
	want := []logDamage{{off: sector, size: 1024, synced: true, unreadable: true}}
	if len(fed) != len(f.keys)+1 || !slices.Equal(scan.damage, want) {
		t.Errorf("unreadable sectors past the last batch: %d fed, damage %+v; want %d and %+v", len(fed), scan.damage, len(f.keys)+1, want)
	}
}

// More unreadable bytes than maxUnreadable is a failing or missing disk,
// not a bad sector: the read error is returned (the journal refuses the
// log and leaves it as it is) rather than the log taken for damage and
// moved aside with records a later read may still get.
func TestUnreadableDiskFails(t *testing.T) {
	f := newTornFixture(t, 8)
	log := append(bytes.Clone(f.log), make([]byte, 2*maxUnreadable)...)
	_, _, _, err := readFaulty(t, log, int64(len(f.log))&^511, maxUnreadable+4096)
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("%d unreadable bytes: error %v, want EIO", maxUnreadable+4096, err)
	}
}
