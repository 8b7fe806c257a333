package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"unsafe"
)

// The journal's durability lives in an append-only log, one file per
// process at a time (see log.go for who writes and feeds it). This file is
// the log's format: a header, then records, each
//
//	length  uint32 LE  bytes of payload
//	crc     uint32 LE  CRC-32C of payload
//	payload            time (int64 LE, Unix ns) then rows
//
// and each row is its table's id, the number of values, then the values
// (a type byte and the value; NULL is a type byte alone). A row carries
// every column its table has in this build (samples' grid point,
// responses' cached_tokens), so the feed writes what a direct write would. A record is one Put call's rows, which
// count together or not at all. A record cut short by kill -9 (a torn
// tail) fails its length or checksum and ends the log: it was never
// acknowledged, because a Put returns only after its record is synced.
// The file is zeroed ahead of its records (segment.reserve), so a length of
// zero also ends the log.

// logMagic opens every log file; the digit is the format's version.
const logMagic = "HAYLOG1\n"

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

// logRecord is one record read back from a log file, and the offset just
// past it.
type logRecord struct {
	rows []row
	at   int64
	end  int64
}

// readLog reads the records of the log file f that start at or after
// offset from (0: the first), calling fn for each in order. It stops
// without error at the first record that is incomplete or fails its
// checksum (a torn tail), and returns the offset where the valid log ends.
// A record that passes its checksum but does not decode is an error naming
// its offset.
func readLog(f *os.File, from int64, fn func(logRecord) error) (end int64, err error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	br := bufio.NewReaderSize(f, 1<<20)
	magic := make([]byte, len(logMagic))
	if _, err := io.ReadFull(br, magic); err != nil {
		// A file cut inside its header was created and killed before any
		// record was synced.
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil
		}
		return 0, err
	}
	if string(magic) != logMagic {
		return 0, fmt.Errorf("not a hayloft journal log (header %q)", magic)
	}
	off := int64(len(logMagic))
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
