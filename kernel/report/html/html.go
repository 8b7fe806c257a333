// Package html draws a run as one self-contained HTML page: the run's
// header, each eval's metrics with n, invalid and CIs, length × depth
// heatmaps and score-against-length plots in SVG made here, the RAG
// ablation with deltas, every benchmark table (sdk.Table) generically, and
// a per-sample browser. The page fetches nothing: its style and script are
// inline and a Content-Security-Policy forbids every other load, so it
// opens offline. Model outputs reach the page only as JSON data that the
// script puts into text nodes, or through the escaping below.
package html

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hayloft/hayloft/kernel/report"
	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

//go:embed page.css
var pageCSS string

//go:embed page.js
var pageJS string

// Options shape the page.
type Options struct {
	// Live: the page is served by `hayloft view`. Sample details are
	// fetched from it (/api/sample) instead of embedded, with whole
	// messages, and the page reloads while the run is in progress.
	Live bool
	// MaxMessageChars caps each embedded message's content: longer ones
	// keep their head and tail around a marker saying how much is left out
	// (the long context is what a message mostly is, and 200,000 whole
	// contexts do not fit in a page). 0: DefaultMaxMessageChars.
	MaxMessageChars int
	// ChunkSize is how many samples' details share one embedded JSON
	// block; the page parses a block only when one of its samples is
	// opened. 0: DefaultChunkSize.
	ChunkSize int
	// Overhead is the kernel's CPU time per sample, when known.
	Overhead float64
	// Progress is the live view's token for the journal's state the page
	// was drawn from; the page reloads when the server's changes.
	Progress string
	// Attempts are the run's tries at its requests, read while its index
	// loaded (ReadAttempts); nil: Write reads them.
	Attempts *Attempts
	// First draws the live view's page from journal.LoadFirst: the counts
	// from it, the run's first samples in the list, and the parts that
	// need every sample (model identities, length × depth heatmaps,
	// score-against-length plots, the whole index) left as places the
	// page fills from the server (Later, WriteIndex: /api/rest).
	First *journal.First
}

// Defaults of Options.
const (
	DefaultMaxMessageChars = 4000
	DefaultChunkSize       = 500
	// PageBudget is about how many characters of messages a report embeds
	// in all when MaxMessageChars is not set, and MinMessageChars the least
	// it keeps of each.
	PageBudget      = 40_000_000
	MinMessageChars = 200
	// ScoreDetailsBudget is how many bytes of sample score details per
	// eval a report reads with the sample index
	// (journal.LoadIndexDetails) rather than with each block of samples.
	ScoreDetailsBudget = 64 << 20
)

// Write draws run as a page on w. run needs no sample score details
// (journal.LoadIndex): each block of sample details is read from st as it
// is built, one worker per core, so memory holds the sample index, the
// run's attempts and a few blocks, not every response. An eval whose index
// holds its score details (journal.LoadIndexDetails) has them taken from it.
func Write(ctx context.Context, w io.Writer, st *store.Store, run *journal.Run, opts Options) error {
	if opts.MaxMessageChars <= 0 {
		opts.MaxMessageChars = DefaultMaxMessageChars
		// A large run gets a smaller share per message, so the file stays
		// one a browser opens in seconds (about PageBudget of messages).
		n := 0
		for _, ev := range run.Evals {
			n += len(ev.Samples)
		}
		if n > 0 {
			opts.MaxMessageChars = max(MinMessageChars, min(opts.MaxMessageChars, PageBudget/n))
		}
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	p := &page{w: bw, run: run, opts: opts}
	p.head()
	p.header()
	p.evals()
	p.ablation()
	p.tables()
	p.prefixCache(ctx, st) // prefixcache.go
	p.browserShell()
	if !opts.Live {
		// The index is encoded while the blocks are built: the writer
		// mostly waits for them.
		var index bytes.Buffer
		indexErr := make(chan error, 1)
		go func() { indexErr <- WriteIndex(&index, run, opts.ChunkSize, opts.First) }()
		if err := p.details(ctx, st); err != nil {
			<-indexErr
			return err
		}
		if err := <-indexErr; err != nil {
			return err
		}
		p.index(index.Bytes())
	} else {
		p.index(nil)
	}
	p.printf("<script>%s</script>\n</body></html>\n", pageJS)
	if p.err != nil {
		return p.err
	}
	return bw.Flush()
}

type page struct {
	w    *bufio.Writer
	run  *journal.Run
	opts Options
	err  error
}

func (p *page) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *page) raw(s string) {
	if p.err == nil {
		_, p.err = p.w.WriteString(s)
	}
}

