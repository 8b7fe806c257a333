package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

func TestNextChunk(t *testing.T) {
	tests := []struct {
		n, max int
		want   []int
	}{
		{0, 64, nil},
		{1, 64, []int{1}},
		{3, 64, []int{2, 1}},
		{63, 64, []int{32, 16, 8, 4, 2, 1}},
		{64, 64, []int{64}},
		{65, 64, []int{64, 1}},
		{100, 64, []int{64, 32, 4}},
		{200, 64, []int{64, 64, 64, 8}},
		{7, 4, []int{4, 2, 1}},
		{9, 1, []int{1, 1, 1, 1, 1, 1, 1, 1, 1}},
	}
	for _, tt := range tests {
		var got []int
		for left := tt.n; left > 0; {
			k := nextChunk(left, tt.max)
			got = append(got, k)
			left -= k
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("chunks of %d rows, at most %d = %v, want %v", tt.n, tt.max, got, tt.want)
		}
	}
}

// An INSERT binds at most maxChunkBytes of text unless one row alone is
// longer: long-context requests go a few at a time, short rows 64 at once.
func TestFitBytes(t *testing.T) {
	long := strings.Repeat("x", maxChunkBytes/3+1) // three of them are over the bound
	rows := func(n int, text string) []any {
		var args []any
		for i := range n {
			args = append(args, i, text, []byte("b"))
		}
		return args
	}
	tests := []struct {
		name string
		args []any
		n    int
		want int
	}{
		{"short rows", rows(64, "short"), 64, 64},
		{"long rows", rows(64, long), 64, 2},
		{"one longer than the bound", rows(4, strings.Repeat("y", maxChunkBytes+1)), 4, 1},
		{"one row", rows(1, long), 1, 1},
		{"bytes count too", []any{1, "", make([]byte, maxChunkBytes), 2, "", []byte("b")}, 2, 1},
	}
	for _, tt := range tests {
		if got := fitBytes(tt.args, 3, tt.n); got != tt.want {
			t.Errorf("%s: fitBytes = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestTableMaxRows(t *testing.T) {
	tests := []struct {
		columns, want int
	}{
		{1, maxChunk},
		{9, maxChunk},
		{17, maxChunk},
		{511, maxChunk},   // 64 rows: 32704 parameters, just within the bound
		{512, 32},         // 64 rows would take 32768
		{1000, 32},        // 32000 parameters
		{1024, 16},        // 32 rows would take 32768
		{2000, 16},        // SQLite's most columns
		{maxVariables, 1}, // one row fills the statement
	}
	for _, tt := range tests {
		tab := &table{name: "t", columns: make([]string, tt.columns)}
		got := tab.maxRows()
		if got != tt.want {
			t.Errorf("%d columns: maxRows = %d, want %d", tt.columns, got, tt.want)
		}
		if got*tt.columns > maxVariables {
			t.Errorf("%d columns: %d rows take %d parameters, more than %d", tt.columns, got, got*tt.columns, maxVariables)
		}
	}
}

func TestInsertSQL(t *testing.T) {
	tab := &table{name: "t", columns: []string{"a", "b", "created_at"}, conflict: "ON CONFLICT (a) DO NOTHING", stamped: true}
	tests := []struct {
		rows     int
		numbered bool
		want     string
	}{
		{1, false, "INSERT INTO t (a, b, created_at) VALUES (?, ?, ?) ON CONFLICT (a) DO NOTHING"},
		{2, false, "INSERT INTO t (a, b, created_at) VALUES (?, ?, ?), (?, ?, ?) ON CONFLICT (a) DO NOTHING"},
		{2, true, "INSERT INTO t (a, b, created_at) VALUES ($1, $2, $3), ($4, $5, $6) ON CONFLICT (a) DO NOTHING"},
	}
	for _, tt := range tests {
		if got := tab.insertSQL(tt.rows, tt.numbered); got != tt.want {
			t.Errorf("insertSQL(%d, %v) = %q, want %q", tt.rows, tt.numbered, got, tt.want)
		}
	}
	if w := tab.width(); w != 2 {
		t.Errorf("width of a stamped 3-column table = %d, want 2", w)
	}
}

// Rows of a wide table go in chunks that keep each INSERT within SQLite's
// parameter bound, and land in their own columns.
func TestWideTableInsert(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	const cols = 1000 // 32 rows a statement: 32000 parameters
	wide := &table{name: "wide", stamped: true}
	for j := range cols - 1 {
		wide.columns = append(wide.columns, fmt.Sprintf("c%d", j))
	}
	wide.columns = append(wide.columns, "created_at")
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "CREATE TABLE wide ("+strings.Join(wide.columns, ", ")+")")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The bound is real: twice the chunk would not prepare.
	if _, err := s.db.PrepareContext(ctx, wide.insertSQL(2*wide.maxRows(), false)); err == nil || !strings.Contains(err.Error(), "too many SQL variables") {
		t.Fatalf("preparing %d rows of %d columns: %v, want too many SQL variables", 2*wide.maxRows(), cols, err)
	}

	const n = 70 // chunks of 32, 32, 4 and 2 rows
	rows := make([]row, n)
	for i := range rows {
		args := make([]any, wide.width())
		for j := range args {
			args[j] = i*cols + j
		}
		rows[i] = row{table: wide, args: args}
	}
	if err := s.writeRows(ctx, rows...); err != nil {
		t.Fatal(err)
	}
	got, err := s.db.QueryContext(ctx, "SELECT c0, c1, c998, created_at FROM wide ORDER BY c0")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	i := 0
	for ; got.Next(); i++ {
		var c0, c1, c998 int
		var created string
		if err := got.Scan(&c0, &c1, &c998, &created); err != nil {
			t.Fatal(err)
		}
		if c0 != i*cols || c1 != i*cols+1 || c998 != i*cols+998 {
			t.Errorf("row %d = %d, %d, %d", i, c0, c1, c998)
		}
		if at, err := parseTime(created); err != nil || time.Since(at) > time.Minute {
			t.Errorf("row %d: created_at %q: %v", i, created, err)
		}
	}
	if err := got.Err(); err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Errorf("%d rows, want %d", i, n)
	}
}

// A batch merges its ops' rows into multi-row INSERTs with each table's
// conflict rule applied row by row in arrival order and, when one op is bad,
// retries each op alone so that only the bad one fails.
func TestBatchMultiRow(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		bad  func(run string) row // nil: every op is good
		want string               // in the bad op's error
	}{
		{"all good", nil, ""},
		{"unknown eval", func(run string) row {
			r, _ := sampleRow(run, "missing", &sdk.Sample{ID: "x"}, SampleMeta{})
			return r
		}, "FOREIGN KEY"},
		{"row of the wrong width", func(string) row {
			return row{table: scoresTable, args: []any{"too", "few"}}
		}, "scores row has 2 values, want 8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t)
			run, err := s.BeginRun(ctx, RunInfo{})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.PutEval(ctx, run, EvalInfo{Name: "e"}); err != nil {
				t.Fatal(err)
			}
			sample := func(eval string, seq int) row {
				r, err := sampleRow(run, eval, &sdk.Sample{ID: "s1", Question: fmt.Sprint(seq)}, SampleMeta{Index: seq})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			score := func(v float64) row {
				r, err := scoreRow(run, "e", "s1", "exact", &sdk.ScoreResponse{Value: v})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			response := func(text string) row {
				return row{table: responsesTable, args: []any{"k", "{}", "{}", text, "stop", 1, 2, 3.0, nil}}
			}
			op := func(rows ...row) *writeOp { return &writeOp{rows: rows, done: make(chan error, 1)} }
			batch := []*writeOp{
				op(sample("e", 1), score(1)),
				op(appendAttempts([]row{response("first")}, "k", []sdk.Attempt{{Status: 503, Error: "busy"}, {Status: 200}})...),
				op(response("second")),          // the first response under a key stays
				op(sample("e", 2), score(0.25)), // a later sample or score replaces
				{exec: func(ctx context.Context, tx *sql.Tx) error {
					_, err := tx.ExecContext(ctx, `INSERT INTO evals (run_id, name, task, model, retriever, scorers)
						VALUES ($1, 'e2', '', '', '', '[]')`, run)
					return err
				}, done: make(chan error, 1)},
				op(sample("e2", 1)),
			}
			if tt.bad == nil {
				// The good ops go in one transaction, the conflicts above
				// playing out within multi-row INSERTs. (Rolled back: the
				// writer's turn is next.)
				tx, err := s.wconn.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.apply(ctx, tx, batch, &rowSets{}, formatTime(time.Now())); err != nil {
					t.Errorf("batch in one transaction: %v", err)
				}
				var text string
				var seq int
				if err := tx.QueryRowContext(ctx, `SELECT text, (SELECT seq FROM samples WHERE eval_name = 'e')
					FROM responses WHERE key = 'k'`).Scan(&text, &seq); err != nil || text != "first" || seq != 2 {
					t.Errorf("within the batch: response %q, sample seq %d, %v; want first, 2", text, seq, err)
				}
				tx.Rollback()
			}
			badAt := -1
			if tt.bad != nil {
				badAt = 2
				batch = slices.Insert(batch, badAt, op(tt.bad(run)))
			}
			// The writer is idle between writes; run the batch in its stead.
			s.commit(ctx, batch, &rowSets{})
			for i, op := range batch {
				err := <-op.done
				switch {
				case i == badAt && (err == nil || !strings.Contains(err.Error(), tt.want)):
					t.Errorf("bad op: err = %v, want one about %q", err, tt.want)
				case i != badAt && err != nil:
					t.Errorf("op %d: %v", i, err)
				}
			}

			if got, _, err := s.LookupResponse(ctx, "k"); err != nil || got.Response.Text != "first" {
				t.Errorf("response = %+v, %v; want the first", got, err)
			}
			if got, err := s.Attempts(ctx, "k"); err != nil || len(got) != 2 || got[0].Status != "http 503" || got[1].Attempt != 2 {
				t.Errorf("attempts = %+v, %v", got, err)
			}
			if got, err := s.Samples(ctx, run, "e"); err != nil || len(got) != 1 || got[0].Index != 2 || got[0].Question != "2" {
				t.Errorf("samples of e = %+v, %v; want s1 as put last", got, err)
			}
			if got, err := s.Scores(ctx, run, "e", "exact"); err != nil || len(got) != 1 || got[0].Score.Value != 0.25 {
				t.Errorf("scores = %+v, %v; want the last", got, err)
			}
			if got, err := s.Samples(ctx, run, "e2"); err != nil || len(got) != 1 {
				t.Errorf("samples of e2 = %+v, %v", got, err)
			}
		})
	}
}

// jsonStrings and jsonInts write what encoding/json does: the journal's
// targets and chunks columns do not change.
func TestJSONArrays(t *testing.T) {
	for _, ss := range [][]string{
		nil, {}, {""}, {"42"}, {"a", "b c"},
		{`"quoted" \ back`, "tab\tnew\nline", "<b>&amp;</b>", "\u2028\u2029", "caf\xc3\xa9 \xff bad", "\x00\x1f"},
	} {
		want, err := json.Marshal(nonNil(ss))
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonStrings(ss); got != string(want) {
			t.Errorf("jsonStrings(%q) = %s, want %s", ss, got, want)
		}
	}
	for _, xs := range [][]int{nil, {}, {0}, {3, -1, 1 << 40}} {
		want, err := json.Marshal(nonNil(xs))
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonInts(xs); got != string(want) {
			t.Errorf("jsonInts(%v) = %s, want %s", xs, got, want)
		}
	}
}

// jsonObject writes what encoding/json does, or fails where it fails: a
// score's details and a sample's metadata do not change.
func TestJSONObject(t *testing.T) {
	many := map[string]any{}
	for i := range 20 {
		many[fmt.Sprintf("k%02d", 19-i)] = float64(i) / 3
	}
	for _, m := range []map[string]any{
		nil,
		{},
		{"match": true, "target": float64(0)},
		{"b": false, "a": nil, "c": "x", "ä": "é", "A": 1, "z": int64(-5), "y": int32(7), "x": uint64(1 << 63)},
		{"f": 0.1, "g": 1e-7, "h": 1e21, "i": -0.0, "j": 123456789.125, "k": 1e20, "l": 5e-324},
		{"<key>&": "<b>&amp;</b>", "tab\t": "line\n\u2028", "bad\xff": "caf\xc3\xa9 \xff"},
		many,
		{"nested": map[string]any{"b": 1, "a": []any{1, "x"}}, "top": 1.5}, // through json.Marshal
		{"f32": float32(0.1)},
		{"n": json.Number("12")},
		{"list": []float64{1, 2}},
	} {
		want, wantErr := json.Marshal(m)
		if m == nil {
			want = []byte("{}")
		}
		got, err := jsonObject(m)
		if err != nil || wantErr != nil || got != string(want) {
			t.Errorf("jsonObject(%v) = %s, %v; want %s, %v", m, got, err, want, wantErr)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := jsonObject(map[string]any{"v": bad}); err == nil {
			t.Errorf("jsonObject of %v: no error", bad)
		}
	}
}
