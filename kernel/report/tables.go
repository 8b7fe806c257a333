package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hayloft/hayloft/sdk"
)

// TableSource is the tables one eval row's scorers returned, with the label
// that stands for that row's model (and retriever) in sdk.ModelSlot.
type TableSource struct {
	Model  string
	Tables []sdk.Table
}

// Default labels of the derived columns. A table names its own by listing a
// column whose Key is the derived name (Counting-Stars' "Average Score"):
// that column's label, decimals and LowerIsBetter are used, its cells are
// always computed.
var derivedLabels = map[string]string{
	sdk.DerivedMean:     "Mean",
	sdk.DerivedRank:     "Rank",
	sdk.DerivedMeanRank: "Mean rank",
}

// MergeTables merges the tables of a run's eval rows: tables sharing an ID
// become one, rows with the same label (after sdk.ModelSlot is replaced by
// the source's Model) are joined cell by cell, columns are the union in
// first-seen order. The derived columns each table asks for are then
// computed and appended as ordinary columns, so every renderer (terminal,
// JSON, HTML) shows the same numbers. Tables keep the order their IDs were
// first seen in. When two sources give the same cell, the first stands and
// the table gets a note saying so.
func MergeTables(srcs []TableSource) []sdk.Table {
	var order []string
	byID := map[string]*merging{}
	for _, src := range srcs {
		for _, t := range src.Tables {
			m := byID[t.ID]
			if m == nil {
				m = &merging{t: sdk.Table{ID: t.ID, Title: t.Title}, cols: map[string]bool{}, rows: map[string]int{}}
				byID[t.ID] = m
				order = append(order, t.ID)
			}
			m.add(src.Model, t)
		}
	}
	out := make([]sdk.Table, 0, len(order))
	for _, id := range order {
		t := byID[id].t
		derive(&t)
		out = append(out, t)
	}
	return out
}

type merging struct {
	t    sdk.Table
	cols map[string]bool
	rows map[string]int // label → index in t.Rows
}

func (m *merging) add(model string, t sdk.Table) {
	if m.t.Title == "" {
		m.t.Title = t.Title
	}
	for _, c := range t.Columns {
		if !m.cols[c.Key] {
			m.cols[c.Key] = true
			m.t.Columns = append(m.t.Columns, c)
		}
	}
	for _, d := range t.Derived {
		if !slices.Contains(m.t.Derived, d) {
			m.t.Derived = append(m.t.Derived, d)
		}
	}
	for _, n := range t.Notes {
		m.note(n)
	}
	for _, r := range t.Rows {
		label := strings.ReplaceAll(r.Label, sdk.ModelSlot, model)
		i, ok := m.rows[label]
		if !ok {
			i = len(m.t.Rows)
			m.rows[label] = i
			m.t.Rows = append(m.t.Rows, sdk.Row{Label: label, Cells: map[string]sdk.Cell{}})
		}
		cells := m.t.Rows[i].Cells
		for _, k := range sortedKeys(r.Cells) {
			if _, dup := cells[k]; dup {
				m.note(fmt.Sprintf("row %q column %q was given by more than one eval; the first is shown", label, k))
				continue
			}
			cells[k] = r.Cells[k]
		}
	}
}

