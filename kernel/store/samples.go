package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/jsonstr"
)

var (
	// Putting a sample or a score again replaces it.
	samplesTable = &table{
		name: "samples",
		columns: []string{"run_id", "eval_name", "sample_id", "seq", "question", "targets", "length_tokens", "tokenizer",
			"depth", "language", "subtask", "metadata", "retriever", "truncated", "sent_tokens", "chunks", "request_key", "grid_length", "grid_depth"},
		conflict: `ON CONFLICT (run_id, eval_name, sample_id) DO UPDATE SET seq = excluded.seq, question = excluded.question,
				targets = excluded.targets, length_tokens = excluded.length_tokens, tokenizer = excluded.tokenizer,
				depth = excluded.depth, language = excluded.language, subtask = excluded.subtask,
				metadata = excluded.metadata, retriever = excluded.retriever, truncated = excluded.truncated,
				sent_tokens = excluded.sent_tokens, chunks = excluded.chunks, request_key = excluded.request_key,
				grid_length = excluded.grid_length, grid_depth = excluded.grid_depth`,
	}
	scoresTable = &table{
		name:    "scores",
		columns: []string{"run_id", "eval_name", "sample_id", "scorer", "value", "invalid", "details", "stats", "created_at"},
		conflict: `ON CONFLICT (run_id, eval_name, scorer, sample_id) DO UPDATE SET value = excluded.value,
				invalid = excluded.invalid, details = excluded.details, stats = excluded.stats, created_at = excluded.created_at`,
		stamped: true,
	}
)

// SampleMeta is what the kernel learned about a sample on its way to the
// model, beyond the sample itself.
type SampleMeta struct {
	Index      int    // position in the task's stream; scores are returned in this order
	Retriever  string // the retriever that replaced the context; empty for full context
	Truncated  bool   // the context was cut to fit the model's window
	SentTokens int    // prompt tokens sent: the kernel's count when it fits a window, else the server's
	Chunks     []int  // ids of the chunks the retriever kept, in the order sent
	RequestKey string // the response cache key of the sample's request
}

// SampleRecord is a journaled sample: the fields reports bucket by. The
// context is not journaled (it is in the request the response was cached
// with, and tasks regenerate it deterministically).
type SampleRecord struct {
	ID       string
	Question string
	Targets  []string
	Length   sdk.Length
	Depth    float64
	Grid     *sdk.GridPoint // as the task asked for it; nil when it gave none
	Language string
	Subtask  string
	Metadata map[string]any
	SampleMeta
}

// PutSample journals a sample of an eval. The eval must have been put first.
// Putting the same sample twice replaces it.
func (s *Store) PutSample(ctx context.Context, runID, evalName string, smp *sdk.Sample, meta SampleMeta) error {
	return s.PutResult(ctx, runID, evalName, smp, meta, nil)
}

// NamedScore is one scorer's score of a sample.
type NamedScore struct {
	Scorer string
	Score  *sdk.ScoreResponse
	// DetailsJSON, when set and Score.Details is nil, is the details as
	// the scorer's plugin encoded them (a JSON object, json.Marshal's
	// bytes): journaled as they are, instead of decoded into a map only
	// to be encoded again.
	DetailsJSON []byte
}

// PutResult journals a sample and its scores in one transaction: one write
// per finished sample keeps the journal off the critical path at thousands
// of samples per second. The eval must have been put first.
func (s *Store) PutResult(ctx context.Context, runID, evalName string, smp *sdk.Sample, meta SampleMeta, scores []NamedScore) error {
	sample, err := sampleRow(runID, evalName, smp, meta)
	if err != nil {
		return err
	}
	rows := make([]row, 1+len(scores))
	rows[0] = sample
	for i, sc := range scores {
		if rows[1+i], err = scoreRowJSON(runID, evalName, smp.ID, sc.Scorer, sc.Score, sc.DetailsJSON); err != nil {
			return err
		}
	}
	if err := s.evals.check(ctx, s.db, runID, evalName); err != nil {
		return fmt.Errorf("put sample %s/%s/%s: %w", runID, evalName, smp.ID, err)
	}
	if err := s.logRows(ctx, rows...); err != nil {
		return fmt.Errorf("put sample %s/%s/%s: %w", runID, evalName, smp.ID, err)
	}
	return nil
}

