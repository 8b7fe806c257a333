// Package scoreio is the engine behind `hayloft score`: it scores a JSONL
// file of predictions and references with one scorer, without a model or a
// task, so numbers can be checked against the reference Python tools.
//
// Input, one JSON object per line:
//
//	{"prediction": "...", "references": "..." | ["...", ...] | {...}, "sample": {...}}
//
// references as a string or list become Sample.Targets; as an object they go
// to Sample.Metadata["references"] for benchmark-specific scorers. The
// optional sample object is decoded into the sdk.Sample first (strictly:
// unknown fields are errors); references, when present, replace its targets.
// Any other fields are carried through. Blank lines are skipped.
//
// Output, per line: the input object, fields in their order, plus "score":
// the scorer's Details (the reference library's field names) with "value"
// and "invalid". With aggregate, one object instead: the eval-level
// aggregate.
//
// Lines are read as a stream and scored in batches, several batches at
// once; output keeps the input's order. A remote scorer (a plugin) gets a
// batch in one message and its details are written as the plugin encoded
// them, so no line pays a round trip or a decode and re-encode of its own.
package scoreio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hayloft/hayloft/sdk"
	"github.com/hayloft/hayloft/sdk/jsonscan"
	"github.com/hayloft/hayloft/sdk/jsonstr"
	"github.com/hayloft/hayloft/sdk/plugin"
	"github.com/hayloft/hayloft/sdk/stats"
)

// maxLine bounds one input line; long-context predictions can be large, but
// a line beyond this is almost certainly not JSONL.
const maxLine = 256 << 20

// A batch closes at batchLines lines or batchBytes bytes of input, whichever
// comes first (a single longer line goes alone). inFlight batches are
// scored at once: enough to keep the plugin's processors and this process's
// reading and writing busy together.
const (
	batchLines = 256
	batchBytes = 1 << 20
	inFlight   = 3
)

// What a bad line does (Options.OnError).
const (
	OnErrorStop = "stop" // end the run at the line, as an error; earlier lines are written
	OnErrorSkip = "skip" // record the line and its error, and go on
)

// Options steer Score.
type Options struct {
	// Aggregate writes one aggregate object instead of per-line scores.
	Aggregate bool
	// OnError is OnErrorStop (the default when empty) or OnErrorSkip. A
	// skipped line is written in its place as {"line", "error", "input"}
	// (the input line as a string); with Aggregate, the skipped lines are
	// listed under "skipped" in the aggregate object. Failures of the
	// scorer itself (its process gone, say) always stop.
	OnError string
}

// ErrNothingToAggregate is Score's error for an aggregate over no scored
// line: an empty input, or every line skipped. An aggregate of nothing has
// no value, and printing 0 would read as a score.
var ErrNothingToAggregate = errors.New("aggregate: no line was scored, so there is nothing to aggregate")

// Run is Score with only the aggregate option.
func Run(ctx context.Context, sc sdk.Scorer, in io.Reader, out io.Writer, aggregate bool) error {
	return Score(ctx, sc, in, out, Options{Aggregate: aggregate})
}

// Score reads JSONL from in, scores each line with sc and writes JSONL to
// out (or, with opts.Aggregate, one aggregate object). Lines are written in
// input order as they are scored, so on an error every earlier line is
// already in out. Errors name the 1-based line.
func Score(ctx context.Context, sc sdk.Scorer, in io.Reader, out io.Writer, opts Options) error {
	switch opts.OnError {
	case "":
		opts.OnError = OnErrorStop
	case OnErrorStop, OnErrorSkip:
	default:
		return fmt.Errorf("on-error %q: want %s or %s", opts.OnError, OnErrorStop, OnErrorSkip)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The input's chunks are reused only under a scorer in another
	// process: one in this process may keep the strings it is given past
	// its call (sdk.Scorer), and they share the chunks' memory.
	remote := outOfProcess(sc)
	pool := newSlabs(remote)
	w := &writer{w: bufio.NewWriterSize(out, 1<<16), opts: opts, cancel: cancel, slabs: pool}
	if _, batches := sc.(plugin.BatchScorer); opts.Aggregate && remote && batches {
		// Each batch's results are gathered as they are written and then
		// handed back for the next batch (the results of a scorer in this
		// process keep their details as it gave them, a map, for its
		// aggregate to read).
		w.gathered = new(plugin.AggregateInput)
	}
	ordered := make(chan *batch, inFlight)
	writeDone := make(chan struct{})
	go func() {
		defer close(writeDone)
		w.run(ordered)
	}()
	readErr := read(ctx, sc, in, opts, ordered, pool)
	close(ordered)
	<-writeDone
	err := w.err
	if err == nil {
		err = readErr
	}
	if err == nil && opts.Aggregate {
		err = w.aggregate(ctx, sc)
	}
	if ferr := w.w.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write: %w", ferr)
	}
	return err
}

