package bleu

import (
	"math"
	"unicode/utf8"
	"unsafe"

	"github.com/hayloft/hayloft/plugins/internal/intern"
	"github.com/hayloft/hayloft/plugins/internal/pytext"
	"github.com/hayloft/hayloft/sdk"
)

// Smoothing methods, as sacrebleu's smooth_method parameter spells them.
const (
	SmoothExp   = "exp"
	SmoothFloor = "floor"
	SmoothAddK  = "add-k"
	SmoothNone  = "none"
)

// smoothDefaults are sacrebleu's BLEU.SMOOTH_DEFAULTS: the smooth_value used
// when none is given.
var smoothDefaults = map[string]float64{SmoothFloor: 0.1, SmoothAddK: 1}

// sacreParams are the settings compute needs.
type sacreParams struct {
	smoothMethod   string
	smoothValue    float64
	effectiveOrder bool
	maxOrder       int
}

// Result is one BLEU computation, with sacrebleu's BLEUScore field names.
// Score and Precisions are on sacrebleu's 0-100 scale.
type Result struct {
	Score      float64   `json:"score"`
	Counts     []float64 `json:"counts"`
	Totals     []float64 `json:"totals"`
	Precisions []float64 `json:"precisions"`
	BP         float64   `json:"bp"`
	SysLen     float64   `json:"sys_len"`
	RefLen     float64   `json:"ref_len"`
}

func (r Result) details() map[string]any {
	return map[string]any{
		"score":      r.Score,
		"counts":     r.Counts,
		"totals":     r.Totals,
		"precisions": r.Precisions,
		"bp":         r.BP,
		"sys_len":    r.SysLen,
		"ref_len":    r.RefLen,
	}
}

// appendDetails is detailer's.
func (r Result) appendDetails(b []byte, resp *sdk.ScoreResponse, nums *numCache) ([]byte, bool) {
	return appendFields(b, resp, nums, []jsonField{
		{`"bp":`, []float64{r.BP}, false, "", false},
		{`"counts":`, r.Counts, true, "", false},
		{`"precisions":`, r.Precisions, true, "", false},
		{`"ref_len":`, []float64{r.RefLen}, false, "", false},
		{`"score":`, []float64{r.Score}, false, "", true},
		{`"sys_len":`, []float64{r.SysLen}, false, "", false},
		{`"totals":`, r.Totals, true, "", false},
	})
}

// pyLog is sacrebleu's my_log: log(0) is a very negative number rather than
// -Inf, so that a zero precision zeroes the score without NaNs.
func pyLog(x float64) float64 {
	if x == 0 {
		return -9999999999
	}
	return math.Log(x)
}

// compute is sacrebleu's BLEU.compute_bleu over the statistics layout
// [sys_len, ref_len, correct_1..N, total_1..N] (N = p.maxOrder).
func compute(stats []float64, p sacreParams) Result {
	return computeInto(make([]float64, 3*p.maxOrder), stats, p)
}

// computeInto is compute with the result's three lists in buf, which
// holds 3·p.maxOrder numbers.
func computeInto(buf, stats []float64, p sacreParams) Result {
	n := p.maxOrder
	buf = buf[: 3*n : 3*n]
	correct, total, precisions := buf[:n:n], buf[n:2*n:2*n], buf[2*n:]
	copy(correct, stats[2:2+n])
	copy(total, stats[2+n:2+2*n])
	clear(precisions)
	sysLen, refLen := stats[0], stats[1]
	res := Result{Counts: correct, Totals: total, SysLen: sysLen, RefLen: refLen, Precisions: precisions}

	res.BP = 1
	if sysLen < refLen {
		res.BP = 0
		if sysLen > 0 {
			res.BP = math.Exp(1 - refLen/sysLen)
		}
	}
	// sacrebleu issue #141: no matching n-gram of any order scores 0,
	// whatever the smoothing.
	anyMatch := false
	for _, c := range correct {
		if c != 0 {
			anyMatch = true
			break
		}
	}
	if !anyMatch {
		return res
	}
	smoothMteval := 1.0
	effOrder := n
	for i := 0; i < n; i++ {
		if p.smoothMethod == SmoothAddK && i > 0 {
			correct[i] += p.smoothValue
			total[i] += p.smoothValue
		}
		if total[i] == 0 {
			break
		}
		if p.effectiveOrder {
			effOrder = i + 1
		}
		if correct[i] == 0 {
			switch p.smoothMethod {
			case SmoothExp:
				smoothMteval *= 2
				res.Precisions[i] = 100 / (smoothMteval * total[i])
			case SmoothFloor:
				res.Precisions[i] = 100 * p.smoothValue / total[i]
			}
		} else {
			res.Precisions[i] = 100 * correct[i] / total[i]
		}
	}
	var sum float64
	for _, pr := range res.Precisions[:effOrder] {
		sum += pyLog(pr)
	}
	res.Score = res.BP * math.Exp(sum/float64(effOrder))
	return res
}

