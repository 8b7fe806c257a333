package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// The hot Put methods hand the writer rows instead of SQL, and the writer
// merges the rows of a whole batch into one INSERT per table (or a few, see
// nextChunk): SQLite then runs one statement for many rows, and the cost of
// a statement through database/sql and the driver (rebinding it to the
// transaction, converting its arguments, starting and resetting the VM) is
// paid per chunk instead of per row. A multi-row INSERT with an ON CONFLICT
// clause applies it to each row in turn, so the outcome is the one inserting
// the rows one by one in that order would have.

// maxVariables is SQLite's bound on the parameters of one statement
// (SQLITE_MAX_VARIABLE_NUMBER, 32766 by default since 3.32).
const maxVariables = 32766

// maxChunk caps the rows of one INSERT. A group commit rarely holds more rows
// of one table than there are concurrent callers; past a few dozen rows a
// longer statement saves little and costs more memory to keep prepared.
const maxChunk = 64

// A table is a table the writer inserts rows into.
type table struct {
	name     string
	columns  []string
	conflict string // the ON CONFLICT clause, if any
	// stamped: the last column is created_at, which the writer fills in
	// with the commit's time (or the row's at), so rows carry one argument
	// fewer.
	stamped bool
	// logID is the table's id in the log's records; 0 for tables written
	// to the database directly (see logTables).
	logID byte
}

// A row is one row of a table: its arguments in column order, less
// created_at for a stamped table.
type row struct {
	table *table
	args  []any
	at    string // created_at of a stamped row fed from the log; "" for the commit's time
}

// width is the number of arguments a row of t takes from its caller.
func (t *table) width() int {
	if t.stamped {
		return len(t.columns) - 1
	}
	return len(t.columns)
}

// maxRows is the largest chunk of t's rows one INSERT takes: a power of two
// (see nextChunk), at most maxChunk, within SQLite's parameter bound (and
// PostgreSQL's, 65535).
func (t *table) maxRows() int {
	n := min(maxChunk, maxVariables/len(t.columns))
	return 1 << (bits.Len(uint(n)) - 1)
}

// insertSQL is the INSERT of rows rows into t. Its parameters are plain '?':
// the driver asks SQLite the name of each parameter it binds, found by a
// linear scan for a named one such as $1, which made a 64-row INSERT into
// samples (1088 parameters) seven times slower.
func (t *table) insertSQL(rows int, numbered bool) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(t.name)
	b.WriteString(" (")
	b.WriteString(strings.Join(t.columns, ", "))
	b.WriteString(") VALUES ")
	n := 0
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		for j := range t.columns {
			if j > 0 {
				b.WriteString(", ")
			}
			if numbered { // PostgreSQL knows only $n
				n++
				b.WriteString("$" + strconv.Itoa(n))
			} else {
				b.WriteString("?")
			}
		}
		b.WriteString(")")
	}
	if t.conflict != "" {
		b.WriteString(" ")
		b.WriteString(t.conflict)
	}
	return b.String()
}

// nextChunk is the number of rows, out of n still to insert, that the next
// INSERT takes: max (a power of two) while that many are left, then the
// largest power of two not above n. A table thus needs at most
// log2(max)+1 prepared statements, and n rows at most n/max + log2(max)+1
// INSERTs.
func nextChunk(n, max int) int {
	if n >= max {
		return max
	}
	return 1 << (bits.Len(uint(n)) - 1)
}

// rowSets gathers the rows of a batch by table, each table's rows in the
// order they came. Tables are inserted in the order the writer first met
// them: none of them references another, so the order does not matter.
// The writer keeps one rowSets and reuses its buffers from batch to batch.
type rowSets struct {
	sets []rowSet
	err  error
}

type rowSet struct {
	table *table
	args  []any // every row's arguments, one row after another
	rows  int
}

func (rs *rowSets) add(r row, now string) {
	if len(r.args) != r.table.width() {
		// A bug in a Put method; inserting would shift every later row's
		// columns.
		rs.err = errors.Join(rs.err, fmt.Errorf("%s row has %d values, want %d", r.table.name, len(r.args), r.table.width()))
		return
	}
	i := 0
	for i < len(rs.sets) && rs.sets[i].table != r.table {
		i++
	}
	if i == len(rs.sets) {
		rs.sets = append(rs.sets, rowSet{table: r.table})
	}
	set := &rs.sets[i]
	set.args = append(set.args, r.args...)
	if r.table.stamped {
		if r.at != "" {
			set.args = append(set.args, r.at)
		} else {
			set.args = append(set.args, now)
		}
	}
	set.rows++
}

// insert runs the INSERTs of every row added since the last reset.
func (rs *rowSets) insert(ctx context.Context, tx *sql.Tx, stmts *insertStmts) error {
	if rs.err != nil {
		return rs.err
	}
	for _, set := range rs.sets {
		cols := len(set.table.columns)
		args := set.args
		for left := set.rows; left > 0; {
			n := fitBytes(args, cols, nextChunk(left, set.table.maxRows()))
			if err := stmts.exec(ctx, tx, set.table, n, args[:n*cols]); err != nil {
				return err
			}
			args, left = args[n*cols:], left-n
		}
	}
	return nil
}

