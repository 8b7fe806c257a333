package store

import (
	"context"
	"fmt"
)

// BucketSpan reports whether one eval's samples are at more than one
// position, a position being a length and a depth as BucketSums keys them
// (the grid point where the task gave one, else the measured length and
// depth; lengths above 0 and depths from 0 only). It reads the samples
// alone, with no join, and stops at the second position it finds, so that
// a report of a row whose samples are all at one position, or at none
// (short samples measured against no window, the most common run), skips
// BucketSums, which joins every sample to its scores to sum buckets a
// single one of which gives no breakdown, and GridSums, which then has at
// most one cell. False means BucketSums has at most one key on either
// axis; true, that it may have more.
func (s *Store) BucketSpan(ctx context.Context, runID, evalName string) (bool, error) {
	if err := s.flush(ctx); err != nil { // this process's log holds rows not yet fed
		return false, fmt.Errorf("bucket span of %s/%s: %w", runID, evalName, err)
	}
	var n int
	err := s.db.QueryRowContext(ctx, `
WITH pos AS (
	SELECT `+samplePos+`
	FROM samples sa WHERE sa.run_id = $1 AND sa.eval_name = $2
)
SELECT COUNT(*) FROM (
	SELECT DISTINCT CASE WHEN len > 0 THEN len END, CASE WHEN dep >= 0 THEN dep END
	FROM pos WHERE len > 0 OR dep >= 0 LIMIT 2
) AS positions`, runID, evalName).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("bucket span of %s/%s: %w", runID, evalName, err)
	}
	return n > 1, nil
}
