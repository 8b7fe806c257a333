package store

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hayloft/hayloft/sdk"
)

// The runner journals responses and scores from many goroutines at about
// 2,000 samples/s; these measure the store at that shape: 32 concurrent
// writers per core, each blocked until its row is committed.

// benchKeyed is req keyed the way the benchmarks before the Keyer measured
// the store: no hashing (the key is the runner's cost), but the encoding of
// the journaled request, which PutResponse did itself then.
func benchKeyed(i int64, req *sdk.GenerateRequest) Keyed {
	return Keyed{Key: fmt.Sprintf("%064x", i), request: journalForm(req.Messages, req.Params)}
}

func BenchmarkPutResponse(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	k := mustKeyer(b, testIdentity())
	filler := strings.Repeat("Light is propagated from luminous bodies in time. ", 80) // ~4 KB prompt
	var n atomic.Int64
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			req := &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: fmt.Sprintf("%s\n\nQuestion %d?", filler, i)}}}
			resp := &sdk.GenerateResponse{Text: "The answer is 42.", FinishReason: "stop", Usage: sdk.Usage{PromptTokens: 1000, CompletionTokens: 6}}
			if err := s.PutResponse(ctx, k, benchKeyed(i, req), resp, 800*time.Millisecond); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "responses/s")
}

// One writer at a time: the latency of a commit with nothing to share it.
// The gap to BenchmarkPutResponse is what group commit buys.
func BenchmarkPutResponseSerial(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	k := mustKeyer(b, testIdentity())
	filler := strings.Repeat("Light is propagated from luminous bodies in time. ", 80)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		req := &sdk.GenerateRequest{Messages: []sdk.Message{{Role: "user", Content: fmt.Sprintf("%s\n\nQuestion %d?", filler, i)}}}
		resp := &sdk.GenerateResponse{Text: "The answer is 42.", FinishReason: "stop", Usage: sdk.Usage{PromptTokens: 1000, CompletionTokens: 6}}
		if err := s.PutResponse(ctx, k, benchKeyed(int64(i), req), resp, time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutScore(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "bench.hcl"})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.PutEval(ctx, run, EvalInfo{Name: "e", Scorers: []string{"rougel"}}); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			sc := &sdk.ScoreResponse{Value: 0.5, Details: map[string]any{"p": 0.4, "r": 0.6}, Stats: []float64{3, 4, 5}}
			if err := s.PutScore(ctx, run, "e", fmt.Sprintf("s%d", i), "rougel", sc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "scores/s")
}

func BenchmarkLookupResponse(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	k := mustKeyer(b, testIdentity())
	keys := make([]string, 1000)
	for i := range keys {
		r := mustKeyed(b, k, testRequest(i))
		keys[i] = r.Key
		if err := s.PutResponse(ctx, k, r, &sdk.GenerateResponse{Text: "x"}, time.Second); err != nil {
			b.Fatal(err)
		}
	}
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok, err := s.LookupResponse(ctx, keys[n.Add(1)%int64(len(keys))]); err != nil || !ok {
				b.Fatalf("lookup: ok=%v err=%v", ok, err)
			}
		}
	})
}

// BenchmarkSampleJournal journals samples the way the runner does: 64
// goroutines, each sample a PutResponse (one response, one attempt) followed
// by a PutResult (one sample, one score), every call blocking until its group
// commit is done. cpu-µs/sample is the process's user+system CPU per sample,
// all goroutines included, which is what the journal costs a run.
func BenchmarkSampleJournal(b *testing.B) { benchSampleJournal(b, 64, SyncBatch) }

// BenchmarkSampleJournal4 is the shape of a real pipeline, where most
// samples are at the model or a scorer and few wait on the journal at once.
func BenchmarkSampleJournal4(b *testing.B) { benchSampleJournal(b, 4, SyncBatch) }

// The same without an fsync per group commit (journal_sync = "os").
func BenchmarkSampleJournalSyncOS(b *testing.B)  { benchSampleJournal(b, 64, SyncOS) }
func BenchmarkSampleJournal4SyncOS(b *testing.B) { benchSampleJournal(b, 4, SyncOS) }