// outOfProcess reports whether sc says it runs in another process
// (pluginhost.Scorer does): then neither its results nor what it keeps
// share its requests' memory, and the input's chunks may be reused once
// their lines are written, an aggregate's (which keeps every line's
// result) included.
func outOfProcess(sc sdk.Scorer) bool {
	p, ok := sc.(interface{ OutOfProcess() bool })
	return ok && p.OutOfProcess()
}

// item is one non-blank input line on its way through.
type item struct {
	lineNo int
	line   []byte // kept for the error record of a skipped line
	fields []field
	req    sdk.ScoreRequest
	sample sdk.Sample
	res    plugin.ScoreResult
	err    error // the line's own error (parse or score), without "line N"
	// unread is a key of a line without targets that looks like them
	// ("target"), for the error of a scorer that wants targets.
	unread string
}

// batch is a run of lines scored together; done closes when every item has
// its result or err is set.
type batch struct {
	items []*item
	done  chan struct{}
	err   error // the scorer failed as a whole; ends the run

	// The items and their fields are carved from per-batch slabs: two
	// allocations a batch instead of several a line, and none once
	// written batches hand theirs back (pool).
	slab    []item
	fields  []field
	pool    *slabs // nil: fresh slabs
	lastSeq int64  // the input chunk of the last line (lineReader.seq)

	// results is the scorer's answer to the batch, handed back
	// (plugin.ReleaseResults) once its lines are written.
	results []plugin.ScoreResult
}

// slabs keeps the item and field slabs of written batches for the batches
// still to read. Fresh memory costs a page fault per 4 KiB, and these
// slabs were a third of what `hayloft score` allocated; with them reused,
// a run of 10,000 lines allocates less than the collector's first goal.
type slabs struct {
	items  chan []item
	fields chan []field
	// chunks is lineReader.released: the input chunks before the one of
	// the last line written are free. Nil when the scorer runs in this
	// process, where it may keep the input's strings (a cache of pieces
	// of them, a response holding one) as long as it likes.
	chunks *atomic.Int64
}

func newSlabs(reuseChunks bool) *slabs {
	p := &slabs{items: make(chan []item, inFlight+2), fields: make(chan []field, inFlight+2)}
	if reuseChunks {
		p.chunks = new(atomic.Int64)
	}
	return p
}

// itemSlab is an empty slab of batchLines items, reused if one is free.
func (p *slabs) itemSlab() []item {
	if p == nil {
		return make([]item, 0, batchLines)
	}
	return take(p.items, batchLines)
}

// fieldSlab is itemSlab for fields.
func (p *slabs) fieldSlab() []field {
	if p == nil {
		return make([]field, 0, 4*batchLines)
	}
	return take(p.fields, 4*batchLines)
}

// take is a slab from free if one is waiting, else a fresh one of n.
func take[T any](free chan []T, n int) []T {
	select {
	case s := <-free:
		return s
	default:
		return make([]T, 0, n)
	}
}

// give hands s to free, unless free is full.
func give[T any](free chan []T, s []T) {
	select {
	case free <- s[:0]:
	default:
	}
}

// put takes back the slabs of a batch that is written: nothing refers to
// its items or fields any more (an aggregate keeps copies of the results).
func (p *slabs) put(b *batch) {
	if cap(b.slab) == batchLines {
		give(p.items, b.slab)
	}
	if cap(b.fields) >= 4*batchLines {
		give(p.fields, b.fields)
	}
	b.slab, b.fields, b.items = nil, nil, nil
	if p.chunks != nil && p.chunks.Load() < b.lastSeq {
		p.chunks.Store(b.lastSeq) // only the writer stores
	}
}