func esc(s string) string { return html.EscapeString(s) }

func (p *page) head() {
	// The policy is the offline guarantee: nothing but this page's own
	// inline style and script, and in the live view requests to the
	// server that sent it.
	connect := "'none'"
	if p.opts.Live {
		connect = "'self'"
	}
	p.printf(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; connect-src %s">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hayloft run %s</title>
<style>%s</style></head>
<body data-run="%s" data-live="%t" data-status="%s" data-progress="%s">
`, connect, esc(p.run.ID), pageCSS, esc(p.run.ID), p.opts.Live, esc(p.run.Status), esc(p.opts.Progress))
}

func (p *page) header() {
	r := p.run
	p.printf(`<header><h1>hayloft run <code>%s</code></h1><dl class="meta">`, esc(r.ID))
	item := func(k, v string) { p.printf(`<dt>%s</dt><dd>%s</dd>`, esc(k), v) }
	item("config", "<code>"+esc(r.ConfigPath)+"</code>")
	item("config sha256", "<code>"+esc(r.ConfigHash)+"</code>")
	item("hayloft", esc(r.Version))
	item("status", `<span class="status">`+esc(r.Status)+`</span>`)
	item("started", esc(r.StartedAt.UTC().Format(time.RFC3339)))
	if !r.FinishedAt.IsZero() {
		item("took", esc(r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()))
	}
	if oh := max(p.opts.Overhead, r.OverheadUS); oh > 0 {
		item("kernel overhead", esc(fmt.Sprintf("%.0f µs/sample", oh)))
	}
	p.raw(`</dl>`)
	if p.opts.First != nil {
		p.raw(`<div class="hl-later" id="hl-ids"></div>`)
	} else {
		p.raw(identities(r))
	}
	if r.ConfigText != "" {
		p.printf(`<details><summary>config as run</summary><pre>%s</pre></details>`, esc(r.ConfigText))
	}
	p.raw("</header>\n")
}

// identities is the table of each model's identity: what answered, as
// journaled with its answers.
func identities(r *journal.Run) string {
	var b strings.Builder
	p := &page{w: bufio.NewWriter(&b)}
	seen := map[string]bool{}
	p.raw(`<table class="ids"><thead><tr><th>model</th><th>component</th><th>server model</th><th>endpoint</th><th>params</th></tr></thead><tbody>`)
	for _, ev := range r.Evals {
		if seen[ev.Model] {
			continue
		}
		seen[ev.Model] = true
		if ev.Identity == nil {
			p.printf(`<tr><td>%s</td><td colspan="4">no answer journaled</td></tr>`, esc(ev.Model))
			continue
		}
		id := ev.Identity
		params, _ := json.Marshal(id.Params)
		p.printf(`<tr><td>%s</td><td>%s/%s %s</td><td>%s</td><td>%s</td><td><code>%s</code></td></tr>`,
			esc(ev.Model), esc(id.Plugin), esc(id.Component), esc(id.PluginVersion), esc(id.Model), esc(id.Endpoint), esc(string(params)))
	}
	p.raw(`</tbody></table>`)
	p.w.Flush()
	return b.String()
}

func ci(m journal.Metric) string {
	if !m.HasValue() {
		return report.Missing
	}
	return fmt.Sprintf("[%.3f, %.3f]", m.CILow, m.CIHigh)
}

func (p *page) evals() {
	p.raw(`<section id="evals"><h2>Evals</h2>`)
	recomputed := false
	for k, ev := range p.run.Evals {
		p.printf(`<article class="eval" data-eval="%s"><h3>%s <small>%s · %s · retriever %s</small></h3>`,
			esc(ev.Name), esc(ev.Base), esc(ev.Task), esc(ev.Model), esc(ev.RetrieverName()))
		shown, failed := len(ev.Samples)-ev.Failed, ev.Failed
		if f := p.opts.First; f != nil {
			shown, failed = f.Shown[ev.Name], f.Failed[ev.Name]
		}
		p.printf(`<p class="counts">%d samples · %d failed</p>`, shown, failed)
		if p.pending(ev) {
			p.printf(`<div class="hl-later" id="hl-metrics-%d"></div>`, k)
		} else {
			p.raw(metricsTable(ev))
		}
		for _, m := range ev.Metrics {
			recomputed = recomputed || m.Recomputed
		}
		grid, plot := figures(ev)
		if p.opts.First != nil {
			grid = fmt.Sprintf(`<div class="hl-later" id="hl-grid-%d"></div>`, k)
			plot = fmt.Sprintf(`<div class="hl-later" id="hl-plot-%d"></div>`, k)
		}
		p.raw(grid)
		// Heatmaps the scorers drew from their own grid (Counting-Stars'
		// counting index × length).
		for _, m := range ev.Metrics {
			hs, err := sdk.HeatmapsOf(m.Details)
			if err != nil {
				p.printf(`<p class="note fail">%s: %s</p>`, esc(m.Scorer), esc(err.Error()))
				continue
			}
			for _, h := range hs {
				p.printf(`<figure class="scorer-heatmap" data-heatmap="%s"><figcaption>%s</figcaption>%s</figure>`, esc(h.ID), esc(h.Title), FigureHeatmap(h))
			}
		}
		p.raw(plot)
		p.raw("</article>\n")
	}
	if p.opts.First != nil && len(p.opts.First.Pending) > 0 {
		p.raw(`<div class="hl-later" id="hl-note"></div>`)
	} else if recomputed {
		p.raw(recomputedNote)
	}
	p.raw("</section>\n")
}

// recomputedNote explains the † of metrics recomputed from sample scores.
const recomputedNote = `<p class="note">† Recomputed from the journaled sample scores as plain means with a seeded 95% bootstrap CI; a scorer with its own aggregate (F1 over a corpus, Counting-Stars' cell mean) may report a different value in the run's summary.</p>`

// pending: the page is drawn from journal.LoadFirst and ev's metrics are
// recomputed from every sample later.
func (p *page) pending(ev *journal.Eval) bool {
	return p.opts.First != nil && p.opts.First.Pending[ev.Name]
}

// metricsTable is an eval's metrics with n, invalid and CIs.
func metricsTable(ev *journal.Eval) string {
	var b strings.Builder
	b.WriteString(`<table class="metrics"><thead><tr><th>scorer</th><th>value</th><th>95% CI</th><th>n</th><th>invalid</th></tr></thead><tbody>`)
	var notes []string
	for _, m := range ev.Metrics {
		val := report.Missing
		switch {
		case m.HasValue():
			val = fmt.Sprintf("%.3f", m.Value)
			if m.Recomputed {
				val += "<sup>†</sup>"
			}
		case m.N > 0:
			// The scorer declined one number: say why under the table.
			notes = append(notes, fmt.Sprintf(`<p class="note">%s: no single value: %s</p>`, esc(m.Scorer), esc(sdk.NoValueReason(m.Details))))
		}
		fmt.Fprintf(&b, `<tr><td>%s</td><td class="num">%s</td><td class="num">%s</td><td class="num">%d</td><td class="num">%d</td></tr>`,
			esc(m.Scorer), val, ci(m), m.N, m.Invalid)
	}
	b.WriteString(`</tbody></table>`)
	for _, n := range notes {
		b.WriteString(n)
	}
	return b.String()
}

// figures are an eval's length × depth heatmaps and its score-against-length
// plot, drawn from every sample.
func figures(ev *journal.Eval) (grid, plot string) {
	var b strings.Builder
	if len(ev.Lengths) >= 2 && len(ev.Depths) >= 2 {
		for i, name := range ev.Scorers {
			cells := ev.Grid(i)
			if len(cells) == 0 {
				continue
			}
			fmt.Fprintf(&b, `<figure><figcaption>%s: length × depth</figcaption>%s</figure>`, esc(name), Heatmap(cells, ev.Lengths, ev.Depths, name))
		}
	}
	if len(ev.Lengths) >= 2 {
		series := map[string][]journal.Cell{}
		for i, name := range ev.Scorers {
			series[name] = ev.ByLength(i)
		}
		if svg := LengthPlot(series, ev.Scorers); svg != "" {
			plot = fmt.Sprintf(`<figure><figcaption>score against context length</figcaption>%s</figure>`, svg)
		}
	}
	return b.String(), plot
}

// Later is the HTML of each place a page drawn with Options.First left
// for the server to fill, by element ID, drawn from the whole run as a page
// without First draws them.
func Later(ctx context.Context, st *store.Store, run *journal.Run) (map[string]string, error) {
	out := map[string]string{"hl-ids": identities(run), "hl-note": ""}
	for k, ev := range run.Evals {
		out[fmt.Sprintf("hl-grid-%d", k)], out[fmt.Sprintf("hl-plot-%d", k)] = figures(ev)
		out[fmt.Sprintf("hl-metrics-%d", k)] = metricsTable(ev)
		for _, m := range ev.Metrics {
			if m.Recomputed {
				out["hl-note"] = recomputedNote
			}
		}
	}
	var b strings.Builder
	p := &page{w: bufio.NewWriter(&b), run: run}
	p.ablation()
	p.w.Flush()
	out["hl-ablation"] = b.String()
	b.Reset()
	p = &page{w: bufio.NewWriter(&b), run: run}
	p.prefixCache(ctx, st)
	if p.err != nil {
		return nil, p.err
	}
	p.w.Flush()
	out["hl-prefix-cache"] = b.String()
	return out, nil
}

// ablation draws, for each eval and model that ran with more than one
// retriever, each metric per retriever and its difference from the
// full-context row.
func (p *page) ablation() {
	if p.opts.First != nil && len(p.opts.First.Pending) > 0 {
		// Some metrics are recomputed from every sample later.
		p.raw(`<div class="hl-later" id="hl-ablation"></div>`)
		return
	}
	type key struct{ base, model string }
	groups := map[key][]*journal.Eval{}
	var order []key
	for _, ev := range p.run.Evals {
		k := key{ev.Base, ev.Model}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], ev)
	}
	started := false
	for _, k := range order {
		evs := groups[k]
		if len(evs) < 2 {
			continue
		}
		if !started {
			p.raw(`<section id="ablation"><h2>Retrieval ablation</h2><p class="note">Δ is each metric minus the full-context row of the same eval and model.</p>`)
			started = true
		}
		// The full-context row, unless it failed: as the summary, a row
		// that ended in an error is no control to take Δ from.
		var control *journal.Eval
		for _, ev := range evs {
			if ev.Retriever == "" && ev.Outcome.Error == "" {
				control = ev
			}
		}
		scorers := evs[0].Scorers
		p.printf(`<h3>%s · %s</h3><table class="ablation"><thead><tr><th>retriever</th>`, esc(k.base), esc(k.model))
		for _, s := range scorers {
			p.printf(`<th>%s</th><th>Δ</th>`, esc(s))
		}
		p.raw(`</tr></thead><tbody>`)
		for _, ev := range evs {
			p.printf(`<tr><td>%s</td>`, esc(ev.RetrieverName()))
			for i := range scorers {
				m := ev.Metrics[i]
				if !m.HasValue() {
					p.printf(`<td class="num">%s</td><td class="num">%s</td>`, report.Missing, report.Missing)
					continue
				}
				d := report.Missing
				if control != nil && control != ev && ev.Outcome.Error == "" && i < len(control.Metrics) && control.Metrics[i].HasValue() {
					d = fmt.Sprintf("%+.3f", m.Value-control.Metrics[i].Value)
				}
				mark := ""
				if m.Recomputed {
					mark = "<sup>†</sup>"
				}
				p.printf(`<td class="num">%.3f%s</td><td class="num delta">%s</td>`, m.Value, mark, d)
			}
			p.raw(`</tr>`)
		}
		p.raw(`</tbody></table>`)
	}
	if started {
		p.raw("</section>\n")
	}
}

// tables draws every benchmark table, merged across evals. Value cells are
// tinted on the heatmap scale so a grid table reads as a heatmap.
func (p *page) tables() {
	if len(p.run.Tables) == 0 {
		return
	}
	p.raw(`<section id="tables"><h2>Benchmark tables</h2>`)
	for _, t := range p.run.Tables {
		title := t.Title
		if title == "" {
			title = t.ID
		}
		p.printf(`<h3>%s</h3><table class="bench" data-table="%s"><thead>`, esc(title), esc(t.ID))
		if hasGroups(t) {
			p.raw(`<tr><th></th>`)
			for j := 0; j < len(t.Columns); {
				k := j
				for k < len(t.Columns) && t.Columns[k].Group == t.Columns[j].Group {
					k++
				}
				p.printf(`<th colspan="%d" class="group">%s</th>`, k-j, esc(t.Columns[j].Group))
				j = k
			}
			p.raw(`</tr>`)
		}
		p.raw(`<tr><th></th>`)
		for _, c := range t.Columns {
			p.printf(`<th>%s</th>`, esc(c.Label))
		}
		p.raw(`</tr></thead><tbody>`)
		norms := columnNorms(t)
		for _, r := range t.Rows {
			p.printf(`<tr><th>%s</th>`, esc(r.Label))
			for j, c := range t.Columns {
				cell := r.Cells[c.Key]
				style := ""
				if cell.Value != nil && norms[j] != nil {
					style = fmt.Sprintf(` style="background:%s"`, tint(Colour(norms[j](*cell.Value))))
				}
				title := ""
				if cell.N > 0 {
					title = fmt.Sprintf(` title="n=%d"`, cell.N)
				}
				p.printf(`<td class="num"%s%s>%s</td>`, style, title, esc(report.FormatCell(c, cell)))
			}
			p.raw(`</tr>`)
		}
		p.raw(`</tbody></table>`)
		for _, n := range t.Notes {
			p.printf(`<p class="note">%s</p>`, esc(n))
		}
	}
	p.raw("</section>\n")
}

func hasGroups(t sdk.Table) bool {
	for _, c := range t.Columns {
		if c.Group != "" {
			return true
		}
	}
	return false
}

// columnNorms gives each value column a colour mapping; ranks get none (a
// rank's colour would repeat the mean's).
func columnNorms(t sdk.Table) []func(float64) float64 {
	out := make([]func(float64) float64, len(t.Columns))
	for j, c := range t.Columns {
		if c.Key == sdk.DerivedRank || c.Key == sdk.DerivedMeanRank {
			continue
		}
		var vals []float64
		for _, r := range t.Rows {
			if v := r.Cells[c.Key].Value; v != nil {
				vals = append(vals, *v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		out[j], _ = normaliser(vals, c.LowerIsBetter)
	}
	return out
}

// tint lightens a scale colour so black text stays readable on it.
func tint(hex string) string {
	v, _ := strconv.ParseUint(hex[1:], 16, 32)
	r, g, b := float64(v>>16&0xff), float64(v>>8&0xff), float64(v&0xff)
	mix := func(c float64) int { return int(math.Round(c*0.55 + 255*0.45)) }
	return fmt.Sprintf("#%02x%02x%02x", mix(r), mix(g), mix(b))
}

func (p *page) browserShell() {
	p.raw(`<section id="samples"><h2>Samples</h2>
<form id="filters" onsubmit="return false">
<label>eval <select id="f-eval"><option value="">all</option></select></label>
<label>model <select id="f-model"><option value="">all</option></select></label>
<label>retriever <select id="f-retriever"><option value="">all</option></select></label>
<label>scorer <select id="f-scorer"></select></label>
<label>score ≥ <input id="f-min" type="number" step="any" size="5"></label>
<label>≤ <input id="f-max" type="number" step="any" size="5"></label>
<label>error <select id="f-error"><option value="">any</option><option value="1">failed</option><option value="0">answered</option><option value="invalid">invalid score</option></select></label>
<label>length <select id="f-length"><option value="">all</option></select></label>
<label>depth <select id="f-depth"><option value="">all</option></select></label>
<label>id <input id="f-id" type="search" size="12"></label>
</form>
<p id="count"></p>
<table id="list"><thead><tr><th>eval</th><th>model</th><th>retriever</th><th>sample</th><th>length</th><th>depth</th><th>score</th><th>status</th></tr></thead><tbody></tbody></table>
<p class="pager"><button id="prev" type="button">◀ previous</button> <span id="page"></span> <button id="next" type="button">next ▶</button></p>
<div id="detail" hidden></div>
</section>
`)
}

// index writes the sample index the browser filters: one entry per sample,
// column by column, so 200,000 samples parse at once. encoded is the index
// as WriteIndex wrote it, if it was written beforehand.
func (p *page) index(encoded []byte) {
	p.raw(`<script type="application/json" id="hl-index">`)
	if p.err == nil && encoded != nil {
		_, p.err = p.w.Write(encoded)
	} else if p.err == nil {
		p.err = WriteIndex(p.w, p.run, p.opts.ChunkSize, p.opts.First)
	}
	p.raw("</script>\n")
}

// evalIdx is one eval of the sample index, as the page reads it.
type evalIdx struct {
	Name      string   `json:"name"`
	Base      string   `json:"base"`
	Model     string   `json:"model"`
	Retriever string   `json:"retriever"`
	Scorers   []string `json:"scorers"`
}

// WriteIndex writes the JSON sample index of run that a page filters, with
// chunk samples per block of embedded details. With first, run holds only
// the run's first samples (journal.LoadFirst): the index says so
// ("partial") and how many the whole one has ("total").
func WriteIndex(w io.Writer, run *journal.Run, chunk int, first *journal.First) error {
	var (
		evals       []evalIdx
		scorerNames []string
		n           int
	)
	scorerSet := map[string]bool{}
	for _, ev := range run.Evals {
		evals = append(evals, evalIdx{ev.Name, ev.Base, ev.Model, ev.RetrieverName(), ev.Scorers})
		n += len(ev.Samples)
		for _, s := range ev.Scorers {
			if !scorerSet[s] {
				scorerSet[s] = true
				scorerNames = append(scorerNames, s)
			}
		}
	}
	evalsJSON, err := json.Marshal(evals)
	if err != nil {
		return err
	}
	scorersJSON, err := json.Marshal(scorerNames)
	if err != nil {
		return err
	}
	// The columns are written here rather than by encoding/json, which
	// took a pointer per sample and score for the nulls: the index is the
	// one thing a report writes of every sample at once. The object is as
	// encoding/json writes it (keys sorted, < > & escaped, nil lists as
	// null, a newline after it), so pages stay byte for byte as they were.
	b := make([]byte, 0, 64*n+1024)
	// column appends the list of one value per sample, each written by
	// val with its eval's position in run.Evals.
	column := func(b []byte, val func(b []byte, e int, s *journal.Sample) []byte) []byte {
		if n == 0 {
			return append(b, "null"...)
		}
		b = append(b, '[')
		first := true
		for e, ev := range run.Evals {
			for _, s := range ev.Samples {
				if !first {
					b = append(b, ',')
				}
				first = false
				b = val(b, e, s)
			}
		}
		return append(b, ']')
	}
	num := func(b []byte, v int) []byte { return strconv.AppendInt(b, int64(v), 10) }
	b = append(b, `{"chunk":`...)
	b = num(b, chunk)
	b = append(b, `,"depth":`...)
	b = column(b, func(b []byte, _ int, s *journal.Sample) []byte {
		if s.Depth < 0 {
			return append(b, "null"...)
		}
		return appendFloat(b, s.Depth)
	})
	b = append(b, `,"e":`...)
	b = column(b, func(b []byte, e int, _ *journal.Sample) []byte { return num(b, e) })
	b = append(b, `,"evals":`...)
	b = append(b, evalsJSON...)
	b = append(b, `,"failed":`...)
	b = column(b, func(b []byte, _ int, s *journal.Sample) []byte { return num(b, b2i(s.Failed)) })
	b = append(b, `,"id":`...)
	b = column(b, func(b []byte, _ int, s *journal.Sample) []byte { return appendString(b, s.ID) })
	// Each scorer's column of one eval, by its place in the eval's.
	sorted := slices.Sorted(slices.Values(scorerNames))
	place := make([][]int, len(run.Evals))
	for e, ev := range run.Evals {
		for _, name := range sorted {
			place[e] = append(place[e], slices.Index(ev.Scorers, name))
		}
	}
	byScorer := func(b []byte, val func(b []byte, sc *journal.Score) []byte) []byte {
		b = append(b, '{')
		for k, name := range sorted {
			if n == 0 {
				break // a scorer's column is there once it has a sample
			}
			if k > 0 {
				b = append(b, ',')
			}
			b = appendString(b, name)
			b = append(b, ':')
			b = column(b, func(b []byte, e int, s *journal.Sample) []byte {
				var sc *journal.Score
				if j := place[e][k]; j >= 0 && s.Scores[j].Has {
					sc = &s.Scores[j]
				}
				return val(b, sc)
			})
		}
		return append(b, '}')
	}
	b = append(b, `,"invalid":`...)
	b = byScorer(b, func(b []byte, sc *journal.Score) []byte {
		if sc == nil {
			return append(b, '0')
		}
		return num(b, b2i(sc.Invalid))
	})
	b = append(b, `,"len":`...)
	b = column(b, func(b []byte, _ int, s *journal.Sample) []byte { return num(b, s.Length) })
	if first != nil {
		b = append(b, `,"partial":true`...)
	}
	b = append(b, `,"scorers":`...)
	b = append(b, scorersJSON...)
	b = append(b, `,"scores":`...)
	b = byScorer(b, func(b []byte, sc *journal.Score) []byte {
		if sc == nil {
			return append(b, "null"...)
		}
		return appendFloat(b, sc.Value)
	})
	if first != nil {
		b = append(b, `,"total":`...)
		b = num(b, first.Total)
	}
	b = append(b, `,"truncated":`...)
	b = column(b, func(b []byte, _ int, s *journal.Sample) []byte { return num(b, b2i(s.Truncated)) })
	b = append(b, "}\n"...)
	_, err = w.Write(b)
	return err
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
