package store

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
	"syscall"
	"unsafe"
)

// The journal's durability lives in an append-only log, one file per
// process at a time (see log.go for who writes and feeds it). This file is
// the log's format (version 2): a header, the magic then a random segment
// id of segmentIDBytes, then batches, one per group commit, each a batch
// header then its records:
//
//	marker  [4]byte    batchMarker
//	flags   uint32 LE  batchSynced: the file was fdatasynced up to start
//	id      [8]byte    the segment id, as in the file's header
//	start   uint64 LE  this header's own offset: the end of the last batch
//	length  uint64 LE  bytes of records that follow the header
//	records uint32 LE  CRC-32C of the records' framings (length and crc), in order
//	crc     uint32 LE  CRC-32C of the 36 bytes above
//
// and each record
//
//	length  uint32 LE  bytes of payload
//	crc     uint32 LE  CRC-32C of payload
//	payload            time (int64 LE, Unix ns) then rows
//
// and each row is its table's id, the number of values, then the values
// (a type byte and the value; NULL is a type byte alone). A row carries
// every column its table has in this build (samples' grid point,
// responses' cached_tokens), so the feed writes what a direct write would.
// A record is one Put call's rows, which count together or not at all.
//
// Why batches: a record that fails its length or checksum is either the
// torn tail of the last group commit (kill -9 mid-write, or a power loss,
// after which that batch's pages may persist in any order; none of it was
// acknowledged, since a Put returns only after its batch is synced), or
// damage to a part of the file that had been synced and acknowledged (a
// bad sector, a stray write). Records alone cannot tell the two apart, and
// version 1 took every bad record for a torn tail: the acknowledged records
// after it were dropped without a word. The appender writes a batch only
// once the sync of the one before it has returned (under SyncOS, its
// writes), so a valid batch header at start proves that everything before
// start had been synced (written): a bad record or header with a valid
// batch header after it is damage, reported, and the batches after it are
// read on (a bad batch header's records too, by their own framing); one
// without is the torn tail, dropped silently. A header counts only if its
// checksum holds, its id is the segment's and its start is its own offset,
// so neither junk that happens to hold the marker, nor text a model wrote,
// nor a header copied from another segment or another place passes for
// one. The id is in each header, not only under its checksum, so that a
// header validates without the file's: a damaged byte of the file's id
// (or magic) is told by the batch headers, which agree on another id, and
// reported, rather than failing every header and making the whole segment
// read as a torn tail (readLog, identify). The file is zeroed
// ahead of its batches (segment.reserve), so the log normally ends at a
// header of zeros with no valid header after it.
//
// A record's own checksum covers its payload, not where it lies: a stray
// write that lays a valid record of the log over another of the same
// length passes it, but not the batch's checksum of its records, which
// covers every payload through the checksums in the framings. Such a
// record is reported (logReader.copied), never fed in silence.
//
// The proof comes from the batch after, or from the fed offset readLog is
// given (journal_logs.fed): a process feeds a batch's records only once its
// sync has returned, so a fed offset past a batch's start proves that batch
// synced, the last one too. Without either, damage in the last batch but
// one, with the last batch's header torn too, reads as the torn tail.
//
// Version 1 (HAYLOG1, the records without batches and the segment id) is
// still read, as it always was: up to the first bad record.

// The magic opens every log file; the digit is the format's version.
const (
	logMagic   = "HAYLOG2\n"
	logMagicV1 = "HAYLOG1\n"
)

// segmentIDBytes is the size of the random id after the magic.
const segmentIDBytes = 8

// logHeaderBytes is where a version 2 file's first batch starts.
const logHeaderBytes = len(logMagic) + segmentIDBytes

// batchMarker opens a batch header. Read as a record length it is beyond
// maxRecord, and 0xff never occurs in UTF-8, so text (most of what the
// records hold) never contains it.
const batchMarker = "\xffHLB"

// batchHeaderBytes is the size of a batch header.
const batchHeaderBytes = 40

// Batch header flags.
const (
	// batchSynced: the appender synced the file up to the batch's start
	// before writing it (SyncBatch). Without it (SyncOS) the bytes before
	// were only written: they survive kill -9, not a power loss.
	batchSynced uint32 = 1 << iota

	batchFlags = batchSynced // every flag this build knows
)

// maxRecord bounds one record's payload: a length beyond it is a torn or
// corrupt header, not a record to allocate for. A 128K-token request is
// about 1 MB of JSON; this leaves room for far longer ones.
const maxRecord = 256 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// logTables are the tables whose rows go through the log, by id. The ids
// are part of the format: append only.
var logTables = []*table{1: responsesTable, 2: attemptsTable, 3: samplesTable, 4: scoresTable, 5: failuresTable}

func init() {
	for id, t := range logTables {
		if t != nil {
			t.logID = byte(id)
		}
	}
}

// Value type bytes.
const (
	valString = 's'
	valInt    = 'i'
	valFloat  = 'f'
	valFalse  = '0'
	valTrue   = '1'
	valBytes  = 'b'
	valNull   = 'n' // a NULL column: a sample without a grid point, a response without a cached count
)

// aliasBytes is the length from which a row's string value is replaced by
// the record's copy of it (encodeRecord).
const aliasBytes = 64 << 10