// maxChunkBytes bounds the text and bytes one INSERT binds: the driver
// copies every bound value into SQLite's memory for the statement's run, so
// one INSERT of the answers to 64 long-context requests held a second copy
// of every request at once (some 30 MB at 128K tokens). A row longer than
// this goes in an INSERT of its own.
const maxChunkBytes = 1 << 20

// fitBytes halves n, a power of two, until the first n rows of args (cols
// values each) bind at most maxChunkBytes, or n is 1.
func fitBytes(args []any, cols, n int) int {
	for n > 1 && boundBytes(args[:n*cols]) > maxChunkBytes {
		n /= 2
	}
	return n
}

func boundBytes(args []any) int {
	size := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			size += len(v)
		case []byte:
			size += len(v)
		}
	}
	return size
}

// reset empties the sets, keeping their buffers but no reference to the
// rows' values.
func (rs *rowSets) reset() {
	for i := range rs.sets {
		clear(rs.sets[i].args)
		rs.sets[i].args, rs.sets[i].rows = rs.sets[i].args[:0], 0
	}
	rs.err = nil
}

// insertStmts are the writer's INSERTs, prepared on first use.
//
// On SQLite they are the driver's own statements on the writer's
// connection, run through sql.Conn.Raw: database/sql's Exec checks and
// converts every argument and rebinds the statement to the transaction for
// each INSERT, a tenth of the feed's CPU at 20,000 samples (BenchmarkFeed),
// and a batch's INSERTs need none of it: the writer alone uses the
// connection, and the rows hold driver values already (see driverValue).
// Elsewhere they are prepared on the pool (database/sql then keeps a copy
// per connection, and Tx.StmtContext reuses the writer connection's)
// rather than on the writer's connection, whose statements a transaction
// would prepare anew.
type insertStmts struct {
	db      *sql.DB
	dialect *dialect
	stmts   map[insertKey]*sql.Stmt
	// conn is the writer's connection: SQLite's INSERTs are raw's,
	// prepared on it; nv is their arguments' scratch space.
	conn *sql.Conn
	raw  map[insertKey]driver.Stmt
	nv   []driver.NamedValue
}

// exec inserts rows rows of t, whose values are args, in tx.
func (s *insertStmts) exec(ctx context.Context, tx *sql.Tx, t *table, rows int, args []any) error {
	if s.conn == nil {
		st, err := s.get(ctx, t, rows)
		if err != nil {
			return err
		}
		_, err = tx.StmtContext(ctx, st).ExecContext(ctx, args...)
		return err
	}
	return s.conn.Raw(func(dc any) error {
		key := insertKey{t, rows}
		st, ok := s.raw[key]
		if !ok {
			var err error
			if st, err = dc.(driver.ConnPrepareContext).PrepareContext(ctx, t.insertSQL(rows, s.dialect.numbered)); err != nil {
				return fmt.Errorf("prepare insert of %d %s rows: %w", rows, t.name, err)
			}
			if s.raw == nil {
				s.raw = make(map[insertKey]driver.Stmt)
			}
			s.raw[key] = st
		}
		nv := s.nv[:0]
		for i, a := range args {
			v, err := driverValue(a)
			if err != nil {
				return fmt.Errorf("insert into %s: row %d column %s: %w", t.name, i/len(t.columns), t.columns[i%len(t.columns)], err)
			}
			nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: v})
		}
		_, err := st.(driver.StmtExecContext).ExecContext(ctx, nv)
		clear(nv) // keep no row's values until the next batch
		s.nv = nv[:0]
		return err
	})
}

// driverValue is a row's value as database/sql would hand it to the
// driver: the rows hold driver values already, but for int.
func driverValue(a any) (driver.Value, error) {
	switch v := a.(type) {
	case nil, string, int64, float64, bool, []byte:
		return v, nil
	case int:
		return int64(v), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(a)
}

type insertKey struct {
	table *table
	rows  int
}

func (s *insertStmts) get(ctx context.Context, t *table, rows int) (*sql.Stmt, error) {
	key := insertKey{t, rows}
	if st, ok := s.stmts[key]; ok {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, t.insertSQL(rows, s.dialect.numbered))
	if err != nil {
		return nil, fmt.Errorf("prepare insert of %d %s rows: %w", rows, t.name, err)
	}
	if s.stmts == nil {
		s.stmts = make(map[insertKey]*sql.Stmt)
	}
	s.stmts[key] = st
	return st, nil
}

func (s *insertStmts) close() error {
	err := closeStmts(s.stmts)
	if len(s.raw) == 0 {
		return err
	}
	return errors.Join(err, s.conn.Raw(func(any) error {
		var errs []error
		for _, st := range s.raw {
			errs = append(errs, st.Close())
		}
		return errors.Join(errs...)
	}))
}