// closestRefLen is sacrebleu's _get_closest_ref_len: the reference length
// nearest the hypothesis length, the shorter one on ties.
func closestRefLen(hypLen int, refLens []int) int {
	closest, diff := 0, -1
	for _, l := range refLens {
		d := l - hypLen
		if d < 0 {
			d = -d
		}
		if diff == -1 || d < diff {
			diff, closest = d, l
		} else if d == diff && l < closest {
			closest = l
		}
	}
	return closest
}

// counter extracts sacrebleu's segment statistics. N-grams are interned as
// dense ids order by order: a unigram is its token's id, an n-gram the id of
// the pair (id of its (n-1)-gram prefix, id of its last token). That is exact
// (no hashing) and lets counts live in slices instead of maps keyed by
// strings, which is most of the speed. A counter is not safe for concurrent
// use; the scorer pools them, with their buffers.
type counter struct {
	vocab   intern.Table
	orders  []idTable // orders[k] interns (k+1)-grams, k >= 1
	refMax  [][]int32 // per order: max count over references
	cnt     [][]int32 // per order: scratch counts, kept zeroed
	ids     [][]int32 // per order: ids of the current sequence
	refLens []int
	scratch scratch // the tokenizer's buffers

	// The packed path (maxPacked): each segment's unigram ids, the
	// references' one after the other, and the field offsets of 13a.
	grams  gramTable
	refIDs []int32
	refEnd []int // end of each reference in refIDs
	hypIDs []int32
	spans  []int32
	uni    []gramSlot // unigram counts by token id (gen 0: not yet in a reference)

	lists [3 * maxPackedOrder]float64 // scoreJSON's result lists
}

// maxPacked bounds the packed path: n-grams of up to 4 tokens, of a segment
// with fewer than 2^16-1 distinct tokens, fit gramTable's keys.
const (
	maxPackedOrder = 4
	maxPackedVocab = 1<<16 - 2
)

// packedMasks[k] keeps the last k lanes of a window of packed ids.
var packedMasks = [maxPackedOrder + 1]uint64{0, 1<<16 - 1, 1<<32 - 1, 1<<48 - 1, 1<<64 - 1}

// fieldIDs appends the unigram ids of line's 13a fields (appendFields13a),
// interned with add, else looked up (-1 for a token no reference has).
func (c *counter) fieldIDs(dst []int32, line string, add bool) []int32 {
	c.spans = appendFields13a(c.spans[:0], line)
	for k := 0; k < len(c.spans); k += 2 {
		start, end := int(c.spans[k]), int(c.spans[k+1])
		tok := unsafe.Slice(unsafe.StringData(line[start:]), end-start)
		if id, ok := c.vocab.InternHead(tok, tokenHead(line, start, end), add); ok {
			dst = append(dst, int32(id))
		} else {
			dst = append(dst, -1)
		}
	}
	return dst
}

// tokenHead is intern.Head(line[start:end]): for a token of up to 8
// bytes with 8 bytes of line from its start, one load and a mask.
func tokenHead(line string, start, end int) uint64 {
	if end-start <= 8 && start+8 <= len(line) {
		// A shift by 64 is 0 in Go: an 8-byte token keeps the whole word.
		return le64(line[start:]) & (1<<(8*(end-start)) - 1)
	}
	return intern.Head(unsafe.Slice(unsafe.StringData(line[start:]), end-start))
}

// sacreStats is the segment statistics of the hypothesis in c.hypIDs
// against the references in c.refIDs: through gramTable when they fit it
// (packedStats), else through the per-order id tables.
func (c *counter) sacreStats(out []float64) []float64 {
	if len(c.orders) <= maxPackedOrder && c.vocab.Len() <= maxPackedVocab {
		return c.packedStats(out)
	}
	for k := range c.orders {
		c.orders[k].reset()
		c.refMax[k] = c.refMax[k][:0]
	}
	c.refLens = c.refLens[:0]
	start := 0
	for _, end := range c.refEnd {
		c.ids[0] = append(c.ids[0][:0], c.refIDs[start:end]...)
		start = end
		c.ngrams(true)
		c.addRef()
	}
	c.ids[0] = append(c.ids[0][:0], c.hypIDs...)
	c.ngrams(false)
	return c.hypStats()
}