// encodeRecord frames rows, stamped at unix nanoseconds at, as one record.
// Callers encode their own records, so the work is spread over the
// goroutines that Put rather than queued behind the log's writer. Long
// string values of rows are replaced by the record's bytes (aliasBytes).
func encodeRecord(rows []row, at int64) ([]byte, error) {
	size := 8 + 8
	for _, r := range rows {
		size += 1 + binary.MaxVarintLen64
		for _, a := range r.args {
			size += 1 + binary.MaxVarintLen64
			switch v := a.(type) {
			case string:
				size += len(v)
			case []byte:
				size += len(v)
			case requestJSON:
				size += v.encodedLen()
			}
		}
	}
	b := make([]byte, 8, size)
	b = binary.LittleEndian.AppendUint64(b, uint64(at))
	for _, r := range rows {
		if r.table.logID == 0 {
			return nil, fmt.Errorf("%s rows are not logged", r.table.name)
		}
		if len(r.args) != r.table.width() {
			return nil, fmt.Errorf("%s row has %d values, want %d", r.table.name, len(r.args), r.table.width())
		}
		b = append(b, r.table.logID)
		b = binary.AppendUvarint(b, uint64(len(r.args)))
		for i, a := range r.args {
			switch v := a.(type) {
			case nil:
				b = append(b, valNull)
			case string:
				b = append(b, valString)
				b = binary.AppendUvarint(b, uint64(len(v)))
				b = append(b, v...)
				if len(v) >= aliasBytes {
					// The row keeps the record's copy rather than its own
					// until it is fed: a long request is then held once,
					// not twice. The record is never written to again.
					tail := b[len(b)-len(v):]
					r.args[i] = unsafe.String(unsafe.SliceData(tail), len(tail))
				}
			case requestJSON:
				// Encoded in place; the row then holds the record's copy
				// as any long string does, which the feed inserts.
				n := v.encodedLen()
				b = append(b, valString)
				b = binary.AppendUvarint(b, uint64(n))
				start := len(b)
				if b = v.appendTo(b); len(b)-start != n {
					return nil, fmt.Errorf("%s row: request encoded to %d bytes, measured %d", r.table.name, len(b)-start, n)
				}
				tail := b[start:]
				r.args[i] = unsafe.String(unsafe.SliceData(tail), len(tail))
			case []byte:
				b = append(b, valBytes)
				b = binary.AppendUvarint(b, uint64(len(v)))
				b = append(b, v...)
			case int:
				b = binary.AppendVarint(append(b, valInt), int64(v))
			case int64:
				b = binary.AppendVarint(append(b, valInt), v)
			case float64:
				b = binary.LittleEndian.AppendUint64(append(b, valFloat), math.Float64bits(v))
			case bool:
				if v {
					b = append(b, valTrue)
				} else {
					b = append(b, valFalse)
				}
			default:
				return nil, fmt.Errorf("%s row: value of type %T cannot be logged", r.table.name, a)
			}
		}
	}
	payload := b[8:]
	if len(payload) > maxRecord {
		return nil, fmt.Errorf("record of %d bytes exceeds the log's limit of %d", len(payload), maxRecord)
	}
	binary.LittleEndian.PutUint32(b[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[4:8], crc32.Checksum(payload, crcTable))
	return b, nil
}

// errCorrupt marks a record whose checksum holds but whose content does
// not decode: not a torn write but a bug or a foreign file, which must not
// be skipped silently.
var errCorrupt = errors.New("corrupt record")

// decodeRecord reads one payload's rows; each row's time is at.
func decodeRecord(p []byte) (rows []row, at int64, err error) {
	if len(p) < 8 {
		return nil, 0, fmt.Errorf("%w: %d bytes, too short for its time", errCorrupt, len(p))
	}
	at = int64(binary.LittleEndian.Uint64(p))
	p = p[8:]
	for len(p) > 0 {
		id := p[0]
		if int(id) >= len(logTables) || logTables[id] == nil {
			return nil, 0, fmt.Errorf("%w: unknown table %d", errCorrupt, id)
		}
		t := logTables[id]
		n, w := binary.Uvarint(p[1:])
		if w <= 0 || n != uint64(t.width()) {
			return nil, 0, fmt.Errorf("%w: %s row with %d values, want %d", errCorrupt, t.name, n, t.width())
		}
		p = p[1+w:]
		args := make([]any, n)
		for i := range args {
			if len(p) == 0 {
				return nil, 0, fmt.Errorf("%w: %s row ends after %d values", errCorrupt, t.name, i)
			}
			typ := p[0]
			p = p[1:]
			switch typ {
			case valString, valBytes:
				l, w := binary.Uvarint(p)
				if w <= 0 || l > uint64(len(p)-w) {
					return nil, 0, fmt.Errorf("%w: %s row value %d overruns the record", errCorrupt, t.name, i)
				}
				if typ == valString {
					args[i] = string(p[w : w+int(l)])
				} else {
					args[i] = append([]byte(nil), p[w:w+int(l)]...)
				}
				p = p[w+int(l):]
			case valInt:
				v, w := binary.Varint(p)
				if w <= 0 {
					return nil, 0, fmt.Errorf("%w: %s row value %d is not an integer", errCorrupt, t.name, i)
				}
				args[i], p = v, p[w:]
			case valFloat:
				if len(p) < 8 {
					return nil, 0, fmt.Errorf("%w: %s row value %d overruns the record", errCorrupt, t.name, i)
				}
				args[i], p = math.Float64frombits(binary.LittleEndian.Uint64(p)), p[8:]
			case valFalse, valTrue:
				args[i] = typ == valTrue
			case valNull:
				args[i] = nil
			default:
				return nil, 0, fmt.Errorf("%w: %s row value %d has unknown type %q", errCorrupt, t.name, i, typ)
			}
		}
		rows = append(rows, row{table: t, args: args})
	}
	return rows, at, nil
}

// appendBatchHeader appends the header of a batch of length bytes of
// records, whose framings' checksum is records (recordsCRC), at offset
// start of the segment id.
func appendBatchHeader(b []byte, id *[segmentIDBytes]byte, start, length int64, flags, records uint32) []byte {
	h := len(b)
	b = append(b, batchMarker...)
	b = binary.LittleEndian.AppendUint32(b, flags)
	b = append(b, id[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(start))
	b = binary.LittleEndian.AppendUint64(b, uint64(length))
	b = binary.LittleEndian.AppendUint32(b, records)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[h:], crcTable))
}