// parse turns one input line into its item, appended to b.
func (b *batch) parse(line []byte, lineNo int, aggregate bool) *item {
	if len(b.slab) == cap(b.slab) {
		b.slab = b.pool.itemSlab()
	}
	if b.fields == nil {
		b.fields = b.pool.fieldSlab()
	}
	b.slab = append(b.slab, item{lineNo: lineNo, line: line})
	it := &b.slab[len(b.slab)-1]
	it.err = it.parse(&b.fields, aggregate)
	b.items = append(b.items, it)
	return it
}

// read parses lines into batches and starts scoring each, handing them to
// the writer in order. It stops early when the writer ends the run
// (ctx), or, with OnErrorStop, after a line that does not parse.
func read(ctx context.Context, sc sdk.Scorer, in io.Reader, opts Options, ordered chan<- *batch, pool *slabs) error {
	r := newLineReader(in)
	r.released = pool.chunks // nil: keep every chunk
	slots := make(chan struct{}, inFlight)
	var scoring sync.WaitGroup
	defer scoring.Wait()
	cur := &batch{pool: pool}
	size := 0
	dispatch := func() bool {
		if len(cur.items) == 0 {
			return true
		}
		b := cur
		cur, size = &batch{pool: pool}, 0
		b.done = make(chan struct{})
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		select {
		case ordered <- b:
		case <-ctx.Done():
			<-slots
			return false
		}
		scoring.Add(1)
		go func() {
			defer scoring.Done()
			defer func() { <-slots }()
			scoreBatch(ctx, sc, b)
			close(b.done)
		}()
		return true
	}
	for lineNo := 1; ; lineNo++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, readErr := r.next()
		if readErr != nil && readErr != io.EOF {
			dispatch()
			return fmt.Errorf("line %d: %w", lineNo, readErr)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			it := cur.parse(line, lineNo, opts.Aggregate)
			cur.lastSeq = r.seq
			size += len(line)
			if it.err != nil && opts.OnError == OnErrorStop {
				dispatch()
				return nil // the writer reports it, after the lines before it
			}
			if len(cur.items) >= batchLines || size >= batchBytes {
				if !dispatch() {
					return ctx.Err()
				}
			}
		}
		if readErr == io.EOF {
			if !dispatch() {
				return ctx.Err()
			}
			return nil
		}
	}
}

// lineReader splits its input into lines that share large chunks of memory
// instead of a buffer each: an item keeps its line (and the strings decoded
// from it) until it is written, and a line is never written to once it is
// handed out, so a chunk is only ever appended to. A line that runs past the
// end of a chunk is carried, alone, into a fresh chunk.
//
// A chunk whose lines are all written can be read into again: with
// released set, the reader keeps the chunks before the current one and
// reuses those whose sequence number (seq) is below released's value,
// which the writer raises as it writes (fresh memory costs a page fault
// per 4 KiB).
type lineReader struct {
	r          io.Reader
	buf        []byte // the current chunk: lines handed out, then buf[start:] unread
	start      int
	scanned    int // buf[start:start+scanned] holds no '\n'
	err        error
	chunkBytes int
	maxLine    int

	seq      int64 // the current chunk's sequence number: a line's is seq when next returns it
	older    []seqChunk
	released *atomic.Int64 // nil: chunks are never reused
}

// seqChunk is a chunk before the current one, with its sequence number.
type seqChunk struct {
	seq int64
	b   []byte
}

// reuse returns an empty chunk of at least need bytes whose lines are all
// written, or nil. Older chunks too small for need are dropped.
func (lr *lineReader) reuse(need int) []byte {
	if lr.released == nil {
		return nil
	}
	free := lr.released.Load()
	for len(lr.older) > 0 && lr.older[0].seq < free {
		c := lr.older[0]
		lr.older = lr.older[1:]
		if cap(c.b) >= need {
			return c.b[:0]
		}
	}
	return nil
}

// readChunk is the size of a fresh chunk. Chunks are reused once their
// lines are written, so the fresh ones are about what the batches in
// flight hold: a quarter of a batch's most (batchBytes) keeps that close
// to it (a 10,000-line rougel run takes ~500 fewer page faults than with
// chunks of batchBytes). A longer line gets a chunk of its own.
const readChunk = 256 << 10

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: r, chunkBytes: readChunk, maxLine: maxLine}
}

