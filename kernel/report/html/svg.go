package html

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/sdk"
)

// The red → yellow → green scale of the usual needle-in-a-haystack heatmaps:
// 0 is red, 0.5 yellow, 1 green.
var stops = [3][3]float64{{0xF0, 0x49, 0x6E}, {0xEB, 0xB8, 0x39}, {0x0C, 0xD7, 0x9F}}

// Colour is the scale's colour for v in [0, 1] (clamped), as #rrggbb.
func Colour(v float64) string {
	if math.IsNaN(v) {
		return "#cccccc"
	}
	v = min(max(v, 0), 1)
	a, b, t := stops[0], stops[1], v*2
	if v > 0.5 {
		a, b, t = stops[1], stops[2], (v-0.5)*2
	}
	var c [3]int
	for i := range c {
		c[i] = int(math.Round(a[i] + (b[i]-a[i])*t))
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2])
}

// normaliser maps a metric's values onto [0, 1] for colour: as they are when
// they already lie there (accuracies, F1), else min–max over the values shown,
// reversed for metrics where lower is better.
func normaliser(vals []float64, lowerIsBetter bool) (func(float64) float64, bool) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo >= 0 && hi <= 1 && !lowerIsBetter {
		return func(v float64) float64 { return v }, true
	}
	span := hi - lo
	return func(v float64) float64 {
		if span == 0 {
			return 1
		}
		x := (v - lo) / span
		if lowerIsBetter {
			x = 1 - x
		}
		return x
	}, false
}

// grid is a heatmap to draw: columns along x, rows down y.
type grid struct {
	aria           string
	xLabel, yLabel string
	xKeys, yKeys   []string // each position's key, for data-x and data-y
	xTicks, yTicks []string // what is printed along the axes
	cells          []gridCell
	lowerIsBetter  bool
}

type gridCell struct {
	col, row int
	value    float64
	n        int    // samples; 0 when not known
	attrs    string // further attributes of the cell (escaped)
	title    string // what hovering shows (unescaped)
}

// draw draws the grid as SVG: one rect per cell with a value (class
// hm-cell, data-x, data-y and data-value for tests and scripts), its value
// on hover, and a legend of the scale. Large grids get smaller cells and
// every k-th tick label.
func (g grid) draw() string {
	cw := min(44, max(14, 900/max(1, len(g.xTicks))))
	ch := min(22, max(10, 560/max(1, len(g.yTicks))))
	left, top := 64, 10
	w := max(left+cw*len(g.xTicks)+90, 300)
	h := top + ch*len(g.yTicks) + 40
	vals := make([]float64, len(g.cells))
	for i, c := range g.cells {
		vals[i] = c.value
	}
	norm, identity := normaliser(vals, g.lowerIsBetter)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="heatmap" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s">`, w, h, esc(g.aria))
	ystep := (14 + ch - 1) / ch
	for i, t := range g.yTicks {
		if i%ystep == 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" class="ax" text-anchor="end">%s</text>`, left-6, top+ch*i+ch/2+4, esc(t))
		}
	}
	xstep := (34 + cw - 1) / cw
	for i, t := range g.xTicks {
		if i%xstep == 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" class="ax" text-anchor="middle">%s</text>`, left+cw*i+cw/2, top+ch*len(g.yTicks)+14, esc(t))
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="ax" text-anchor="middle">%s · rows: %s</text>`, left+cw*len(g.xTicks)/2, top+ch*len(g.yTicks)+32, esc(g.xLabel), esc(g.yLabel))
	for _, c := range g.cells {
		x, y := left+cw*c.col, top+ch*c.row
		n := ""
		if c.n > 0 {
			n = fmt.Sprintf(" (n=%d)", c.n)
		}
		fmt.Fprintf(&b, `<rect class="hm-cell" x="%d" y="%d" width="%d" height="%d" fill="%s" data-x="%s" data-y="%s"%s data-value="%s"><title>%s: %.3f%s</title></rect>`,
			x, y, cw-1, ch-1, Colour(norm(c.value)), esc(g.xKeys[c.col]), esc(g.yKeys[c.row]), c.attrs, strconv.FormatFloat(c.value, 'f', -1, 64),
			esc(c.title), c.value, n)
	}
	// The legend: the scale's colours and what they stand for.
	lx := left + cw*len(g.xTicks) + 16
	lo, hi := 0.0, 1.0
	if !identity && len(vals) > 0 {
		lo, hi = vals[0], vals[0]
		for _, v := range vals {
			lo, hi = min(lo, v), max(hi, v)
		}
		if g.lowerIsBetter {
			lo, hi = hi, lo
		}
	}
	const steps = 5
	for i := range steps {
		t := float64(steps-1-i) / (steps - 1)
		fmt.Fprintf(&b, `<rect class="hm-legend" x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d" class="ax">%s</text>`,
			lx, top+14*i, Colour(t), lx+16, top+14*i+10, strconv.FormatFloat(lo+(hi-lo)*t, 'g', 3, 64))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// Heatmap draws the length × depth grid of an eval's scorer as SVG: one rect