// packedStats is hypStats for segments that fit gramTable: unigrams are
// counted in slices indexed by token id, longer n-grams in the table, each
// reference position adding the n-grams that end there and each hypothesis
// position matching them. A hypothesis n-gram whose last n-1 tokens are in
// no reference is in none either, so the orders above it are not looked up.
// The table's probes are written out here rather than called as methods:
// they are most of the work, and the room for every reference
// n-gram is made once, before the loops.
func (c *counter) packedStats(out []float64) []float64 {
	n := len(c.orders)
	g := &c.grams
	g.reset()
	g.reserve((n-1)*len(c.refIDs), 256)
	slots, mask, shift, gen := g.slots, uint64(len(g.slots)-1), 64-g.bits, g.gen
	uni := c.uni[:0]
	for range c.vocab.Len() {
		uni = append(uni, gramSlot{})
	}
	c.uni = uni
	c.refLens = c.refLens[:0]
	start, added := 0, 0
	for r, end := range c.refEnd {
		ref := uint32(r)
		ids := c.refIDs[start:end]
		start = end
		c.refLens = append(c.refLens, len(ids))
		var w uint64
		for i, id := range ids {
			u := &uni[id]
			if u.ref != ref || u.gen == 0 {
				u.ref, u.cur, u.gen = ref, 0, 1
			}
			u.cur++
			u.max = max(u.max, u.cur)
			w = w<<16 | uint64(id+1)
			for k := 2; k <= min(n, i+1); k++ {
				key := w & packedMasks[k]
				for j := (key * fibonacci) >> shift; ; j = (j + 1) & mask {
					s := &slots[j]
					if s.gen != gen {
						// Field by field: a composite literal is built on
						// the stack and copied, and the copy's wide loads
						// stall on the narrow stores just made.
						s.key, s.gen, s.ref, s.cur, s.max, s.hyp = key, gen, ref, 1, 1, 0
						added++
						break
					}
					if s.key == key {
						if s.ref != ref {
							s.ref, s.cur = ref, 0
						}
						s.cur++
						s.max = max(s.max, s.cur)
						break
					}
				}
			}
		}
	}
	g.n += added
	hyp := c.hypIDs
	if len(out) != 2+2*n {
		out = make([]float64, 2+2*n)
	}
	out[0] = float64(len(hyp))
	out[1] = float64(closestRefLen(len(hyp), c.refLens))
	var correct [maxPackedOrder]int
	var w uint64
	known := 0 // known tokens ending at this position: an n-gram with an unknown one matches nothing
	for _, id := range hyp {
		if id < 0 {
			known = 0
			continue
		}
		u := &uni[id]
		u.hyp++
		if u.hyp <= u.max {
			correct[0]++
		}
		w = w<<16 | uint64(id+1)
		known++
	orders:
		for k := 2; k <= min(n, known); k++ {
			key := w & packedMasks[k]
			for j := (key * fibonacci) >> shift; ; j = (j + 1) & mask {
				s := &slots[j]
				if s.gen != gen {
					break orders // in no reference, so neither is any longer n-gram ending here
				}
				if s.key == key {
					s.hyp++
					if s.hyp <= s.max {
						correct[k-1]++
					}
					break
				}
			}
		}
	}
	for k := 0; k < n; k++ {
		out[2+k] = float64(correct[k])
		out[2+n+k] = float64(max(len(hyp)-k, 0))
	}
	return out
}

func newCounter(maxOrder int) *counter {
	c := &counter{
		orders: make([]idTable, maxOrder),
		refMax: make([][]int32, maxOrder),
		cnt:    make([][]int32, maxOrder),
		ids:    make([][]int32, maxOrder),
	}
	return c
}

func (c *counter) reset() {
	c.vocab.Reset()
	for k := range c.orders {
		c.orders[k].reset()
		c.refMax[k] = c.refMax[k][:0]
	}
	c.refLens = c.refLens[:0]
}

// token appends the unigram id of tok to c.ids[0]. With intern false, a
// token never seen in a reference gets -1 and so can never match.
func (c *counter) token(tok []byte, intern bool) {
	if id, ok := c.vocab.Lookup(tok, intern); ok {
		c.ids[0] = append(c.ids[0], int32(id))
	} else {
		c.ids[0] = append(c.ids[0], -1)
	}
}

// tokenHashed is token for a token whose hash the caller computed
// (intern.HashStart, intern.HashByte).
func (c *counter) tokenHashed(tok []byte, h uint32, add bool) {
	if id, ok := c.vocab.LookupHashed(tok, h, add); ok {
		c.ids[0] = append(c.ids[0], int32(id))
	} else {
		c.ids[0] = append(c.ids[0], -1)
	}
}

// words sets c.ids[0] to the unigram ids of toks.
func (c *counter) words(toks []string, intern bool) {
	c.ids[0] = c.ids[0][:0]
	for _, t := range toks {
		c.token(unsafe.Slice(unsafe.StringData(t), len(t)), intern)
	}
}

