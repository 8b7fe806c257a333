package html

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"

	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// Detail is what the browser shows of one sample when it is opened.
type Detail struct {
	Eval      string          `json:"eval"`
	ID        string          `json:"id"`
	Question  string          `json:"question,omitempty"`
	Targets   []string        `json:"targets,omitempty"`
	Length    sdk.Length      `json:"length"`
	Depth     float64         `json:"depth"`
	Truncated bool            `json:"truncated,omitempty"`
	Sent      int             `json:"sent_tokens,omitempty"`
	Messages  []sdk.Message   `json:"messages,omitempty"`
	Elided    int             `json:"elided_chars,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Response  *string         `json:"response,omitempty"`
	Finish    string          `json:"finish_reason,omitempty"`
	Tokens    [2]int          `json:"tokens"`
	LatencyMS float64         `json:"latency_ms,omitempty"`
	Scores    []DetailScore   `json:"scores,omitempty"`
	Failure   *DetailFailure  `json:"failure,omitempty"`
	Attempts  []DetailAttempt `json:"attempts,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

// DetailScore is one scorer's verdict on the sample.
type DetailScore struct {
	Scorer  string          `json:"scorer"`
	Value   float64         `json:"value"`
	Invalid bool            `json:"invalid,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
}

// DetailFailure is why the sample got no answer.
type DetailFailure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// DetailAttempt is one try at the sample's request.
type DetailAttempt struct {
	N         int     `json:"n"`
	Status    string  `json:"status"`
	LatencyMS float64 `json:"latency_ms"`
	Error     string  `json:"error,omitempty"`
}

// MakeDetail assembles a sample's detail from its journaled answer, its
// scores (aligned with ev.Scorers, as store.SampleScores gives them) and
// its request's attempts; maxChars > 0 elides message contents longer than
// that. The live view serves it; the report writes the same detail with
// appendDetail.
func MakeDetail(ev *journal.Eval, a *store.SampleAnswer, scores []store.RawScore, attempts []store.AttemptRecord, maxChars int) (*Detail, error) {
	d := &Detail{Eval: ev.Name, ID: a.ID, Question: a.Question, Targets: a.Targets, Length: a.Length, Depth: a.Depth,
		Truncated: a.Truncated, Sent: a.SentTokens, Metadata: a.Metadata, Finish: a.FinishReason,
		Tokens: [2]int{a.PromptTokens, a.OutputTokens}, LatencyMS: float64(a.Latency) / float64(time.Millisecond)}
	if a.Answered {
		text := a.Text
		d.Response = &text
	}
	if len(a.Request) > 0 {
		var req struct {
			Messages []sdk.Message   `json:"messages"`
			Params   json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(a.Request, &req); err != nil {
			return nil, fmt.Errorf("eval %s: sample %s: journaled request: %w", ev.Name, a.ID, err)
		}
		d.Messages, d.Params = req.Messages, req.Params
		if maxChars > 0 {
			for i := range d.Messages {
				var n int
				d.Messages[i].Content, n = elide(d.Messages[i].Content, maxChars)
				d.Elided += n
			}
		}
	}
	for i, sc := range scores {
		if sc.Has && i < len(ev.Scorers) {
			ds := DetailScore{Scorer: ev.Scorers[i], Value: sc.Value, Invalid: sc.Invalid}
			if len(sc.Details) > 2 {
				ds.Details = sc.Details
			}
			d.Scores = append(d.Scores, ds)
		}
	}
	if a.Failed {
		d.Failure = &DetailFailure{Code: a.FailCode, Message: a.FailMessage}
	}
	for _, at := range attempts {
		d.Attempts = append(d.Attempts, DetailAttempt{N: at.Attempt, Status: at.Status, LatencyMS: float64(at.Latency) / float64(time.Millisecond), Error: at.Error})
	}
	return d, nil
}

// elide keeps the head and tail of s, max characters in all, around a
// marker saying how many it left out.
func elide(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s, 0
	}
	half := max / 2
	left := n - 2*half
	head, tail := 0, len(s)
	for range half {
		_, size := utf8.DecodeRuneInString(s[head:])
		head += size
		_, size = utf8.DecodeLastRuneInString(s[:tail])
		tail -= size
	}
	return s[:head] + elisionMarker(left) + s[tail:], left
}

func elisionMarker(left int) string {
	return elisionHead + strconv.Itoa(left) + elisionTail
}

// The elision marker's text around its count (elisionMarker,
// appendElisionMarker).
const (
	elisionHead = "\n[… "
	elisionTail = " characters left out of this report; `hayloft view` shows them …]\n"
)

// A block is ChunkSize consecutive samples of the index; a segment the
// part of a block in one eval.
type segment struct {
	ev         *journal.Eval
	from, to   int // ev.Samples[from:to]
	evalQuoted []byte
}

// details writes every sample's detail in blocks of ChunkSize, in the
// index's order. Blocks are built (read from the journal, written as JSON,
// gzipped) by one worker per core and written in order.
func (p *page) details(ctx context.Context, st *store.Store) error {
	blocks := blocksOf(p.run.Evals, p.opts.ChunkSize)
	pending := p.opts.Attempts
	if pending == nil {
		pending = ReadAttempts(ctx, st, p.run.ID)
	}
	attempts, err := pending.wait(ctx)
	if err != nil {
		return err
	}
	responses := pending.responses

	workers := max(1, runtime.GOMAXPROCS(0))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		b64 []byte
		err error
	}
	results := make([]chan result, len(blocks))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	// At most window blocks are built ahead of the one being written, so
	// memory holds a few blocks whatever the run's size.
	window := make(chan struct{}, 2*workers)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var bb blockBuilder
			for c := range jobs {
				b64, err := bb.build(ctx, st, p.run.ID, blocks[c], attempts, responses, p.opts.MaxMessageChars)
				results[c] <- result{b64, err}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for c := range blocks {
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	// On an early return the dispatcher and the workers stop: cancel
	// before waiting for them.
	defer func() {
		cancel()
		wg.Wait()
	}()
	for c := range blocks {
		var r result
		select {
		case r = <-results[c]:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-window
		if r.err != nil {
			return r.err
		}
		// Each block is gzipped and base64-encoded: the browser's parser
		// then skims a third of the bytes, and only a block whose sample is
		// opened is decoded (DecompressionStream, built into the browser).
		p.printf(`<script type="application/octet-stream" class="hl-chunk" data-encoding="gzip-base64" id="hl-d-%d">`, c)
		if p.err == nil {
			_, p.err = p.w.Write(r.b64)
		}
		p.raw("</script>\n")
		if p.err != nil {
			return p.err
		}
	}
	return p.err
}

// blocksOf splits the evals' samples, in the index's order, into blocks of
// size samples.
func blocksOf(evals []*journal.Eval, size int) [][]segment {
	var blocks [][]segment
	var cur []segment
	n := 0
	for _, ev := range evals {
		quoted := appendString(nil, ev.Name)
		for i := 0; i < len(ev.Samples); {
			j := min(len(ev.Samples), i+size-n)
			cur = append(cur, segment{ev: ev, from: i, to: j, evalQuoted: quoted})
			n += j - i
			i = j
			if n == size {
				blocks, cur, n = append(blocks, cur), nil, 0
			}
		}
	}
	if len(cur) > 0 {
		blocks = append(blocks, cur)
	}
	return blocks
}

// Attempts are the tries at the requests of a run's samples, and where
// its responses sit in the journal, read in the background (ReadAttempts),
// so that a report reads them while it loads the run's index.
type Attempts struct {
	done      chan struct{}
	tries     *attemptIndex
	responses *store.ResponseRows
	err       error
}

// ReadAttempts starts reading the tries at run runID's requests in one pass
// over the journal's, and where every response sits (store.ResponseRows),
// when these are mostly the run's (a journal of this run and a few others):
// that costs a fraction of looking each request up. When the journal holds
// many more, it reads none and the blocks look theirs up
// (store.RangeAttempts, responses by key).
func ReadAttempts(ctx context.Context, st *store.Store, runID string) *Attempts {
	a := &Attempts{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		samples, failures, err := st.RunProgress(ctx, runID)
		if err != nil {
			a.err = err
			return
		}
		// A journal with this many more tries or responses than the run
		// asked for is mostly other runs'.
		limit := 4*(samples+failures) + 10_000
		// The two passes run at once, on two connections.
		var rowsErr error
		rowsDone := make(chan struct{})
		go func() {
			defer close(rowsDone)
			a.responses, rowsErr = st.ResponseRows(ctx, limit)
		}()
		a.tries, a.err = readAttemptIndex(ctx, st, limit, samples+failures)
		<-rowsDone
		a.err = cmp.Or(a.err, rowsErr)
	}()
	return a
}

// wait returns the tries by request key; nil when the blocks look theirs
// up.
func (a *Attempts) wait(ctx context.Context) (*attemptIndex, error) {
	select {
	case <-a.done:
		return a.tries, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// blockBuilder builds blocks, reusing its buffers from one to the next.
type blockBuilder struct {
	json, gz bytes.Buffer
	zw       *gzip.Writer
	arena    []byte   // the segment's details, one after another
	spans    [][2]int // each sample's detail in arena; {0, 0}: none
	scores   []store.RawScore
	tries    []store.AttemptRecord
}

// build reads one block's samples from the journal and returns the block:
// a JSON array of details (null for a sample no longer journaled), gzipped
// at the fastest level, in base64.
func (bb *blockBuilder) build(ctx context.Context, st *store.Store, runID string, segs []segment, attempts *attemptIndex, responses *store.ResponseRows, maxChars int) ([]byte, error) {
	bb.json.Reset()
	bb.json.WriteByte('[')
	first := true
	for _, sg := range segs {
		samples := sg.ev.Samples[sg.from:sg.to]
		bb.arena = bb.arena[:0]
		bb.spans = bb.spans[:0]
		for range samples {
			bb.spans = append(bb.spans, [2]int{})
		}
		rows := 0
		lo, hi := "", ""
		// A request's tries: from the run's, else from the segment's,
		// read with it.
		var segAttempts map[string][]store.AttemptRecord
		triesOf := func(key string) []store.AttemptRecord { return segAttempts[key] }
		if attempts != nil {
			triesOf = func(key string) []store.AttemptRecord {
				bb.tries = attempts.of(key, bb.tries)
				return bb.tries
			}
		} else {
			segAttempts = map[string][]store.AttemptRecord{}
			for _, s := range samples {
				if s.Lone {
					at, err := st.Attempts(ctx, s.RequestKey)
					if err != nil {
						return nil, err
					}
					segAttempts[s.RequestKey] = at
				}
			}
		}
		at := &store.RangeRows{Responses: responses}
		for i, s := range samples {
			if !s.Lone && s.Row > 0 {
				if at.Samples == 0 || s.Row < at.FirstSample {
					at.FirstSample = s.Row
				}
				at.LastSample = max(at.LastSample, s.Row)
				at.Samples++
			}
			if s.Lone {
				start := len(bb.arena)
				bb.arena = appendLone(bb.arena, sg, s, triesOf(s.RequestKey))
				bb.spans[i] = [2]int{start, len(bb.arena)}
				continue
			}
			rows++
			if lo == "" {
				lo = s.ID
			}
			hi = s.ID
		}
		if at.Samples != rows {
			at.Samples = 0 // some rows' places are unknown: read by key
		}
		if rows > 0 && attempts == nil {
			at, err := st.RangeAttempts(ctx, runID, sg.ev.Name, lo, hi)
			if err != nil {
				return nil, err
			}
			maps.Copy(segAttempts, at)
		}
		if rows > 0 {
			// Scores come with the index when it holds their details, else
			// with the samples.
			scorers := sg.ev.Scorers
			if sg.ev.ScoreDetails {
				scorers = nil
			}
			find := sampleFinder(samples)
			err := st.EachSampleAnswerRange(ctx, runID, sg.ev.Name, lo, hi, scorers, at, func(a *store.RawSampleAnswer) error {
				i, ok := find(a.ID)
				if !ok {
					return nil // journaled after the index was read (a live run)
				}
				if scorers == nil {
					bb.scores = bb.scores[:0]
					for _, sc := range samples[i].Scores {
						bb.scores = append(bb.scores, store.RawScore{Has: sc.Has, Value: sc.Value, Invalid: sc.Invalid, Details: sc.Details})
					}
					a.Scores = bb.scores
				}
				start := len(bb.arena)
				var err error
				if bb.arena, err = appendDetail(bb.arena, sg, samples[i], a, triesOf(a.RequestKey), maxChars); err != nil {
					return err
				}
				bb.spans[i] = [2]int{start, len(bb.arena)}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		for _, sp := range bb.spans {
			if !first {
				bb.json.WriteByte(',')
			}
			first = false
			if sp[1] == 0 {
				bb.json.WriteString("null")
			} else {
				bb.json.Write(bb.arena[sp[0]:sp[1]])
			}
		}
	}
	bb.json.WriteByte(']')
	bb.gz.Reset()
	if bb.zw == nil {
		bb.zw, _ = gzip.NewWriterLevel(&bb.gz, gzip.BestSpeed)
	} else {
		bb.zw.Reset(&bb.gz)
	}
	if _, err := bb.zw.Write(bb.json.Bytes()); err != nil {
		return nil, err
	}
	if err := bb.zw.Close(); err != nil {
		return nil, err
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(bb.gz.Len()))
	base64.StdEncoding.Encode(out, bb.gz.Bytes())
	return out, nil
}

// sampleFinder returns where a sample row of samples (the index's, in key
// order) is by its ID, following the rows as the journal gives them, in
// the same order; an ID out of that order (a database whose collation is
// not bytewise) is looked up.
func sampleFinder(samples []*journal.Sample) func(id string) (int, bool) {
	cursor := 0
	var pos map[string]int
	return func(id string) (int, bool) {
		for cursor < len(samples) && (samples[cursor].Lone || samples[cursor].ID < id) {
			cursor++
		}
		if cursor < len(samples) && samples[cursor].ID == id {
			return cursor, true
		}
		if pos == nil {
			pos = make(map[string]int, len(samples))
			for i, s := range samples {
				if !s.Lone {
					pos[s.ID] = i
				}
			}
		}
		i, ok := pos[id]
		return i, ok
	}
}

// appendDetail appends the JSON of MakeDetail(…, maxChars) for a sample
// row (its failure, if any, from s), copying its journaled JSON (request, targets, metadata, score
// details) rather than decoding it.
func appendDetail(b []byte, sg segment, s *journal.Sample, a *store.RawSampleAnswer, attempts []store.AttemptRecord, maxChars int) ([]byte, error) {
	b = append(b, `{"eval":`...)
	b = append(b, sg.evalQuoted...)
	b = append(b, `,"id":`...)
	b = appendString(b, a.ID)
	if a.Question != "" {
		b = append(b, `,"question":`...)
		b = appendString(b, a.Question)
	}
	if t := bytes.TrimSpace(a.Targets); len(t) > 0 && string(t) != "[]" && string(t) != "null" {
		b = append(b, `,"targets":`...)
		b = append(b, t...)
	}
	b = append(b, `,"length":{"tokens":`...)
	b = strconv.AppendInt(b, int64(a.Tokens), 10)
	if a.Tokenizer != "" {
		b = append(b, `,"tokenizer":`...)
		b = appendString(b, a.Tokenizer)
	}
	b = append(b, `},"depth":`...)
	b = appendFloat(b, a.Depth)
	if a.Truncated {
		b = append(b, `,"truncated":true`...)
	}
	if a.SentTokens != 0 {
		b = append(b, `,"sent_tokens":`...)
		b = strconv.AppendInt(b, int64(a.SentTokens), 10)
	}
	if len(a.Request) > 0 {
		msgs, params, ok := parseRequest(a.Request)
		if !ok {
			// A request this scanner does not follow: decode it.
			var err error
			if msgs, params, err = decodeRequest(a.Request); err != nil {
				return nil, fmt.Errorf("eval %s: sample %s: journaled request: %w", sg.ev.Name, a.ID, err)
			}
		}
		elided := 0
		if len(msgs) > 0 {
			b = append(b, `,"messages":[`...)
			for i, m := range msgs {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"role":"`...)
				b = append(b, m.role...)
				b = append(b, `","content":"`...)
				var n int
				b, n = appendElided(b, m.content, maxChars)
				elided += n
				b = append(b, `"}`...)
			}
			b = append(b, ']')
		}
		if elided > 0 {
			b = append(b, `,"elided_chars":`...)
			b = strconv.AppendInt(b, int64(elided), 10)
		}
		if len(params) > 0 {
			b = append(b, `,"params":`...)
			b = append(b, params...)
		}
	}
	if a.Answered {
		b = append(b, `,"response":`...)
		b = appendString(b, a.Text)
	}
	if a.FinishReason != "" {
		b = append(b, `,"finish_reason":`...)
		b = appendString(b, a.FinishReason)
	}
	b = append(b, `,"tokens":[`...)
	b = strconv.AppendInt(b, int64(a.PromptTokens), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(a.OutputTokens), 10)
	b = append(b, ']')
	if ms := float64(a.Latency) / float64(time.Millisecond); ms != 0 {
		b = append(b, `,"latency_ms":`...)
		b = appendFloat(b, ms)
	}
	b = appendScores(b, sg.ev.Scorers, a.Scores)
	if s.Failed { // as the index read it
		b = appendFailure(b, s.FailCode, s.FailMsg)
	}
	b = appendAttempts(b, attempts)
	if m := bytes.TrimSpace(a.Metadata); len(m) > 0 && string(m) != "{}" && string(m) != "null" {
		b = append(b, `,"metadata":`...)
		b = append(b, m...)
	}
	return append(b, '}'), nil
}