// next returns the next line with its '\n', or the last one without it and
// io.EOF. The error is the reader's, or one for a line over maxLine.
func (lr *lineReader) next() ([]byte, error) {
	for {
		pending := lr.buf[lr.start:]
		if k := bytes.IndexByte(pending[lr.scanned:], '\n'); k >= 0 {
			n := lr.scanned + k + 1
			lr.start += n
			lr.scanned = 0
			if n > lr.maxLine {
				return nil, fmt.Errorf("line longer than %d bytes", lr.maxLine)
			}
			return pending[:n:n], nil
		}
		lr.scanned = len(pending)
		if len(pending) > lr.maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", lr.maxLine)
		}
		if lr.err != nil {
			lr.start = len(lr.buf)
			lr.scanned = 0
			return pending[:len(pending):len(pending)], lr.err
		}
		if len(lr.buf) == cap(lr.buf) {
			// Full: the unfinished line moves to a fresh chunk, big
			// enough for twice it; the old chunk stays with its lines.
			need := max(lr.chunkBytes, 2*len(pending))
			fresh := lr.reuse(need)
			if fresh == nil {
				fresh = make([]byte, 0, need)
			}
			fresh = append(fresh, pending...)
			if lr.released != nil && cap(lr.buf) > 0 {
				lr.older = append(lr.older, seqChunk{lr.seq, lr.buf})
			}
			lr.buf, lr.start = fresh, 0
			lr.seq++
		}
		n, err := lr.r.Read(lr.buf[len(lr.buf):cap(lr.buf)])
		lr.buf = lr.buf[:len(lr.buf)+n]
		if err != nil {
			lr.err = err
		}
	}
}

// parseLine turns one input line into its score request.
func parseLine(line []byte, lineNo int, aggregate bool) *item {
	it := &item{lineNo: lineNo, line: line}
	var fields []field
	it.err = it.parse(&fields, aggregate)
	return it
}

// parse fills it from its line. Its fields are appended to *slab, which
// is only ever appended to: a reallocation leaves earlier items' fields
// where they were.
func (it *item) parse(slab *[]field, aggregate bool) error {
	start := len(*slab)
	all, err := parseObjectInto(*slab, it.line)
	if err != nil {
		return err
	}
	*slab = all
	fields := all[start:len(all):len(all)]
	it.fields = fields
	sample := &it.sample
	var prediction, references []byte
	for _, f := range fields {
		switch f.key {
		case "prediction":
			prediction = f.value
		case "references":
			references = f.value
		case "sample":
			dec := json.NewDecoder(bytes.NewReader(f.value))
			dec.DisallowUnknownFields()
			if err := dec.Decode(sample); err != nil {
				return fmt.Errorf("sample: %w", err)
			}
		case "score":
			return errors.New(`score: the input already has a "score" field`)
		}
	}
	if prediction == nil {
		return errors.New("prediction: missing")
	}
	var pred string
	if prediction[0] == '"' {
		pred, err = decodeString(prediction)
	} else {
		pred, err = unmarshalString(prediction) // null is "", as it always was
	}
	if err != nil {
		return errors.New("prediction: want a string")
	}
	if references != nil {
		if err := setReferences(sample, references); err != nil {
			return err
		}
	} else if len(sample.Targets) == 0 {
		for _, f := range fields {
			if looksLikeReferences(f.key) {
				it.unread = f.key
				break
			}
		}
	}
	if sample.ID == "" {
		sample.ID = "line " + strconv.Itoa(it.lineNo)
	}
	// With aggregate the line's score is never written, only aggregated;
	// else it is written as one object, which a plugin may send whole.
	it.req = sdk.ScoreRequest{Sample: sample, Prediction: pred, ForAggregate: aggregate, ScoreObject: !aggregate}
	return nil
}

// looksLikeReferences reports whether key is one a line may name its
// targets by that is not read ("references" is).
func looksLikeReferences(key string) bool {
	switch key {
	case "reference", "refs", "target", "targets", "answer", "answers", "gold", "ground_truth", "expected":
		return true
	}
	return false
}