// text sets c.ids[0] to the unigram ids of the fields of a tokenized
// segment (Python's str.split()), without a string per field.
func (c *counter) text(text []byte, add bool) {
	c.ids[0] = c.ids[0][:0]
	for i := 0; i < len(text); {
		// ASCII fields are split and hashed in one pass; anything else
		// (a non-ASCII byte, which may be Unicode whitespace) takes
		// pytext.NextField from where this field's search began.
		j := i
		for j < len(text) && text[j] < utf8.RuneSelf && pytext.IsSpaceASCII(text[j]) {
			j++
		}
		start, h, ascii := j, intern.HashStart, true
		for ; j < len(text); j++ {
			b := text[j]
			if b >= utf8.RuneSelf {
				ascii = false
				break
			}
			if pytext.IsSpaceASCII(b) {
				break
			}
			h = intern.HashByte(h, b)
		}
		if ascii {
			if start == j {
				return
			}
			c.tokenHashed(text[start:j], h, add)
			i = j
			continue
		}
		start, end := pytext.NextField(text, i)
		if start == end {
			return
		}
		c.token(text[start:end], add)
		i = end
	}
}

// ngrams fills c.ids[1:] from the unigram ids in c.ids[0]. With intern
// false, n-grams never seen in a reference get -1.
func (c *counter) ngrams(intern bool) {
	uni := c.ids[0]
	for k := 1; k < len(c.ids); k++ {
		// Written by index into a slice of the final length: the branchy
		// append per n-gram was most of this loop.
		n := max(len(uni)-k, 0)
		out := c.ids[k]
		if cap(out) < n {
			out = make([]int32, n, n+n/2)
		}
		out = out[:n]
		if n == 0 {
			c.ids[k] = out
			continue
		}
		prev, last := c.ids[k-1][:n], uni[k:]
		tab := &c.orders[k]
		for i := range out {
			p, l := prev[i], last[i]
			if p < 0 || l < 0 {
				out[i] = -1
				continue
			}
			key := uint64(p)<<32 | uint64(l)
			if intern {
				out[i] = int32(tab.intern(key))
			} else if id, ok := tab.get(key); ok {
				out[i] = int32(id)
			} else {
				out[i] = -1
			}
		}
		c.ids[k] = out
	}
}

func grow(s []int32, n int) []int32 {
	for len(s) < n {
		s = append(s, 0)
	}
	return s
}

// addRef takes the n-grams in c.ids as a reference: each n-gram's count is
// raised to its count in this reference if that is higher.
func (c *counter) addRef() {
	c.refLens = append(c.refLens, len(c.ids[0]))
	for k := range c.ids {
		size := c.vocab.Len()
		if k > 0 {
			size = c.orders[k].len()
		}
		c.refMax[k] = grow(c.refMax[k], size)
		c.cnt[k] = grow(c.cnt[k], size)
		cnt, mx := c.cnt[k], c.refMax[k]
		for _, id := range c.ids[k] {
			cnt[id]++
		}
		for _, id := range c.ids[k] {
			if cnt[id] > mx[id] {
				mx[id] = cnt[id]
			}
		}
		for _, id := range c.ids[k] {
			cnt[id] = 0
		}
	}
}

// hypStats returns [sys_len, ref_len, correct_1..N, total_1..N] for the
// hypothesis in c.ids against the references added since reset, as
// sacrebleu's _compute_segment_statistics: hypothesis counts clipped by the
// maximum count in any single reference.
func (c *counter) hypStats() []float64 {
	n := len(c.orders)
	out := make([]float64, 2+2*n)
	out[0] = float64(len(c.ids[0]))
	out[1] = float64(closestRefLen(len(c.ids[0]), c.refLens))
	for k := 0; k < n; k++ {
		ids, cnt, mx := c.ids[k], c.cnt[k], c.refMax[k]
		out[2+n+k] = float64(len(ids))
		for _, id := range ids {
			if id >= 0 {
				cnt[id]++
			}
		}
		matched := int32(0)
		for _, id := range ids {
			if id < 0 || cnt[id] == 0 {
				continue
			}
			matched += min(cnt[id], mx[id])
			cnt[id] = 0 // counted once per distinct n-gram
		}
		out[2+k] = float64(matched)
	}
	return out
}

// stats is the statistics of one tokenized hypothesis against its
// tokenized references.
func (c *counter) stats(hyp []string, refs [][]string) []float64 {
	c.reset()
	for _, ref := range refs {
		c.words(ref, true)
		c.ngrams(true)
		c.addRef()
	}
	c.words(hyp, false)
	c.ngrams(false)
	return c.hypStats()
}