// recordsCRC adds to crc, a batch header's checksum of its records so far,
// the record rec (its framing: the payload is under the record's own
// checksum, which the framing holds).
func recordsCRC(crc uint32, rec []byte) uint32 {
	return crc32.Update(crc, crcTable, rec[:8])
}

// batchHeader is a batch header as read.
type batchHeader struct {
	id     [segmentIDBytes]byte
	flags  uint32
	length int64  // of its records
	sum    uint32 // of its records' framings (recordsCRC)
}

// parseBatchHeader checks h, read at offset at of a file of size bytes, for
// a valid batch header of any segment.
func parseBatchHeader(h []byte, at, size int64) (bh batchHeader, ok bool) {
	const sum = batchHeaderBytes - 4
	if string(h[:4]) != batchMarker || binary.LittleEndian.Uint32(h[sum:]) != crc32.Checksum(h[:sum], crcTable) {
		return bh, false
	}
	bh.flags = binary.LittleEndian.Uint32(h[4:8])
	copy(bh.id[:], h[8:16])
	start := binary.LittleEndian.Uint64(h[16:24])
	n := binary.LittleEndian.Uint64(h[24:32])
	bh.sum = binary.LittleEndian.Uint32(h[32:36])
	// A batch holds at least one record (a header and a time). One that
	// runs past the end of the file was cut short.
	if bh.flags&^batchFlags != 0 || start != uint64(at) || n < 16 || n > uint64(size-at-batchHeaderBytes) {
		return bh, false
	}
	bh.length = int64(n)
	return bh, true
}

// logRecord is one record read back from a log file, and the offset just
// past it.
type logRecord struct {
	rows []row
	at   int64
	end  int64
	// hold, if not 0, is where damage that lost records starts, before
	// this record and past the offset readLog was given: a replay must
	// not record the log fed past it until it has reported the loss, or
	// the next replay would take the region for one its process had fed.
	hold int64
}

// logDamage is a region of a log file that does not read back although a
// valid batch header after it proves it was written before that batch.
type logDamage struct {
	off, size int64
	// synced: the batch header that proves the region written says it was
	// also fdatasynced. A region that was only written (SyncOS) can be
	// lost to an OS crash or a power loss without any fault of the disk.
	synced bool
	// framing: the region is the file's header (magic or segment id) or a
	// batch header, and no record is lost to it: the records were read by
	// their batch headers, or by their own framing.
	framing bool
	// copyOf: the region is a record that passes its own checksum but not
	// its batch's, and is a copy of the record at copyOf: it was written
	// over the batch's own record there, which is lost.
	copyOf int64
	// unverified: the region is a batch's records, each of which passes
	// its checksum but not together the batch's, and none is a copy of a
	// record elsewhere in the segment: one is not the batch's own, but
	// which cannot be told, so none was fed.
	unverified bool
	// unreadable: the region holds sectors that could not be read (an
	// I/O error: a bad sector), which read as zeros (sectorReader).
	unreadable bool
}

// logScan is what readLog found in a log file.
type logScan struct {
	end    int64       // where the valid log ends: past it, the torn tail
	damage []logDamage // in order of offset
}