func (m *merging) note(n string) {
	if !slices.Contains(m.t.Notes, n) {
		m.t.Notes = append(m.t.Notes, n)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func isDerived(key string) bool {
	_, ok := derivedLabels[key]
	return ok
}

// derive computes t's derived columns in place. The value columns are every
// column that is not itself derived.
func derive(t *sdk.Table) {
	if len(t.Derived) == 0 {
		return
	}
	var values []sdk.Column
	given := map[string]sdk.Column{}
	for _, c := range t.Columns {
		if isDerived(c.Key) {
			given[c.Key] = c
		} else {
			values = append(values, c)
		}
	}
	decimals := 0
	for _, c := range values {
		decimals = max(decimals, c.Decimals)
	}
	col := func(key string, dec int) sdk.Column {
		if c, ok := given[key]; ok {
			return c
		}
		c := sdk.Column{Key: key, Label: derivedLabels[key], Decimals: dec}
		if len(values) > 0 && key == sdk.DerivedMean {
			c.Scale, c.LowerIsBetter = values[0].Scale, values[0].LowerIsBetter
		}
		return c
	}
	cols := values
	means := make([]*float64, len(t.Rows))
	for i, r := range t.Rows {
		if m, ok := rowMean(r, values); ok {
			means[i] = &m
		}
	}
	meanCol := col(sdk.DerivedMean, decimals)
	for _, d := range t.Derived {
		switch d {
		case sdk.DerivedMean:
			cols = append(cols, meanCol)
			for i, r := range t.Rows {
				setOrDelete(r.Cells, d, means[i])
			}
		case sdk.DerivedRank:
			cols = append(cols, col(d, 0))
			ranks := competitionRanks(means, meanCol)
			for i, r := range t.Rows {
				setOrDelete(r.Cells, d, ranks[i])
			}
		case sdk.DerivedMeanRank:
			cols = append(cols, col(d, 2))
			sums := make([]float64, len(t.Rows))
			complete := make([]bool, len(t.Rows))
			for i, r := range t.Rows {
				complete[i] = hasAll(r, values)
			}
			for _, c := range values {
				vals := make([]*float64, len(t.Rows))
				for i, r := range t.Rows {
					if complete[i] {
						vals[i] = r.Cells[c.Key].Value
					}
				}
				for i, rk := range competitionRanks(vals, c) {
					if rk != nil {
						sums[i] += *rk
					}
				}
			}
			for i, r := range t.Rows {
				var v *float64
				if complete[i] && len(values) > 0 {
					m := sums[i] / float64(len(values))
					v = &m
				}
				setOrDelete(r.Cells, d, v)
			}
		}
	}
	t.Columns = cols
}

func setOrDelete(cells map[string]sdk.Cell, key string, v *float64) {
	if v == nil {
		delete(cells, key)
		return
	}
	cells[key] = sdk.Val(*v, 0)
}

func hasAll(r sdk.Row, cols []sdk.Column) bool {
	for _, c := range cols {
		if r.Cells[c.Key].Value == nil {
			return false
		}
	}
	return len(cols) > 0
}

// rowMean is the mean of r's values over cols; none when any column has no
// value in r: a mean over fewer columns would rank a model that skipped its
// hardest task above one that ran it.
func rowMean(r sdk.Row, cols []sdk.Column) (float64, bool) {
	if !hasAll(r, cols) {
		return 0, false
	}
	sum := 0.0
	for _, c := range cols {
		sum += *r.Cells[c.Key].Value
	}
	return sum / float64(len(cols)), true
}

// competitionRanks ranks vals (nil: no rank) with standard competition
// ranking (1, 1, 3), best first by c's direction. Values are compared as c
// displays them, so two rows a reader sees as equal share a rank.
func competitionRanks(vals []*float64, c sdk.Column) []*float64 {
	shown := make([]float64, len(vals))
	for i, v := range vals {
		if v != nil {
			shown[i] = roundShown(*v, c)
		}
	}
	out := make([]*float64, len(vals))
	for i, v := range vals {
		if v == nil {
			continue
		}
		rank := 1.0
		for j, w := range vals {
			if w == nil || j == i {
				continue
			}
			if better(shown[j], shown[i], c.LowerIsBetter) {
				rank++
			}
		}
		out[i] = &rank
	}
	return out
}

func better(a, b float64, lower bool) bool {
	if lower {
		return a < b
	}
	return a > b
}

func roundShown(v float64, c sdk.Column) float64 {
	p := math.Pow(10, float64(c.Decimals))
	return math.Round(v*scale(c)*p) / p
}

func scale(c sdk.Column) float64 {
	if c.Scale == 0 {
		return 1
	}
	return c.Scale
}

// Missing is what a cell without a value shows.
const Missing = "–"

// FormatCell is a cell as every report shows it: its Text when set, else its
// value scaled and rounded to the column's decimals ("<1" under a Floor),
// else Missing.
func FormatCell(c sdk.Column, cell sdk.Cell) string {
	if cell.Text != "" {
		return cell.Text
	}
	if cell.Value == nil {
		return Missing
	}
	v := *cell.Value * scale(c)
	// Under the floor by its value, not by its rounding ("<1" for 0.996 on
	// XLBench's ×100 scale, as the spec says, not "1.00"); the margin keeps
	// a score of exactly the floor, computed with a rounding error, at it.
	if c.Floor > 0 && v < c.Floor-1e-9 {
		return "<" + strconv.FormatFloat(c.Floor, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', c.Decimals, 64)
}

// RenderTable writes t as aligned text no wider than width (when it can be:
// a single column wider than width is not cut). Columns that do not fit are
// continued in further blocks, each repeating the row labels, rather than
// wrapped inside a row, so each block reads as a table of its own. Group
// headers are printed over the columns they span.
func RenderTable(w io.Writer, t sdk.Table, width int) error {
	title := t.Title
	if title == "" {
		title = t.ID
	}
	labels := make([]string, len(t.Rows))
	labelW := 0
	for i, r := range t.Rows {
		labels[i] = r.Label
		labelW = max(labelW, utf8.RuneCountInString(r.Label))
	}
	// Long labels (a model reference with a retriever) would leave no room
	// for values; cut them in the middle, keeping both ends.
	maxLabel := max(12, width*2/5)
	if labelW > maxLabel {
		labelW = maxLabel
		for i := range labels {
			labels[i] = middleCut(labels[i], maxLabel)
		}
	}
	cells := make([][]string, len(t.Columns))
	colW := make([]int, len(t.Columns))
	for j, c := range t.Columns {
		cells[j] = make([]string, len(t.Rows))
		colW[j] = utf8.RuneCountInString(c.Label)
		for i, r := range t.Rows {
			cells[j][i] = FormatCell(c, r.Cells[c.Key])
			colW[j] = max(colW[j], utf8.RuneCountInString(cells[j][i]))
		}
	}
	// A group's name must fit over its columns: widen the group's last
	// column when the name is longer than the columns it spans.
	for j := 0; j < len(t.Columns); {
		k, span := j, -2
		for k < len(t.Columns) && t.Columns[k].Group == t.Columns[j].Group {
			span += 2 + colW[k]
			k++
		}
		if n := utf8.RuneCountInString(t.Columns[j].Group); n > span {
			colW[k-1] += n - span
		}
		j = k
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", title)
	for start := 0; start < len(t.Columns) || start == 0; {
		end, used := start, labelW
		for end < len(t.Columns) && (end == start || used+2+colW[end] <= width) {
			used += 2 + colW[end]
			end++
		}
		// Do not split a group across blocks when the block can end
		// before it instead.
		if end < len(t.Columns) && t.Columns[end].Group != "" {
			g := end
			for g > start && t.Columns[g-1].Group == t.Columns[end].Group {
				g--
			}
			if g > start {
				end = g
			}
		}
		if start > 0 {
			b.WriteString("\n")
		}
		writeBlock(&b, t.Columns[start:end], cells[start:end], colW[start:end], labels, labelW)
		if end == start {
			break
		}
		start = end
	}
	for _, n := range t.Notes {
		for i, line := range wrap(n, width-8) {
			if i == 0 {
				fmt.Fprintf(&b, "  note: %s\n", line)
			} else {
				fmt.Fprintf(&b, "        %s\n", line)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeBlock(b *strings.Builder, cols []sdk.Column, cells [][]string, colW []int, labels []string, labelW int) {
	grouped := false
	for _, c := range cols {
		grouped = grouped || c.Group != ""
	}
	if grouped {
		// Each run of adjacent columns sharing a group gets its name over
		// the run's combined width.
		line := pad("", labelW, false)
		for j := 0; j < len(cols); {
			k, span := j, 0
			for k < len(cols) && cols[k].Group == cols[j].Group {
				span += 2 + colW[k]
				k++
			}
			line += "  " + pad(middleCut(cols[j].Group, span-2), span-2, false)
			j = k
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	line := pad("", labelW, false)
	for j, c := range cols {
		line += "  " + pad(c.Label, colW[j], true)
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
	for i, l := range labels {
		line := pad(l, labelW, false)
		for j := range cols {
			line += "  " + pad(cells[j][i], colW[j], true)
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
}

func pad(s string, w int, right bool) string {
	n := w - utf8.RuneCountInString(s)
	if n <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", n) + s
	}
	return s + strings.Repeat(" ", n)
}

// middleCut shortens s to at most n runes with "…" in the middle.
func middleCut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n || n < 3 {
		return s
	}
	head := (n - 1) / 2
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// wrap breaks s at spaces into lines of at most width runes; a word longer
// than width (a hash, a path) stays whole on its own line.
func wrap(s string, width int) []string {
	width = max(width, 20)
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