// unmarshalString is json.Unmarshal into a string, in a function of its
// own so that the common path's string does not escape to the heap.
func unmarshalString(raw []byte) (string, error) {
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

func setReferences(sample *sdk.Sample, raw []byte) error {
	const want = "references: want string, list or object"
	switch t := bytes.TrimSpace(raw); {
	case len(t) > 0 && t[0] == '"':
		s, err := decodeString(t)
		if err != nil {
			return errors.New(want)
		}
		sample.Targets = []string{s}
	case len(t) > 0 && t[0] == '[':
		if list, ok := stringList(t); ok {
			sample.Targets = list
			return nil
		}
		var list []string
		if err := json.Unmarshal(t, &list); err != nil {
			return errors.New("references: want a list of strings")
		}
		sample.Targets = list
	case len(t) > 0 && t[0] == '{':
		var obj map[string]any
		if err := json.Unmarshal(t, &obj); err != nil {
			return errors.New(want)
		}
		if sample.Metadata == nil {
			sample.Metadata = map[string]any{}
		}
		sample.Metadata["references"] = obj
	default:
		return errors.New(want)
	}
	return nil
}

// scoreBatch scores the items of b that parsed: in one call to a batch
// scorer, else one by one.
func scoreBatch(ctx context.Context, sc sdk.Scorer, b *batch) {
	todo := make([]*item, 0, len(b.items))
	for _, it := range b.items {
		if it.err == nil {
			todo = append(todo, it)
		}
	}
	if len(todo) == 0 {
		return
	}
	if bs, ok := sc.(plugin.BatchScorer); ok {
		reqs := make([]*sdk.ScoreRequest, len(todo))
		for i, it := range todo {
			reqs[i] = &it.req
		}
		results, err := bs.ScoreBatch(ctx, reqs)
		if err != nil {
			b.err = fmt.Errorf("lines %d-%d: score: %w", todo[0].lineNo, todo[len(todo)-1].lineNo, err)
			return
		}
		b.results = results
		for i, it := range todo {
			it.setResult(results[i])
		}
		return
	}
	for _, it := range todo {
		if ctx.Err() != nil {
			b.err = ctx.Err()
			return
		}
		resp, err := sc.Score(ctx, &it.req)
		it.setResult(plugin.ScoreResult{Response: resp, Err: err})
	}
}

func (it *item) setResult(r plugin.ScoreResult) {
	switch {
	case r.Err != nil && it.unread != "":
		// The scorer most likely wants the targets the line names by a
		// key that is never read: say so where the error is.
		it.err = fmt.Errorf(`score: %w (the line's %q is not read: name the targets "references")`, r.Err, it.unread)
	case r.Err != nil:
		it.err = fmt.Errorf("score: %w", r.Err)
	case r.Response == nil:
		it.err = errors.New("score: scorer returned no response")
	default:
		it.res = r
	}
}

// writer writes finished batches in order and keeps what the aggregate
// needs.
type writer struct {
	w      *bufio.Writer
	opts   Options
	cancel context.CancelFunc
	err    error // the first error; the run ends at it
	slabs  *slabs

	buf     []byte
	results []plugin.ScoreResult // with Aggregate, unless gathered
	skipped []skippedLine

	// gathered is what the aggregate reads of every scored line's result
	// (with Aggregate, of a batch scorer in another process), instead of
	// results. ok is scratch: a batch's results to gather.
	gathered *plugin.AggregateInput
	ok       []plugin.ScoreResult
}

type skippedLine struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
	Input string `json:"input"`
}

func (w *writer) run(ordered <-chan *batch) {
	for b := range ordered {
		if w.err != nil {
			continue // drain: the reader is stopping
		}
		<-b.done
		if w.err = w.batch(b); w.err != nil {
			w.cancel()
			continue
		}
		if !w.opts.Aggregate || w.gathered != nil {
			// Written or gathered: nothing refers to the results any
			// more (an aggregate that is not gathered keeps them).
			plugin.ReleaseResults(b.results)
		}
		b.results = nil
		w.slabs.put(b)
	}
}

