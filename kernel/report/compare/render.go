package compare

import (
	"fmt"
	"html"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes the comparison as one short table per pair.
func WriteText(w io.Writer, pairs []*Pair) error {
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s\n  A = %s\n  B = %s\n", p.Name, p.A, p.B)
		tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "  scorer\tshared\tA\tB\tB−A\t95% CI\tbetter\tworse\t\n")
		for _, m := range p.Metrics {
			fmt.Fprint(tw, row(m), "\n")
		}
		tw.Flush()
		for _, m := range p.Metrics {
			for _, n := range notes(m) {
				fmt.Fprintf(&b, "  %s\n", n)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// notes are what a reader must know to read m's row: what its columns are
// over, when not the shared samples' scores, and which way is better.
func notes(m *Metric) []string {
	var out []string
	switch {
	case m.NotPerSample != "" && (m.ValueA == nil || m.ValueB == nil):
		out = append(out, fmt.Sprintf("%s: no two numbers to compare: %s; compare the rows' tables (hayloft report)", m.Scorer, m.NotPerSample))
	case m.NotPerSample != "":
		out = append(out, fmt.Sprintf("%s: A and B are the rows' own aggregates over all their samples, and B−A their difference, with no paired interval: %s", m.Scorer, m.NotPerSample))
	case m.Unchecked:
		out = append(out, fmt.Sprintf("%s: neither row journaled its aggregate (unfinished runs): the figures are recomputed from sample scores and assume, unchecked, that the scorer's aggregate is their mean (not so for corpus BLEU or XLBench)", m.Scorer))
	}
	if m.NotPerSample == "" && (m.OnlyA > 0 || m.OnlyB > 0) {
		out = append(out, fmt.Sprintf("%s: %d samples scored only in A and %d only in B are left out", m.Scorer, m.OnlyA, m.OnlyB))
	}
	if m.LowerIsBetter && m.Paired != nil {
		out = append(out, fmt.Sprintf("%s: lower is better; better and worse count lower scores as better", m.Scorer))
	}
	return out
}

// aggregates are m's A, B and B−A when they are the rows' aggregates.
func aggregates(m *Metric) (a, b, d string) {
	a, b, d = "–", "–", "–"
	if m.ValueA != nil {
		a = fmt.Sprintf("%.3f", *m.ValueA)
	}
	if m.ValueB != nil {
		b = fmt.Sprintf("%.3f", *m.ValueB)
	}
	if m.ValueA != nil && m.ValueB != nil {
		d = fmt.Sprintf("%+.3f", *m.ValueB-*m.ValueA)
	}
	return a, b, d
}

func row(m *Metric) string {
	if m.NotPerSample != "" {
		a, b, d := aggregates(m)
		return fmt.Sprintf("  %s\t%d\t%s\t%s\t%s\t–\t–\t–\t", m.Scorer, m.Shared, a, b, d)
	}
	if m.Paired == nil {
		return fmt.Sprintf("  %s\t0\t–\t–\t–\t–\t–\t–\t", m.Scorer)
	}
	return fmt.Sprintf("  %s\t%d\t%.3f\t%.3f\t%+.3f\t[%+.3f, %+.3f]\t%d\t%d\t",
		m.Scorer, m.Shared, m.MeanA, m.MeanB, m.Diff, m.CILow, m.CIHigh, m.Better, m.Worse)
}

// WriteHTML writes the comparison as a self-contained page.
func WriteHTML(w io.Writer, pairs []*Pair) error {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>hayloft compare</title><style>body{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}
td,th{border:1px solid #ddd;padding:2px 6px}td.num{text-align:right;font-variant-numeric:tabular-nums}.note{color:#666}</style></head><body><h1>hayloft compare</h1>`)
	for _, p := range pairs {
		fmt.Fprintf(&b, `<h2>%s</h2><p>A = <code>%s</code><br>B = <code>%s</code></p>`, html.EscapeString(p.Name), html.EscapeString(p.A), html.EscapeString(p.B))
		b.WriteString(`<table><thead><tr><th>scorer</th><th>shared</th><th>A</th><th>B</th><th>B−A</th><th>95% paired CI</th><th>better in B</th><th>worse in B</th><th>only A</th><th>only B</th></tr></thead><tbody>`)
		for _, m := range p.Metrics {
			switch {
			case m.NotPerSample != "":
				va, vb, d := aggregates(m)
				fmt.Fprintf(&b, `<tr><td>%s</td><td class="num">%d</td><td class="num">%s</td><td class="num">%s</td><td class="num">%s</td><td class="num">–</td><td class="num">–</td><td class="num">–</td><td class="num">%d</td><td class="num">%d</td></tr>`,
					html.EscapeString(m.Scorer), m.Shared, va, vb, d, m.OnlyA, m.OnlyB)
			case m.Paired == nil:
				fmt.Fprintf(&b, `<tr><td>%s</td><td class="num">0</td><td colspan="8">no shared sample</td></tr>`, html.EscapeString(m.Scorer))
			default:
				fmt.Fprintf(&b, `<tr><td>%s</td><td class="num">%d</td><td class="num">%.3f</td><td class="num">%.3f</td><td class="num">%+.3f</td><td class="num">[%+.3f, %+.3f]</td><td class="num">%d</td><td class="num">%d</td><td class="num">%d</td><td class="num">%d</td></tr>`,
					html.EscapeString(m.Scorer), m.Shared, m.MeanA, m.MeanB, m.Diff, m.CILow, m.CIHigh, m.Better, m.Worse, m.OnlyA, m.OnlyB)
			}
		}
		b.WriteString(`</tbody></table>`)
		for _, m := range p.Metrics {
			for _, n := range notes(m) {
				fmt.Fprintf(&b, `<p class="note">%s</p>`, html.EscapeString(n))
			}
		}
	}
	b.WriteString(`<p class="note">Means and differences are over the samples both sides scored validly, unless a note says a scorer's are the rows' own aggregates; the CI resamples those samples with their two scores together (paired bootstrap, 1000 resamples, fixed seed).</p></body></html>`)
	_, err := io.WriteString(w, b.String())
	return err
}
