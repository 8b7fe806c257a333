package store

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"slices"
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