// readLog reads the records of the log file f that start at or after
// offset from (0: the first), calling fn for each in order, and returns
// where the valid log ends. A record or batch header that is incomplete or
// fails its checksum is the torn tail, and ends the log without error,
// unless a valid batch header follows it: then it is damage, returned in
// the scan, and the records after it are read on. A record that passes its
// checksum but does not decode is an error naming its offset. A sector
// that cannot be read (EIO) reads as zeros and is reported as damage,
// wherever it is (sectorReader).
func readLog(f *os.File, from int64, fn func(logRecord) error) (logScan, error) {
	// Read through the reader of unreadable sectors, so that a bad
	// sector in the file's header is damage to it like any other.
	u := &sectorReader{ra: f}
	var head [logHeaderBytes]byte
	n, err := u.ReadAt(head[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return logScan{}, err
	}
	if n < len(logMagic) {
		// A file cut inside its header was created and killed before any
		// record was synced.
		return logScan{}, nil
	}
	magic := string(head[:len(logMagic)])
	if magic == logMagicV1 {
		if _, err := f.Seek(int64(len(logMagicV1)), io.SeekStart); err != nil {
			return logScan{}, err
		}
		end, err := readLogV1(f, from, fn)
		return logScan{end: end}, err
	}
	notLog := fmt.Errorf("not a hayloft journal log (header %q)", head[:len(logMagic)])
	if n < logHeaderBytes {
		if magic == logMagic {
			return logScan{}, nil
		}
		return logScan{}, notLog
	}
	fi, err := f.Stat()
	if err != nil {
		return logScan{}, err
	}
	r := &logReader{f: u, unreadable: u, size: fi.Size(), from: from, fn: fn}
	copy(r.id[:], head[len(logMagic):])
	r.br = bufio.NewReaderSize(nil, 1<<20)
	found, err := r.identify(magic == logMagic)
	if err != nil {
		return logScan{}, err
	}
	if !found && magic != logMagic {
		if u.err != nil {
			// Not a log, or one whose header could not be read.
			return logScan{}, u.err
		}
		return logScan{}, notLog
	}
	return r.read()
}

// pendingRecord is a record read and not yet fed.
type pendingRecord struct {
	rec   logRecord
	off   int64
	frame [8]byte // its length and checksum
	feed  bool    // at or after from
}

// logReader reads a version 2 log file.
type logReader struct {
	f    io.ReaderAt
	size int64
	id   [segmentIDBytes]byte
	from int64
	fn   func(logRecord) error
	br   *bufio.Reader // reads on from where seek put it
	buf  []byte        // the last record's payload
	head [8]byte       // its framing: here, not on the heap per record
	// pending are the records of the batch being read, fed once the
	// batch's checksum of them holds; sum is that checksum so far.
	pending []pendingRecord
	sum     uint32
	// anyID: resync takes a header of any segment (identify).
	anyID bool
	// pre is the damage found before read: the file's header.
	pre []logDamage
	// scan is read's, for flush to see the damage found so far.
	scan *logScan
	// badLen is the length the last bad record claimed (records).
	badLen uint32
	// sr is what br reads, from base; rbuf is resync's buffer.
	sr   *io.SectionReader
	base int64
	rbuf []byte
	// sbuf is salvage's buffer.
	sbuf []byte
	// unreadable is f, if f is the reader of unreadable sectors that
	// read puts in (sectorReader): the sectors it could not read.
	unreadable *sectorReader
}

// identify checks the file's header against its batch headers. The magic
// and the segment id were synced with the file's first reservation, and a
// byte of either can be damaged like any other. A damaged id would make
// every batch header fail, and the whole segment read as a torn tail; a
// damaged magic, the file refused. So the first valid batch header, of any
// segment but at its own offset, is looked for: if none holds the file's
// id, and none after it does either, the file's id is the damaged one and
// that header's is adopted. If the magic is not version 2's but a valid
// batch header is there, the file is a version 2 log whose magic is
// damaged. Either is reported as damage of the framing (no record is lost
// to it). found says whether any valid batch header is in the file.
func (r *logReader) identify(magicOK bool) (found bool, err error) {
	r.anyID = true
	at, _, err := r.resync(int64(logHeaderBytes))
	r.anyID = false
	if err != nil || at < 0 {
		return false, err
	}
	if !magicOK {
		r.pre = append(r.pre, logDamage{off: 0, size: int64(len(logMagic)), synced: true, framing: true})
	}
	var h [batchHeaderBytes]byte
	if _, err := r.f.ReadAt(h[:], at); err != nil {
		return true, err
	}
	bh, _ := parseBatchHeader(h[:], at, r.size)
	if bh.id == r.id {
		return true, nil
	}
	// A header copied here from another segment, or this file's id
	// damaged: a later header with the file's id tells which.
	mine, _, err := r.resync(at + 1)
	if err != nil {
		return true, err
	}
	if mine < 0 {
		r.id = bh.id
		r.pre = append(r.pre, logDamage{off: int64(len(logMagic)), size: segmentIDBytes, synced: true, framing: true})
	}
	return true, nil
}

// seek makes r.br read from off on: a no-op if it is there already, a
// skip if off is ahead within what it holds; only otherwise is its buffer
// dropped (and refilled, up to 1 MB, on the next read).
func (r *logReader) seek(off int64) {
	if r.sr != nil {
		cur, _ := r.sr.Seek(0, io.SeekCurrent)
		pos := r.base + cur - int64(r.br.Buffered())
		if d := off - pos; d >= 0 && d <= int64(r.br.Buffered()) {
			r.br.Discard(int(d))
			return
		}
	}
	r.sr, r.base = io.NewSectionReader(r.f, off, r.size-off), off
	r.br.Reset(r.sr)
}

func (r *logReader) read() (logScan, error) {
	if r.unreadable == nil {
		r.unreadable = &sectorReader{ra: r.f}
		r.f = r.unreadable
	}
	scan, err := r.readScan()
	if err != nil {
		return scan, err
	}
	r.unreadable.report(&scan)
	return scan, nil
}

// readScan is read, but for the report of unreadable sectors.
func (r *logReader) readScan() (logScan, error) {
	var scan logScan
	r.scan = &scan
	for _, d := range r.pre {
		scan.add(d)
	}
	var head [batchHeaderBytes]byte
	off := int64(logHeaderBytes)
	r.seek(off)
	for {
		// Fewer bytes than a header hold no batch, and no later one.
		if r.size-off < batchHeaderBytes {
			scan.end = off
			return scan, nil
		}
		if _, err := io.ReadFull(r.br, head[:]); err != nil {
			return scan, err
		}
		bh, ok := r.batch(head[:], off)
		if !ok {
			// The zeros past the last batch, a torn header, or a damaged
			// one: only a later batch tells the last from the others.
			next, flags, err := r.resync(off + 1)
			if err != nil {
				return scan, err
			}
			if next < 0 {
				scan.end = off
				return scan, nil
			}
			if err := r.unframed(&scan, off, next, flags); err != nil {
				return scan, err
			}
			off = next
			r.seek(off)
			continue
		}
		end := off + batchHeaderBytes + bh.length
		r.sum = 0
		bad, err := r.records(off+batchHeaderBytes, end)
		if err != nil {
			return scan, err
		}
		if bad < 0 {
			if r.sum != bh.sum {
				err = r.copied(&scan, off, end, bh.flags)
			} else {
				err = r.flush()
			}
			if err != nil {
				return scan, err
			}
			off = end
			continue
		}
		// The records before the bad one hold.
		if err := r.flush(); err != nil {
			return scan, err
		}
		// A bad record in a batch whose header holds: the torn tail,
		// unless a valid batch follows (at end, or past damage there).
		next, flags, err := r.resync(end)
		if err != nil {
			return scan, err
		}
		if next < 0 && r.from > off {
			// No batch follows, but the segment's process had fed
			// records of this one, which it does only once the batch's
			// sync (under SyncOS, its write) has returned: not a torn
			// tail either.
			if err := r.salvage(&scan, bad, end, bh.flags); err != nil {
				return scan, err
			}
			off = end
			r.seek(off)
			continue
		}
		if next < 0 {
			scan.end = bad
			return scan, nil
		}
		if err := r.salvage(&scan, bad, end, flags); err != nil {
			return scan, err
		}
		if next > end {
			if err := r.unframed(&scan, end, next, flags); err != nil {
				return scan, err
			}
		}
		off = next
		r.seek(off)
	}
}

// header checks the batch header h read at offset at, and returns the
// length of its records and its flags. It must be this segment's (unless
// r.anyID).
func (r *logReader) header(h []byte, at int64) (length int64, flags uint32, ok bool) {
	bh, ok := r.batch(h, at)
	return bh.length, bh.flags, ok
}

// batch is header, returning the whole header.
func (r *logReader) batch(h []byte, at int64) (batchHeader, bool) {
	bh, ok := parseBatchHeader(h, at, r.size)
	if !ok || (!r.anyID && bh.id != r.id) {
		return batchHeader{}, false
	}
	return bh, true
}

// flush feeds the pending records.
func (r *logReader) flush() error {
	var hold int64
	if r.scan != nil {
		for _, d := range r.scan.damage {
			if !d.framing && d.off+d.size > r.from {
				hold = max(d.off, r.from)
				break
			}
		}
	}
	for i := range r.pending {
		if p := &r.pending[i]; p.feed {
			p.rec.hold = hold
			if err := r.fn(p.rec); err != nil {
				return err
			}
		}
	}
	clear(r.pending) // their rows are the feed's now
	r.pending = r.pending[:0]
	return nil
}

// copied deals with the batch at off, up to end, whose records, pending,
// each pass their checksum but not together the batch's. Nothing but a
// write of a valid record over another does that: a torn write leaves the
// reservation's zeros, not valid records, and a damaged byte fails the
// record's own checksum. A record that is a copy of another record of the
// segment (the same length and checksum) is the one not the batch's own:
// it is not fed (fed again, out of its place, it could set an upserted
// row back to an older state), and is reported with where it came from;
// the batch's other records are fed. If no record is such a copy (the copy
// came from another file), which one is not the batch's own cannot be
// told: none is fed, and the batch's records are reported lost, as any
// damage is (their samples are asked again), rather than risk feeding a
// stale row.
func (r *logReader) copied(scan *logScan, off, end int64, flags uint32) error {
	others, err := r.frames(off)
	if err != nil {
		return err
	}
	synced := flags&batchSynced != 0
	found := false
	for _, p := range r.pending {
		if _, ok := others[p.frame]; ok {
			found = true
		}
	}
	if !found {
		clear(r.pending)
		r.pending = r.pending[:0]
		scan.add(logDamage{off: off + batchHeaderBytes, size: end - off - batchHeaderBytes, synced: synced, unverified: true})
		return nil
	}
	for i := range r.pending {
		p := &r.pending[i]
		if src, ok := others[p.frame]; ok {
			p.feed = false
			size := 8 + int64(binary.LittleEndian.Uint32(p.frame[:4]))
			scan.add(logDamage{off: p.off, size: size, synced: synced, copyOf: src})
		}
	}
	return r.flush()
}

// frames returns the framing of every record in the segment's valid
// batches but the one at skip, each with the offset of its record (the
// first, if several share it).
func (r *logReader) frames(skip int64) (map[[8]byte]int64, error) {
	m := make(map[[8]byte]int64)
	var h [batchHeaderBytes]byte
	var fr [8]byte
	for off := int64(logHeaderBytes); r.size-off >= batchHeaderBytes; {
		if _, err := r.f.ReadAt(h[:], off); err != nil {
			return nil, err
		}
		length, _, ok := r.header(h[:], off)
		if !ok {
			next, _, err := r.resync(off + 1)
			if err != nil || next < 0 {
				return m, err
			}
			off = next
			continue
		}
		end := off + batchHeaderBytes + length
		for p := off + batchHeaderBytes; off != skip && end-p >= 8; {
			if _, err := r.f.ReadAt(fr[:], p); err != nil {
				return nil, err
			}
			n := int64(binary.LittleEndian.Uint32(fr[:4]))
			if n == 0 || n > end-p-8 {
				break
			}
			if _, ok := m[fr]; !ok {
				m[fr] = p
			}
			p += 8 + n
		}
		off = end
	}
	return m, nil
}

// records reads the records of a batch, from off up to its end, adds them
// to r.pending (those at or after r.from to be fed: flush) and their
// framings to r.sum. It returns the offset of the first
// record that is incomplete or fails its checksum, or -1 if all hold; the
// length that record claims is then r.badLen, and r.br is past its framing
// and, if the length fits, its payload.
// r.br must be at off.
func (r *logReader) records(off, end int64) (bad int64, err error) {
	for off < end {
		n, ok, err := r.record(end - off)
		if err != nil {
			return off, err
		}
		if !ok {
			r.badLen = n
			return off, nil
		}
		next := off + 8 + int64(n)
		r.sum = crc32.Update(r.sum, crcTable, r.head[:])
		p := pendingRecord{off: off, frame: r.head, feed: off >= r.from}
		if p.feed {
			rows, at, err := decodeRecord(r.buf[:n])
			if err != nil {
				return off, fmt.Errorf("offset %d: %w", off, err)
			}
			p.rec = logRecord{rows: rows, at: at, end: next}
		}
		r.pending = append(r.pending, p)
		off = next
	}
	return -1, nil
}

// record reads one record of at most room bytes, framing included, into
// r.buf and returns its payload's length; ok is false if it does not fit
// or fails its checksum, and n is then the length its header claims.
func (r *logReader) record(room int64) (n uint32, ok bool, err error) {
	head := r.head[:]
	if room < int64(len(head)) {
		return 0, false, nil
	}
	if _, err := io.ReadFull(r.br, head); err != nil {
		return 0, false, err
	}
	n = binary.LittleEndian.Uint32(head[0:4])
	if n == 0 || n > maxRecord || int64(n) > room-8 {
		return n, false, nil
	}
	if cap(r.buf) < int(n) {
		r.buf = make([]byte, n)
	}
	p := r.buf[:n]
	if _, err := io.ReadFull(r.br, p); err != nil {
		return n, false, err
	}
	return n, crc32.Checksum(p, crcTable) == binary.LittleEndian.Uint32(head[4:8]), nil
}

// unframed reads the region from off to next, where a batch should start
// but whose header is bad, and which the valid header at next proves
// written (flags). The header is damage; the records after it are framed
// and checked on their own, so those that hold are fed and the rest is
// salvaged as in a batch whose header held. (Without the header, the
// batch's checksum of its records cannot be checked.)
func (r *logReader) unframed(scan *logScan, off, next int64, flags uint32) error {
	synced := flags&batchSynced != 0
	if next-off <= batchHeaderBytes {
		scan.add(logDamage{off: off, size: next - off, synced: synced, framing: true})
		return nil
	}
	scan.add(logDamage{off: off, size: batchHeaderBytes, synced: synced, framing: true})
	r.seek(off + batchHeaderBytes)
	bad, err := r.records(off+batchHeaderBytes, next)
	if err != nil {
		return err
	}
	if err := r.flush(); err != nil {
		return err
	}
	if bad < 0 {
		return nil
	}
	return r.salvage(scan, bad, next, flags)
}

// salvage reads on, past the bad record at bad, the rest of a batch that
// ends at end and is known to have been written (synced): the records in
// it that hold are fed, and the rest is damage. A damaged record's length
// may be damaged too, and still plausible, so it is not taken for where
// the next record starts: the next record is looked for byte by byte,
// from just past bad, at the first offset from which records run exactly
// to the batch's end, each within its length, passing its checksum and
// decoding (salvageChain). Junk passes a record's checksum once in 2^32
// offsets, and then ends exactly at the batch's end, through records
// that hold, about never: neither is fed, and a record found so that
// passes its checksum but does not decode is not an error, only not a
// record. If no offset leads to the end (a second record of the batch is
// damaged too), the bad record's length is taken, as it is all there is,
// and the records from there on that hold are fed up to the next bad
// one, which is dealt with the same way. A batch of more than
// salvageBytes past bad is read on by the lengths alone.
func (r *logReader) salvage(scan *logScan, bad, end int64, flags uint32) error {
	if end-bad <= salvageBytes {
		return r.salvageChain(scan, bad, end, flags)
	}
	for bad >= 0 {
		// records has read the bad record's framing, and its payload if
		// its length fits: r.br is past it.
		n := r.badLen
		if n == 0 || n > maxRecord || int64(n) > end-bad-8 {
			scan.damaged(bad, end, flags)
			return nil
		}
		next := bad + 8 + int64(n)
		scan.damaged(bad, next, flags)
		var err error
		if bad, err = r.records(next, end); err != nil {
			return err
		}
		if err := r.flush(); err != nil {
			return err
		}
	}
	return nil
}

// salvageBytes bounds the part of a batch past a bad record that salvage
// holds in memory to look for the next record in.
const salvageBytes = 32 << 20

// salvageChain is salvage, for a batch whose part past bad is held in
// memory. r.br is where records left it, past the bad record's framing
// (if it fits) and, if its length fits, its payload; it is left at end.
func (r *logReader) salvageChain(scan *logScan, bad, end int64, flags uint32) error {
	size := int(end - bad)
	if cap(r.sbuf) < size {
		r.sbuf = make([]byte, size)
	}
	b := r.sbuf[:size]
	have := 0
	if size >= 8 {
		have = copy(b, r.head[:])
		if n := r.badLen; n != 0 && n <= maxRecord && int64(n) <= int64(size-8) {
			have += copy(b[8:], r.buf[:n])
		}
	}
	if _, err := io.ReadFull(r.br, b[have:]); err != nil {
		return err
	}
	c := &recordChain{b: b, memo: make([]uint8, size)}
	pos := 0 // the bad record
	for {
		for i := pos + 1; i+16 <= size; i++ {
			if c.runs(i) {
				scan.damaged(bad+int64(pos), bad+int64(i), flags)
				for j := i; j < size; {
					j = r.salvaged(c, bad, j)
				}
				return r.flush()
			}
		}
		// No offset leads to the end: take the bad record's length.
		n, ok := c.length(pos)
		if !ok {
			scan.damaged(bad+int64(pos), end, flags)
			return r.flush()
		}
		next := pos + 8 + n
		scan.damaged(bad+int64(pos), bad+int64(next), flags)
		for pos = next; pos < size; pos = r.salvaged(c, bad, pos) {
			if !c.valid(pos) {
				break
			}
		}
		if pos >= size {
			return r.flush()
		}
	}
}

// salvaged adds the record at j of c, which holds, to r.pending, and
// returns where the next starts. c starts at offset base of the file.
func (r *logReader) salvaged(c *recordChain, base int64, j int) int {
	n, _ := c.length(j)
	off, next := base+int64(j), j+8+n
	r.sum = crc32.Update(r.sum, crcTable, c.b[j:j+8])
	p := pendingRecord{off: off, feed: off >= r.from}
	copy(p.frame[:], c.b[j:j+8])
	if p.feed {
		// valid has decoded it.
		rows, at, _ := decodeRecord(c.b[j+8 : next])
		p.rec = logRecord{rows: rows, at: at, end: base + int64(next)}
	}
	r.pending = append(r.pending, p)
	return next
}

// recordChain is the part of a batch past a bad record, for salvage to
// find where the next record starts.
type recordChain struct {
	b []byte
	// memo says, for each offset looked at, whether records run from it
	// exactly to the end, each holding (1), or not (2).
	memo []uint8
	path []int
}

// length is the payload length the record at j claims, if it fits in c
// and can hold a record's time.
func (c *recordChain) length(j int) (int, bool) {
	if len(c.b)-j < 16 {
		return 0, false
	}
	n := binary.LittleEndian.Uint32(c.b[j:])
	if n < 8 || n > maxRecord || int64(n) > int64(len(c.b)-j-8) {
		return 0, false
	}
	return int(n), true
}

// valid says whether a record at j fits, passes its checksum and decodes.
func (c *recordChain) valid(j int) bool {
	n, ok := c.length(j)
	if !ok {
		return false
	}
	p := c.b[j+8 : j+8+n]
	if crc32.Checksum(p, crcTable) != binary.LittleEndian.Uint32(c.b[j+4:]) {
		return false
	}
	_, _, err := decodeRecord(p)
	return err == nil
}

// runs says whether records run from i exactly to the end of c, each
// valid. It follows the lengths first, and checks the records only of a
// run that lands on the end.
func (c *recordChain) runs(i int) bool {
	c.path = c.path[:0]
	ok := false
	for j := i; ; {
		if j == len(c.b) {
			ok = true
			break
		}
		if c.memo[j] != 0 {
			ok = c.memo[j] == 1
			break
		}
		n, fits := c.length(j)
		if !fits {
			c.memo[j] = 2
			break
		}
		c.path = append(c.path, j)
		j += 8 + n
	}
	for k := len(c.path) - 1; k >= 0; k-- {
		j := c.path[k]
		ok = ok && c.valid(j)
		c.memo[j] = 2
		if ok {
			c.memo[j] = 1
		}
	}
	return c.memo[i] == 1
}

// resyncChunk is how much of the file resync reads at a time.
const resyncChunk = 1 << 20

// resync finds the first valid batch header at or after from, and returns
// its offset and flags, or -1 if there is none. It looks first at from
// itself, where the next batch is when only the one before it is damaged.
func (r *logReader) resync(from int64) (int64, uint32, error) {
	if r.size-from >= batchHeaderBytes {
		var h [batchHeaderBytes]byte
		if _, err := r.f.ReadAt(h[:], from); err != nil {
			return -1, 0, err
		}
		if _, flags, ok := r.header(h[:], from); ok {
			return from, flags, nil
		}
	}
	if n := int(min(resyncChunk, max(r.size-from, 0))); cap(r.rbuf) < n {
		r.rbuf = make([]byte, n)
	}
	buf := r.rbuf[:min(resyncChunk, max(r.size-from, 0))]
	for off := from; r.size-off >= batchHeaderBytes; {
		b := buf[:min(int64(len(buf)), r.size-off)]
		if _, err := r.f.ReadAt(b, off); err != nil {
			return -1, 0, err
		}
		for i := 0; ; i++ {
			j := bytes.Index(b[i:], []byte(batchMarker))
			if j < 0 || i+j+batchHeaderBytes > len(b) {
				break
			}
			i += j
			if _, flags, ok := r.header(b[i:i+batchHeaderBytes], off+int64(i)); ok {
				return off + int64(i), flags, nil
			}
		}
		// The next chunk starts over the last header's worth of this
		// one, for a header cut in two by the boundary.
		off += max(int64(len(b))-(batchHeaderBytes-1), 1)
	}
	return -1, 0, nil
}

// sectorBytes is the unit in which sectorReader reads around a sector it
// cannot read: a disk's smallest (its logical sector); a larger physical
// sector fails as several of them.
const sectorBytes = 512

// maxUnreadable bounds the bytes sectorReader passes over as unreadable:
// beyond it the disk is failing or gone rather than one bad sector, and
// the read error is returned (the journal refuses the log, which stays as
// it is) instead of taking the whole log for damage and moving it aside
// with records a later read may still get.
const maxUnreadable = 1 << 20

// sectorReader reads the log file ra for logReader, and turns a sector
// that cannot be read (EIO: a bad sector) into damage rather than an error
// that would make the journal refuse the whole log. A read that fails is
// read again a sector at a time; each sector that fails reads as zeros,
// which no record nor batch header passes, so the reader takes it for a
// bad region like any other (damage if a valid batch header follows, the
// torn tail otherwise), and the sector is remembered, not read again.
// report then adds the unreadable sectors to the damage: an I/O error is a
// disk fault, never a torn write, so one in the tail is reported too.
type sectorReader struct {
	ra  io.ReaderAt
	bad []logDamage // the unreadable ranges, in order, apart
	n   int64       // their bytes
	err error       // the first read error passed over
}

func (u *sectorReader) ReadAt(p []byte, off int64) (int, error) {
	if !u.touches(off, off+int64(len(p))) {
		n, err := u.ra.ReadAt(p, off)
		if !errors.Is(err, syscall.EIO) {
			return n, err
		}
	}
	n := 0
	for n < len(p) {
		at := off + int64(n)
		q := p[n:min(len(p), n+int(sectorBytes-at%sectorBytes))]
		if u.covers(at, at+int64(len(q))) {
			clear(q)
			n += len(q)
			continue
		}
		m, err := u.ra.ReadAt(q, at)
		if errors.Is(err, syscall.EIO) {
			if u.n+int64(len(q)) > maxUnreadable {
				return n, err
			}
			if u.err == nil {
				u.err = err
			}
			clear(q)
			u.add(at, int64(len(q)))
			m, err = len(q), nil
		}
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// touches says whether [off, end) overlaps an unreadable range.
func (u *sectorReader) touches(off, end int64) bool {
	for _, b := range u.bad {
		if b.off < end && off < b.off+b.size {
			return true
		}
	}
	return false
}

// covers says whether [off, end) lies within one unreadable range.
func (u *sectorReader) covers(off, end int64) bool {
	for _, b := range u.bad {
		if b.off <= off && end <= b.off+b.size {
			return true
		}
	}
	return false
}

// add adds [off, off+size), not yet among them, to the unreadable ranges.
func (u *sectorReader) add(off, size int64) {
	u.n += size
	i, _ := slices.BinarySearchFunc(u.bad, off, func(b logDamage, off int64) int { return cmp.Compare(b.off, off) })
	u.bad = slices.Insert(u.bad, i, logDamage{off: off, size: size})
	// Merge with the neighbours it touches.
	if i+1 < len(u.bad) && off+size == u.bad[i+1].off {
		u.bad[i].size += u.bad[i+1].size
		u.bad = slices.Delete(u.bad, i+1, i+2)
	}
	if i > 0 && u.bad[i-1].off+u.bad[i-1].size == off {
		u.bad[i-1].size += u.bad[i].size
		u.bad = slices.Delete(u.bad, i, i+1)
	}
}

// report marks the scan's damage that holds unreadable sectors as such,
// and adds the unreadable sectors no damage holds (in the torn tail, or
// past it) as damage of their own: synced, since an I/O error is a disk
// fault, not a write cut off, whichever batch it is in.
func (u *sectorReader) report(scan *logScan) {
	if u == nil || len(u.bad) == 0 {
		return
	}
	for i := range scan.damage {
		if d := &scan.damage[i]; u.touches(d.off, d.off+d.size) {
			d.unreadable = true
		}
	}
	for _, b := range u.bad {
		// The parts of b outside every damaged region.
		off := b.off
		for _, d := range scan.damage {
			end := b.off + b.size
			if off >= end {
				break
			}
			if d.off+d.size <= off || d.off >= end {
				continue
			}
			if d.off > off {
				scan.damage = append(scan.damage, logDamage{off: off, size: d.off - off, synced: true, unreadable: true})
			}
			off = max(off, d.off+d.size)
		}
		if end := b.off + b.size; off < end {
			scan.damage = append(scan.damage, logDamage{off: off, size: end - off, synced: true, unreadable: true})
		}
	}
	slices.SortStableFunc(scan.damage, func(a, b logDamage) int { return cmp.Compare(a.off, b.off) })
}

// damaged adds the region [off, end), whose records are lost, to the
// scan's damage.
func (s *logScan) damaged(off, end int64, flags uint32) {
	s.add(logDamage{off: off, size: end - off, synced: flags&batchSynced != 0})
}

// add adds d to the scan's damage, merged with the last region if they
// touch (but for a copied record or an unverified batch, reported on their
// own): the merged region loses records if either did.
func (s *logScan) add(d logDamage) {
	if k := len(s.damage) - 1; k >= 0 && s.damage[k].off+s.damage[k].size == d.off &&
		d.copyOf == 0 && s.damage[k].copyOf == 0 && !d.unverified && !s.damage[k].unverified {
		s.damage[k].size = d.off + d.size - s.damage[k].off
		s.damage[k].synced = s.damage[k].synced && d.synced
		s.damage[k].framing = s.damage[k].framing && d.framing
		return
	}
	s.damage = append(s.damage, d)
}

// readLogV1 reads a version 1 log from just past its magic, as readLog
// did before batches: it stops without error at the first record that is
// incomplete or fails its checksum, taken for a torn tail.
func readLogV1(f *os.File, from int64, fn func(logRecord) error) (end int64, err error) {
	br := bufio.NewReaderSize(f, 1<<20)
	off := int64(len(logMagicV1))
	var head [8]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(br, head[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return off, nil
			}
			return off, err
		}
		n := binary.LittleEndian.Uint32(head[0:4])
		if n == 0 || n > maxRecord {
			// Zero: the reserved space past the last record. Too long: a
			// torn header.
			return off, nil
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		p := buf[:n]
		if _, err := io.ReadFull(br, p); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return off, nil
			}
			return off, err
		}
		if crc32.Checksum(p, crcTable) != binary.LittleEndian.Uint32(head[4:8]) {
			return off, nil
		}
		next := off + 8 + int64(n)
		if off >= from {
			rows, at, err := decodeRecord(p)
			if err != nil {
				return off, fmt.Errorf("offset %d: %w", off, err)
			}
			if err := fn(logRecord{rows: rows, at: at, end: next}); err != nil {
				return off, err
			}
		}
		off = next
	}
}