func (w *writer) batch(b *batch) error {
	for _, it := range b.items {
		if it.err == nil && b.err != nil {
			return b.err
		}
		if it.err != nil {
			if w.opts.OnError == OnErrorStop {
				return fmt.Errorf("line %d: %w", it.lineNo, it.err)
			}
			if err := w.skip(it); err != nil {
				return err
			}
			continue
		}
		if w.opts.Aggregate {
			// Only the score stays: the line's text can go.
			if w.gathered != nil {
				w.ok = append(w.ok, it.res)
			} else {
				w.results = append(w.results, it.res)
			}
			continue
		}
		line, err := appendLine(w.buf[:0], it)
		if err != nil {
			return fmt.Errorf("line %d: %w", it.lineNo, err)
		}
		w.buf = line
		if _, err := w.w.Write(line); err != nil {
			return fmt.Errorf("line %d: write: %w", it.lineNo, err)
		}
	}
	if w.gathered != nil {
		err := w.gathered.Add(w.ok)
		clear(w.ok) // no pointer kept into the results, released next
		w.ok = w.ok[:0]
		if err != nil {
			return fmt.Errorf("lines %d-%d: %w", b.items[0].lineNo, b.items[len(b.items)-1].lineNo, err)
		}
	}
	return nil
}

func (w *writer) skip(it *item) error {
	rec := skippedLine{Line: it.lineNo, Error: it.err.Error(), Input: string(bytes.TrimRight(it.line, "\r\n"))}
	if w.opts.Aggregate {
		w.skipped = append(w.skipped, rec)
		return nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("line %d: %w", it.lineNo, err)
	}
	if _, err := w.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("line %d: write: %w", it.lineNo, err)
	}
	return nil
}

// appendLine is the output line of it: its fields as they came (compacted)
// and "score".
func appendLine(b []byte, it *item) ([]byte, error) {
	b = append(b, '{')
	for _, f := range it.fields {
		b = append(b, f.keyOut...)
		b = append(b, ':')
		if f.compact {
			b = append(b, f.value...)
		} else {
			b = jsonscan.AppendCompact(b, f.value)
		}
		b = append(b, ',')
	}
	b = append(b, `"score":`...)
	b, err := appendScore(b, it.res)
	if err != nil {
		return nil, fmt.Errorf("encode score: %w", err)
	}
	return append(b, "}\n"...), nil
}

// appendScore writes the score object: the details plus "invalid" and
// "value", keys in sorted order as json.Marshal writes a map (the details
// are such a map's encoding, from a plugin or from here). The details are
// walked in place, without a decoded key or a slice of members: this runs
// once per output line.
func appendScore(b []byte, r plugin.ScoreResult) ([]byte, error) {
	if obj := r.ScoreJSON; obj != nil {
		// The plugin wrote the whole object (plugin.ScoreObjectScorer),
		// "invalid" and "value" in place: nothing to merge.
		if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
			return nil, errors.New("score object: not a JSON object")
		}
		return append(b, obj...), nil
	}
	details := r.DetailsJSON
	if details == nil && len(r.Response.Details) > 0 {
		var err error
		if details, err = json.Marshal(r.Response.Details); err != nil {
			return nil, err
		}
	}
	var valueBuf [32]byte // the longest float64 JSON number is 24 bytes
	value, ok := jsonstr.AppendFloat(valueBuf[:0], r.Response.Value)
	if !ok {
		if _, err := json.Marshal(r.Response.Value); err != nil {
			return nil, err // json.Marshal's own words for NaN and Inf
		}
	}
	invalid := "false"
	if r.Response.Invalid {
		invalid = "true"
	}
	extra := [2]struct {
		key string
		val []byte
	}{{"invalid", []byte(invalid)}, {"value", value}}
	start := len(b)
	b = append(b, '{')
	next, first := 0, true
	emit := func(key string, keyRaw, val []byte, compact bool) {
		if !first {
			b = append(b, ',')
		}
		first = false
		if keyRaw != nil {
			b = append(b, keyRaw...)
		} else {
			b = append(b, '"')
			b = append(b, key...)
			b = append(b, '"')
		}
		b = append(b, ':')
		if compact {
			b = append(b, val...)
		} else {
			b = jsonscan.AppendCompact(b, val)
		}
	}
	if len(details) > 0 {
		var prev []byte
		err := jsonscan.Members(details, func(m jsonscan.Member) error {
			key := m.RawKey[1 : len(m.RawKey)-1]
			if !plainKey(key) || (prev != nil && bytes.Compare(key, prev) <= 0) {
				return errNotMapOrder
			}
			prev = key
			for next < len(extra) && extra[next].key < string(key) {
				emit(extra[next].key, nil, extra[next].val, true)
				next++
			}
			if next < len(extra) && extra[next].key == string(key) {
				emit(extra[next].key, nil, extra[next].val, true)
				next++
			} else {
				emit("", m.RawKey, m.Value, m.Compact)
			}
			return nil
		})
		if errors.Is(err, errNotMapOrder) {
			// Escapes, or not a map's encoding: decode it as a map.
			return appendScoreSlow(b[:start], details, r)
		}
		if err != nil {
			return nil, fmt.Errorf("details: %w", err)
		}
	}
	for ; next < len(extra); next++ {
		emit(extra[next].key, nil, extra[next].val, true)
	}
	return append(b, '}'), nil
}