// appendLone appends the detail of a sample that failed before it was
// journaled as a sample: its ID, failure and attempts.
func appendLone(b []byte, sg segment, s *journal.Sample, attempts []store.AttemptRecord) []byte {
	b = append(b, `{"eval":`...)
	b = append(b, sg.evalQuoted...)
	b = append(b, `,"id":`...)
	b = appendString(b, s.ID)
	b = append(b, `,"length":{"tokens":0},"depth":-1,"tokens":[0,0]`...)
	if s.Failed {
		b = appendFailure(b, s.FailCode, s.FailMsg)
	}
	b = appendAttempts(b, attempts)
	return append(b, '}')
}

func appendScores(b []byte, scorers []string, scores []store.RawScore) []byte {
	started := false
	for i, sc := range scores {
		if !sc.Has || i >= len(scorers) {
			continue
		}
		if started {
			b = append(b, ',')
		} else {
			b = append(b, `,"scores":[`...)
			started = true
		}
		b = append(b, `{"scorer":`...)
		b = appendString(b, scorers[i])
		b = append(b, `,"value":`...)
		b = appendFloat(b, sc.Value)
		if sc.Invalid {
			b = append(b, `,"invalid":true`...)
		}
		if d := bytes.TrimSpace(sc.Details); len(d) > 2 {
			b = append(b, `,"details":`...)
			b = append(b, d...)
		}
		b = append(b, '}')
	}
	if started {
		b = append(b, ']')
	}
	return b
}

