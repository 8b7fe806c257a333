package store

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hayloft/hayloft/sdk"
)

// A record the database refuses (here a sample of an eval the journal does
// not have: a foreign key) would fail its feed's one transaction, and with
// it every feed after it and every Open. It is set aside in a file beside
// the log instead, said, and every other record is fed.
func TestRefusedRecordIsSetAside(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.db")
	run, logDir := refusedJournal(t, path)
	writeRefusedLog(t, logDir, run)
	var w warnings
	s, err := OpenWith(ctx, path, Options{Logger: w.logger()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	samples, err := s.Samples(ctx, run, "e")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, smp := range samples {
		ids = append(ids, smp.ID)
	}
	if !slices.Equal(ids, []string{"a", "c"}) {
		t.Errorf("samples fed %v, want a and c", ids)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	unfed := filepath.Join(logDir, "dead-7.log"+unfedSuffix)
	if !strings.Contains(w.String(), "set aside") || !strings.Contains(w.String(), unfed) || !strings.Contains(w.String(), "FOREIGN KEY") {
		t.Errorf("warned %q, want the record set aside in %s, and why", w.String(), unfed)
	}
	// The set-aside record is a log of its own, in the format replay reads.
	f, err := os.Open(unfed)
	if err != nil {
		t.Fatalf("no file of refused records: %v", err)
	}
	defer f.Close()
	var kept []string
	if _, err := readLog(f, 0, func(r logRecord) error {
		kept = append(kept, r.rows[0].args[2].(string))
		return nil
	}); err != nil || !slices.Equal(kept, []string{"b"}) {
		t.Errorf("set aside %v (%v), want b", kept, err)
	}
	if left, _ := filepath.Glob(filepath.Join(logDir, "*.log")); len(left) != 0 {
		t.Errorf("logs left after the replay: %v", left)
	}
	// Opened again, the journal replays nothing and sets nothing aside twice.
	var w2 warnings
	s, err = OpenWith(ctx, path, Options{Logger: w2.logger()})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	s.Close()
	if w2.String() != "" {
		t.Errorf("reopen warned %q", w2.String())
	}
}

// writeRefusedLog writes into logDir the log a dead process left (in the
// previous release's format) of three samples of run's eval "e": a, then b
// of an eval "nope" the journal lacks, then c.
func writeRefusedLog(t *testing.T, logDir, run string) {
	t.Helper()
	log := []byte(logMagicV1)
	for i, c := range []struct{ eval, id string }{{"e", "a"}, {"nope", "b"}, {"e", "c"}} {
		r, err := sampleRow(run, c.eval, &sdk.Sample{ID: c.id, Depth: -1}, SampleMeta{Index: i})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := encodeRecord([]row{r}, int64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, rec...)
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logDir, "dead-7.log"), log, 0o644); err != nil {
		t.Fatal(err)
	}
}

// refusedJournal makes the journal at path hold one run with the eval "e"
// and closes it; it returns the run and the journal's log directory.
func refusedJournal(t *testing.T, path string) (run, logDir string) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if run, err = s.BeginRun(ctx, RunInfo{ConfigPath: "q.hcl"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEval(ctx, run, EvalInfo{Name: "e", Task: "task.t", Model: "model.m", Scorers: []string{"exact"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return run, s.logDir
}