func benchSampleJournal(b *testing.B, workers int, mode Sync) {
	ctx := context.Background()
	s, run := benchStore(ctx, b, Options{Sync: mode})
	k := mustKeyer(b, testIdentity())
	var next atomic.Int64
	one := func(i int64) error {
		req := &sdk.GenerateRequest{
			Messages: []sdk.Message{
				{Role: "system", Content: "Answer with the number only."},
				{Role: "user", Content: fmt.Sprintf("The magic number is %d. Some filler text follows the needle here. What is the magic number?", i)},
			},
			Params: sdk.GenerationParams{MaxTokens: 32},
		}
		resp := &sdk.GenerateResponse{Text: "The answer is 42.", FinishReason: "stop",
			Usage:    sdk.Usage{PromptTokens: 60, CompletionTokens: 6},
			Attempts: []sdk.Attempt{{Status: 200, LatencyMS: 12.5}}}
		r := benchKeyed(i, req)
		key := r.Key
		if err := s.PutResponse(ctx, k, r, resp, 12*time.Millisecond); err != nil {
			return err
		}
		smp := &sdk.Sample{ID: fmt.Sprintf("s%d", i), Question: "What is the magic number?", Targets: []string{"42"},
			Length: sdk.Length{Tokens: 1000, Tokenizer: "cl100k_base"}, Depth: 0.5, Language: "en",
			Metadata: map[string]any{"needle": "The magic number is 42."}}
		meta := SampleMeta{Index: int(i), SentTokens: 1000, RequestKey: key}
		scores := []NamedScore{{Scorer: "contains", Score: &sdk.ScoreResponse{Value: 1}}}
		return s.PutResult(ctx, run, "e", smp, meta, scores)
	}
	b.ReportAllocs()
	before := cpuTime(b)
	b.ResetTimer()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				if err := one(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// The feed into the database is the journal's work too. (Asked for
	// through an interface so that this file also measures journal v1.)
	if f, ok := any(s).(interface{ flush(context.Context) error }); ok {
		if err := f.flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := cpuTime(b) - before
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/sample")
}

// cpuTime is the user+system CPU the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFeed measures the feed alone: records the log has synced, moved
// into the database in batches of a few hundred records, of feedRecords (as
// the feeder does during a fast run), and of more. A sample is two records,
// as in a run: its response and attempt, then the sample and its score, keys
// spread as request hashes are. cpu-µs/sample is the process's CPU per
// sample.
func BenchmarkFeed(b *testing.B) {
	for _, records := range []int{512, feedRecords, 16384} {
		b.Run(fmt.Sprintf("records=%d", records), func(b *testing.B) { benchFeed(b, records) })
	}
}

func benchFeed(b *testing.B, records int) {
	ctx := context.Background()
	s, run := benchStore(ctx, b, Options{})
	k := mustKeyer(b, testIdentity())
	seg := &segment{name: "bench.log"}
	items := func(from, n int) []fedItem {
		out := make([]fedItem, 0, 2*n)
		for i := from; i < from+n; i++ {
			req := &sdk.GenerateRequest{
				Messages: []sdk.Message{{Role: "user", Content: fmt.Sprintf("The magic number is %d. What is the magic number?", i)}},
				Params:   sdk.GenerationParams{MaxTokens: 32},
			}
			r := Keyed{Key: fmt.Sprintf("%x", sha256.Sum256(fmt.Appendf(nil, "%d", i))), request: journalForm(req.Messages, req.Params)}
			resp := &sdk.GenerateResponse{Text: "The answer is 42.", FinishReason: "stop",
				Usage:    sdk.Usage{PromptTokens: 60, CompletionTokens: 6},
				Attempts: []sdk.Attempt{{Status: 200, LatencyMS: 12.5}}}
			rows, err := responseRows(k, r, resp, 12*time.Millisecond)
			if err != nil {
				b.Fatal(err)
			}
			smp := &sdk.Sample{ID: fmt.Sprintf("s%d", i), Question: "What is the magic number?", Targets: []string{"42"},
				Length: sdk.Length{Tokens: 1000, Tokenizer: "cl100k_base"}, Depth: 0.5, Language: "en",
				Metadata: map[string]any{"needle": "The magic number is 42."}}
			sr, err := sampleRow(run, "e", smp, SampleMeta{Index: i, SentTokens: 1000, RequestKey: r.Key})
			if err != nil {
				b.Fatal(err)
			}
			sc, err := scoreRow(run, "e", smp.ID, "contains", &sdk.ScoreResponse{Value: 1})
			if err != nil {
				b.Fatal(err)
			}
			at := time.Now().UnixNano()
			out = append(out, fedItem{seg: seg, end: int64(2 * i), rows: rows, at: at},
				fedItem{seg: seg, end: int64(2*i + 1), rows: []row{sr, sc}, at: at})
		}
		return out
	}
	b.ReportAllocs()
	var cpu time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(records/2, b.N-done)
		b.StopTimer()
		batch := items(done, n)
		b.StartTimer()
		before := cpuTime(b)
		if _, err := s.feed(batch, false); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime(b) - before
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/sample")
}

// benchStore opens a journal in a temporary folder, closed when b ends,
// with one run and one eval "e" in it.
func benchStore(ctx context.Context, b *testing.B, opts Options) (*Store, string) {
	b.Helper()
	s, err := OpenWith(ctx, filepath.Join(b.TempDir(), "hayloft.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	run, err := s.BeginRun(ctx, RunInfo{ConfigPath: "bench.hcl"})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.PutEval(ctx, run, EvalInfo{Name: "e", Task: "niah", Model: "m", Scorers: []string{"contains"}}); err != nil {
		b.Fatal(err)
	}
	return s, run
}

// BenchmarkReadLog measures replay's reading of a dead process's log,
// without the feed: 20,000 records of a sample's size, in group commits of
// 32 (format version 2) or unframed (version 1), then the zeros reserved
// past them, which version 2 reads to the end to tell a torn tail from
// damage.
func BenchmarkReadLog(b *testing.B) {
	rec, err := encodeRecord([]row{{table: scoresTable, args: []any{"run", "e", "s1", "contains", 1.0, false,
		`{"needle": "The magic number is 42."}`, strings.Repeat("[1, 2, 3]", 20)}}}, time.Now().UnixNano())
	if err != nil {
		b.Fatal(err)
	}
	for _, v1 := range []bool{true, false} {
		b.Run(fmt.Sprintf("v1=%v", v1), func(b *testing.B) {
			l := newTestLog(v1)
			recs := make([][]byte, 32)
			for i := range recs {
				recs[i] = rec
			}
			for range 20000 / len(recs) {
				l.batch(recs...)
			}
			log := append(l.b, make([]byte, reserveBytes)...)
			f := logFile(b, log)
			b.SetBytes(int64(len(l.b)))
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				if _, err := readLog(f, 0, func(logRecord) error { n++; return nil }); err != nil || n != 20000/len(recs)*len(recs) {
					b.Fatalf("%d records, %v", n, err)
				}
			}
		})
	}
}