func sampleRow(runID, evalName string, smp *sdk.Sample, meta SampleMeta) (row, error) {
	if smp == nil {
		return row{}, fmt.Errorf("put sample %s/%s: nil sample", runID, evalName)
	}
	if math.IsNaN(smp.Depth) {
		return row{}, fmt.Errorf("put sample %s/%s/%s: depth is NaN; use a negative depth when it does not apply", runID, evalName, smp.ID)
	}
	metadata, err := jsonObject(smp.Metadata)
	if err != nil {
		return row{}, fmt.Errorf("put sample %s/%s/%s: metadata: %w", runID, evalName, smp.ID, err)
	}
	var gridLength, gridDepth any // NULL without a grid point
	if g := smp.Grid; g != nil {
		if math.IsNaN(g.Depth) {
			return row{}, fmt.Errorf("put sample %s/%s/%s: grid depth is NaN; use a negative depth when it does not apply", runID, evalName, smp.ID)
		}
		gridLength, gridDepth = g.Length, g.Depth
	}
	return row{table: samplesTable, args: []any{runID, evalName, smp.ID, meta.Index, smp.Question, jsonStrings(smp.Targets),
		smp.Length.Tokens, smp.Length.Tokenizer, smp.Depth, smp.Language, smp.Subtask, metadata,
		meta.Retriever, meta.Truncated, meta.SentTokens, jsonInts(meta.Chunks), meta.RequestKey, gridLength, gridDepth}}, nil
}