func appendFailure(b []byte, code, msg string) []byte {
	b = append(b, `,"failure":{"code":`...)
	b = appendString(b, code)
	b = append(b, `,"message":`...)
	b = appendString(b, msg)
	return append(b, '}')
}

func appendAttempts(b []byte, attempts []store.AttemptRecord) []byte {
	if len(attempts) == 0 {
		return b
	}
	b = append(b, `,"attempts":[`...)
	for i, at := range attempts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"n":`...)
		b = strconv.AppendInt(b, int64(at.Attempt), 10)
		b = append(b, `,"status":`...)
		b = appendString(b, at.Status)
		b = append(b, `,"latency_ms":`...)
		b = appendFloat(b, float64(at.Latency)/float64(time.Millisecond))
		if at.Error != "" {
			b = append(b, `,"error":`...)
			b = appendString(b, at.Error)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// decodeRequest is parseRequest through encoding/json, for requests the
// scanner does not follow; the strings come back escaped again.
func decodeRequest(raw []byte) ([]rawMessage, []byte, error) {
	var req struct {
		Messages []sdk.Message   `json:"messages"`
		Params   json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, nil, err
	}
	msgs := make([]rawMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = rawMessage{role: appendStringBody(nil, m.Role), content: appendStringBody(nil, m.Content)}
	}
	return msgs, req.Params, nil
}