// per grid point with a sample score (also data-length and data-depth), its
// value on hover.
func Heatmap(cells []journal.Cell, lengths []int, depths []float64, scorer string) string {
	g := grid{aria: scorer + " by context length and depth", xLabel: "context length (tokens)", yLabel: "evidence depth"}
	col := map[int]int{}
	for i, l := range lengths {
		col[l] = i
		g.xKeys = append(g.xKeys, strconv.Itoa(l))
		g.xTicks = append(g.xTicks, shortLen(l))
	}
	row := map[float64]int{}
	for i, d := range depths {
		row[d] = i
		g.yKeys = append(g.yKeys, strconv.FormatFloat(d, 'f', -1, 64))
		g.yTicks = append(g.yTicks, depthPercent(d))
	}
	for _, c := range cells {
		g.cells = append(g.cells, gridCell{col: col[c.Length], row: row[c.Depth], value: c.Mean, n: c.N,
			attrs: fmt.Sprintf(` data-length="%d" data-depth="%s"`, c.Length, strconv.FormatFloat(c.Depth, 'f', -1, 64)),
			title: fmt.Sprintf("length %d, depth %s", c.Length, depthPercent(c.Depth))})
	}
	return g.draw()
}

// depthPercent labels a depth (a fraction) as a percentage to 0.1%, as the
// sample browser's depth column and filter do (page.js): depths are often
// computed (3 × 0.111 is 0.33300000000000004), and all their digits
// overflow the axis.
func depthPercent(d float64) string {
	return strconv.FormatFloat(math.Round(d*1000)/10, 'f', -1, 64) + "%"
}

// FigureHeatmap draws a heatmap a scorer offers (sdk.Heatmap) as SVG, as
// Heatmap draws the samples' length × depth grid.
func FigureHeatmap(h sdk.Heatmap) string {
	g := grid{aria: h.Title, xLabel: h.X.Label, yLabel: h.Y.Label, xKeys: h.X.Keys, yKeys: h.Y.Keys, lowerIsBetter: h.LowerIsBetter}
	for i := range h.X.Keys {
		g.xTicks = append(g.xTicks, h.X.TickLabel(i))
	}
	for i := range h.Y.Keys {
		g.yTicks = append(g.yTicks, h.Y.TickLabel(i))
	}
	for i, row := range h.Values {
		for j, v := range row {
			if v == nil {
				continue
			}
			c := gridCell{col: j, row: i, value: *v,
				title: fmt.Sprintf("%s %s, %s %s", h.Y.Label, h.Y.TickLabel(i), h.X.Label, h.X.TickLabel(j))}
			if i < len(h.N) && j < len(h.N[i]) {
				c.n = h.N[i][j]
			}
			g.cells = append(g.cells, c)
		}
	}
	return g.draw()
}

// LengthPlot draws each series' mean score against context length as SVG
// lines on a shared 0–1 axis (or the values' own range when outside it).
func LengthPlot(series map[string][]journal.Cell, order []string) string {
	const w, h, left, right, top, bottom = 560, 240, 48, 150, 10, 34
	var lengths []int
	seen := map[int]bool{}
	var all []float64
	for _, name := range order {
		for _, c := range series[name] {
			if !seen[c.Length] {
				seen[c.Length] = true
				lengths = append(lengths, c.Length)
			}
			all = append(all, c.Mean)
		}
	}
	if len(lengths) < 2 {
		return ""
	}
	lo, hi := 0.0, 1.0
	for _, v := range all {
		lo, hi = min(lo, v), max(hi, v)
	}
	minL, maxL := lengths[0], lengths[0]
	for _, l := range lengths {
		minL, maxL = min(minL, l), max(maxL, l)
	}
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	x := func(l int) float64 { return float64(left) + pw*float64(l-minL)/float64(max(1, maxL-minL)) }
	y := func(v float64) float64 { return float64(top) + ph*(1-(v-lo)/(hi-lo)) }
	palette := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="lineplot" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="score against context length">`, w, h)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`, left, top, pw, ph)
	for _, v := range []float64{lo, (lo + hi) / 2, hi} {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="ax" text-anchor="end">%.2f</text>`, left-4, y(v)+4, v)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="ax">%s</text>`, left, h-18, shortLen(minL))
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" class="ax" text-anchor="end">%s</text>`, x(maxL), h-18, shortLen(maxL))
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" class="ax" text-anchor="middle">context length (tokens)</text>`, float64(left)+pw/2, h-4)
	for i, name := range order {
		c := palette[i%len(palette)]
		var pts []string
		for _, p := range series[name] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.Length), y(p.Mean)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, c, strings.Join(pts, " "))
		for _, p := range series[name] {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s at %d: %.3f (n=%d)</title></circle>`, x(p.Length), y(p.Mean), c, esc(name), p.Length, p.Mean, p.N)
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" class="ax">%s</text>`,
			w-right+10, top+16*i, c, w-right+24, top+16*i+9, esc(name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// shortLen writes a token count as the papers do: 4K, 128K, 1M, or as it is
// below 1000 or when not a round thousand.
func shortLen(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "K"
	case n >= 1000:
		return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + "K"
	}
	return strconv.Itoa(n)
}