// jsonObject is json.Marshal(m), "{}" for nil, as a string. The flat
// objects scorers and tasks mostly give (values nil, bool, string, float64
// or an integer) are written without encoding/json's reflection and its
// sort of reflect.Values, which cost a score's row more than the rest of
// it (750 ns against 1.5-2.2 µs for {"match":true,"target":0}); any other
// value goes through json.Marshal.
func jsonObject(m map[string]any) (string, error) {
	if m == nil {
		return "{}", nil
	}
	if b, ok := appendFlatObject(make([]byte, 0, 64), m); ok {
		return string(b), nil
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// appendFlatObject appends json.Marshal(m), keys in byte order as it sorts
// them; ok is false for a value it does not write the same way.
func appendFlatObject(b []byte, m map[string]any) ([]byte, bool) {
	var buf [8]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonstr.AppendQuoted(b, k), ':')
		ok := true
		switch v := m[k].(type) {
		case nil:
			b = append(b, "null"...)
		case bool:
			b = strconv.AppendBool(b, v)
		case string:
			b = jsonstr.AppendQuoted(b, v)
		case float64:
			b, ok = jsonstr.AppendFloat(b, v)
		case int:
			b = strconv.AppendInt(b, int64(v), 10)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case int32:
			b = strconv.AppendInt(b, int64(v), 10)
		case uint64:
			b = strconv.AppendUint(b, v, 10)
		default: // float32's shortest form, nesting, Marshalers: json.Marshal's
			ok = false
		}
		if !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// jsonStrings is json.Marshal(nonNil(ss)), and jsonInts that of xs,
// without encoding/json's reflection: every sample journals both.
func jsonStrings(ss []string) string {
	if len(ss) == 0 {
		return "[]"
	}
	n := 1 + len(ss)
	for _, s := range ss {
		n += jsonstr.QuotedLen(s)
	}
	b := append(make([]byte, 0, n), '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.AppendQuoted(b, s)
	}
	return string(append(b, ']'))
}

func jsonInts(xs []int) string {
	if len(xs) == 0 {
		return "[]"
	}
	b := append(make([]byte, 0, 4*len(xs)+2), '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return string(append(b, ']'))
}

// Samples lists the journaled samples of one eval of a run, in stream order.
func (s *Store) Samples(ctx context.Context, runID, evalName string) ([]*SampleRecord, error) {
	if err := s.flush(ctx); err != nil {
		return nil, fmt.Errorf("samples of %s/%s: %w", runID, evalName, err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT sample_id, seq, question, targets, length_tokens, tokenizer, depth,
			language, subtask, metadata, retriever, truncated, sent_tokens, chunks, request_key, grid_length, grid_depth
		FROM samples WHERE run_id = $1 AND eval_name = $2 ORDER BY seq, sample_id`, runID, evalName)
	if err != nil {
		return nil, fmt.Errorf("samples of %s/%s: %w", runID, evalName, err)
	}
	defer rows.Close()
	var out []*SampleRecord
	for rows.Next() {
		var (
			r                         SampleRecord
			targets, metadata, chunks string
			gridLength                sql.NullInt64
			gridDepth                 sql.NullFloat64
		)
		if err := rows.Scan(&r.ID, &r.Index, &r.Question, &targets, &r.Length.Tokens, &r.Length.Tokenizer, &r.Depth,
			&r.Language, &r.Subtask, &metadata, &r.Retriever, &r.Truncated, &r.SentTokens, &chunks, &r.RequestKey, &gridLength, &gridDepth); err != nil {
			return nil, fmt.Errorf("samples of %s/%s: %w", runID, evalName, err)
		}
		if gridLength.Valid || gridDepth.Valid {
			r.Grid = &sdk.GridPoint{Length: int(gridLength.Int64), Depth: gridDepth.Float64}
		}
		for _, f := range []struct {
			name string
			text string
			into any
		}{{"targets", targets, &r.Targets}, {"metadata", metadata, &r.Metadata}, {"chunks", chunks, &r.Chunks}} {
			if f.text == "{}" || f.text == "[]" {
				continue // leave nil, as it was put
			}
			if err := json.Unmarshal([]byte(f.text), f.into); err != nil {
				return nil, fmt.Errorf("samples of %s/%s: sample %s: %s: %w", runID, evalName, r.ID, f.name, err)
			}
		}
		out = append(out, &r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("samples of %s/%s: %w", runID, evalName, err)
	}
	return out, nil
}

// SampleScore is one sample's score under one scorer.
type SampleScore struct {
	SampleID string
	Score    *sdk.ScoreResponse
}

// PutScore journals a sample's score. The eval must have been put first; the
// sample need not have been. Putting the same score twice replaces it.
func (s *Store) PutScore(ctx context.Context, runID, evalName, sampleID, scorer string, sc *sdk.ScoreResponse) error {
	r, err := scoreRow(runID, evalName, sampleID, scorer, sc)
	if err != nil {
		return err
	}
	if err := s.evals.check(ctx, s.db, runID, evalName); err != nil {
		return fmt.Errorf("put score %s/%s/%s/%s: %w", runID, evalName, sampleID, scorer, err)
	}
	if err := s.logRows(ctx, r); err != nil {
		return fmt.Errorf("put score %s/%s/%s/%s: %w", runID, evalName, sampleID, scorer, err)
	}
	return nil
}

func scoreRow(runID, evalName, sampleID, scorer string, sc *sdk.ScoreResponse) (row, error) {
	return scoreRowJSON(runID, evalName, sampleID, scorer, sc, nil)
}

// scoreRowJSON is scoreRow with the details already encoded (NamedScore's
// DetailsJSON), used when sc has none of its own.
func scoreRowJSON(runID, evalName, sampleID, scorer string, sc *sdk.ScoreResponse, detailsJSON []byte) (row, error) {
	if sc == nil {
		return row{}, fmt.Errorf("put score %s/%s/%s/%s: nil score", runID, evalName, sampleID, scorer)
	}
	value := sc.Value
	if math.IsNaN(value) {
		// SQLite stores NaN as NULL; say what is wrong instead of failing on
		// a constraint. An invalid score's value is not used, so keep 0.
		if !sc.Invalid {
			return row{}, fmt.Errorf("put score %s/%s/%s/%s: value is NaN; a scorer marks an unusable prediction Invalid", runID, evalName, sampleID, scorer)
		}
		value = 0
	}
	details := string(detailsJSON)
	if sc.Details != nil || len(detailsJSON) == 0 {
		var err error
		if details, err = jsonObject(sc.Details); err != nil {
			return row{}, fmt.Errorf("put score %s/%s/%s/%s: details: %w", runID, evalName, sampleID, scorer, err)
		}
	}
	stats := []byte("[]")
	if len(sc.Stats) > 0 {
		var err error
		if stats, err = json.Marshal(sc.Stats); err != nil {
			return row{}, fmt.Errorf("put score %s/%s/%s/%s: stats: %w", runID, evalName, sampleID, scorer, err)
		}
	}
	return row{table: scoresTable, args: []any{runID, evalName, sampleID, scorer, value, sc.Invalid, details, string(stats)}}, nil
}

// Scores returns every score one scorer gave in one eval of a run, in the
// samples' stream order (SampleMeta.Index) so aggregation is deterministic;
// scores of samples never put come last, by sample ID.
func (s *Store) Scores(ctx context.Context, runID, evalName, scorer string) ([]SampleScore, error) {
	if err := s.flush(ctx); err != nil {
		return nil, fmt.Errorf("scores of %s/%s/%s: %w", runID, evalName, scorer, err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT sc.sample_id, sc.value, sc.invalid, sc.details, sc.stats
		FROM scores sc LEFT JOIN samples sa
			ON sa.run_id = sc.run_id AND sa.eval_name = sc.eval_name AND sa.sample_id = sc.sample_id
		WHERE sc.run_id = $1 AND sc.eval_name = $2 AND sc.scorer = $3
		ORDER BY sa.seq IS NULL, sa.seq, sc.sample_id`, runID, evalName, scorer)
	if err != nil {
		return nil, fmt.Errorf("scores of %s/%s/%s: %w", runID, evalName, scorer, err)
	}
	defer rows.Close()
	var out []SampleScore
	for rows.Next() {
		var (
			id             string
			sc             sdk.ScoreResponse
			details, stats string
		)
		if err := rows.Scan(&id, &sc.Value, &sc.Invalid, &details, &stats); err != nil {
			return nil, fmt.Errorf("scores of %s/%s/%s: %w", runID, evalName, scorer, err)
		}
		if details != "{}" {
			if err := json.Unmarshal([]byte(details), &sc.Details); err != nil {
				return nil, fmt.Errorf("scores of %s/%s/%s: sample %s: details: %w", runID, evalName, scorer, id, err)
			}
		}
		if stats != "[]" {
			if err := json.Unmarshal([]byte(stats), &sc.Stats); err != nil {
				return nil, fmt.Errorf("scores of %s/%s/%s: sample %s: stats: %w", runID, evalName, scorer, id, err)
			}
		}
		out = append(out, SampleScore{SampleID: id, Score: &sc})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("scores of %s/%s/%s: %w", runID, evalName, scorer, err)
	}
	return out, nil
}

// BucketSum is one scorer's scores over the samples at one length or one
// depth of an eval: what a length × depth breakdown reads.
type BucketSum struct {
	Depth   bool    // Key is a depth (0..1), else a length in tokens
	Key     float64 // as journaled, unrounded
	Scorer  string
	Samples int     // samples with a score by Scorer
	Valid   int     // of those, scores not marked invalid
	Sum     float64 // of the valid scores' values
}

// bucketSums groups scores by their sample's position: the grid point the
// task asked for when it gave one (grid_length is then never NULL), else
// the measured length and depth. Lengths of 0 and negative depths are on no
// axis.
const bucketSums = bucketPos + `
SELECT 0, len, scorer, COUNT(*), SUM(CASE WHEN invalid THEN 0 ELSE 1 END), SUM(CASE WHEN invalid THEN 0 ELSE value END)
	FROM pos WHERE len > 0 GROUP BY len, scorer
UNION ALL
SELECT 1, dep, scorer, COUNT(*), SUM(CASE WHEN invalid THEN 0 ELSE 1 END), SUM(CASE WHEN invalid THEN 0 ELSE value END)
	FROM pos WHERE dep >= 0 GROUP BY dep, scorer`

// samplePos is a sample's (sa) position, len and dep: the grid point the
// task asked for when it gave one, else the measured length and depth.
const samplePos = `CASE WHEN sa.grid_length IS NOT NULL THEN sa.grid_length ELSE sa.length_tokens END AS len,
		CASE WHEN sa.grid_length IS NOT NULL THEN sa.grid_depth ELSE sa.depth END AS dep`

// bucketPos is the position of every scored sample of one eval, for
// bucketSums and gridSums.
const bucketPos = `
WITH pos AS (
	SELECT ` + samplePos + `,
		sc.scorer, sc.invalid, sc.value
	FROM samples sa JOIN scores sc
		ON sc.run_id = sa.run_id AND sc.eval_name = sa.eval_name AND sc.sample_id = sa.sample_id
	WHERE sa.run_id = $1 AND sa.eval_name = $2
)`

// gridSums groups the same scores by length and depth together: the cells
// of a length × depth heatmap. Samples off either axis are in no cell.
const gridSums = bucketPos + `
SELECT len, dep, scorer, COUNT(*), SUM(CASE WHEN invalid THEN 0 ELSE 1 END), SUM(CASE WHEN invalid THEN 0 ELSE value END)
	FROM pos WHERE len > 0 AND dep >= 0 GROUP BY len, dep, scorer`

// GridSum is one scorer's scores over the samples at one length and depth
// of an eval: a cell of a length × depth heatmap.
type GridSum struct {
	Length  int     // tokens
	Depth   float64 // 0..1, as journaled, unrounded
	Scorer  string
	Samples int     // samples with a score by Scorer
	Valid   int     // of those, scores not marked invalid
	Sum     float64 // of the valid scores' values
}

// GridSums sums one eval's scores by length and depth together, in SQL, as
// BucketSums does by each alone.
func (s *Store) GridSums(ctx context.Context, runID, evalName string) ([]GridSum, error) {
	if err := s.flush(ctx); err != nil { // this process's log holds rows not yet fed
		return nil, fmt.Errorf("grid sums of %s/%s: %w", runID, evalName, err)
	}
	rows, err := s.db.QueryContext(ctx, gridSums, runID, evalName)
	if err != nil {
		return nil, fmt.Errorf("grid sums of %s/%s: %w", runID, evalName, err)
	}
	defer rows.Close()
	var out []GridSum
	for rows.Next() {
		var g GridSum
		if err := rows.Scan(&g.Length, &g.Depth, &g.Scorer, &g.Samples, &g.Valid, &g.Sum); err != nil {
			return nil, fmt.Errorf("grid sums of %s/%s: %w", runID, evalName, err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("grid sums of %s/%s: %w", runID, evalName, err)
	}
	return out, nil
}

// BucketSums sums one eval's scores by length and by depth, in SQL: a
// breakdown of a run of any size reads a few rows per bucket.
func (s *Store) BucketSums(ctx context.Context, runID, evalName string) ([]BucketSum, error) {
	if err := s.flush(ctx); err != nil {
		return nil, fmt.Errorf("bucket sums of %s/%s: %w", runID, evalName, err)
	}
	rows, err := s.db.QueryContext(ctx, bucketSums, runID, evalName)
	if err != nil {
		return nil, fmt.Errorf("bucket sums of %s/%s: %w", runID, evalName, err)
	}
	defer rows.Close()
	var out []BucketSum
	for rows.Next() {
		var b BucketSum
		if err := rows.Scan(&b.Depth, &b.Key, &b.Scorer, &b.Samples, &b.Valid, &b.Sum); err != nil {
			return nil, fmt.Errorf("bucket sums of %s/%s: %w", runID, evalName, err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("bucket sums of %s/%s: %w", runID, evalName, err)
	}
	return out, nil
}