// errNotMapOrder ends appendScore's walk of details whose keys are not
// json.Marshal's of a map.
var errNotMapOrder = errors.New("details not in a map's order")

// plainKey reports whether a raw key (quotes removed) is written by
// json.Marshal exactly as it is: printable ASCII without escapes or the
// characters it escapes for HTML.
func plainKey(k []byte) bool {
	for _, c := range k {
		if c < 0x20 || c >= 0x7f || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendScoreSlow is appendScore for details that are not in a map's order.
func appendScoreSlow(b, details []byte, r plugin.ScoreResult) ([]byte, error) {
	m := map[string]any{}
	if err := json.Unmarshal(details, &m); err != nil {
		return nil, err
	}
	m["value"] = r.Response.Value
	m["invalid"] = r.Response.Invalid
	enc, err := json.Marshal(m)
	return append(b, enc...), err
}

// aggregate writes the aggregate of the scored lines.
func (w *writer) aggregate(ctx context.Context, sc sdk.Scorer) error {
	if w.scored() == 0 {
		return ErrNothingToAggregate
	}
	var agg *sdk.AggregateResponse
	var err error
	if w.gathered != nil {
		// Set only for a plugin.BatchScorer (Score).
		agg, err = sc.(plugin.BatchScorer).AggregateResults(ctx, w.gathered)
		if errors.Is(err, sdk.ErrUnsupported) {
			var results []plugin.ScoreResult
			if results, err = w.gathered.Results(); err == nil {
				agg = stats.AggregateMean(responses(results), stats.DefaultSeed)
			}
		}
	} else {
		agg, err = stats.Aggregate(ctx, sc, responses(w.results), stats.DefaultSeed)
	}
	if err != nil {
		return fmt.Errorf("aggregate: %w", err)
	}
	b, err := json.Marshal(agg)
	if err != nil {
		return fmt.Errorf("encode aggregate: %w", err)
	}
	if len(w.skipped) > 0 {
		sk, err := json.Marshal(w.skipped)
		if err != nil {
			return fmt.Errorf("encode skipped lines: %w", err)
		}
		b = append(b[:len(b)-1], `,"skipped":`...)
		b = append(append(b, sk...), '}')
	}
	w.w.Write(b)
	w.w.WriteByte('\n')
	return nil
}

// scored is the number of lines the aggregate counts.
func (w *writer) scored() int {
	if w.gathered != nil {
		return w.gathered.Len()
	}
	return len(w.results)
}

func responses(results []plugin.ScoreResult) []*sdk.ScoreResponse {
	out := make([]*sdk.ScoreResponse, len(results))
	for i, r := range results {
		out[i] = r.Response
	}
	return out
}

// ParseOptions turns repeated `--option key=value` flags into scorer
// options. A value that is valid JSON (number, bool, null, list, object,
// quoted string) is used as that JSON; anything else is a plain string, so
// tokenize=13a and mode=nltk need no quotes. Errors name the bad pair.
func ParseOptions(kv []string) (sdk.Options, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	seen := map[string]bool{}
	for i, pair := range kv {
		key, value, ok := strings.Cut(pair, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf("option %q: want key=value", pair)
		}
		if seen[key] {
			return nil, fmt.Errorf("option %q: %s given twice", pair, key)
		}
		seen[key] = true
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		if v := strings.TrimSpace(value); v != "" && json.Valid([]byte(v)) {
			if err := json.Compact(&b, []byte(v)); err != nil {
				return nil, fmt.Errorf("option %q: %w", pair, err)
			}
		} else {
			s, _ := json.Marshal(value)
			b.Write(s)
		}
	}
	b.WriteByte('}')
	return sdk.Options(b.Bytes()), nil
}
