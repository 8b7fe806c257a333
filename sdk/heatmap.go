package sdk

import (
	"encoding/json"
	"fmt"
)

// HeatmapsKey is the key under which an AggregateResponse's Details carry
// the benchmark's heatmaps.
const HeatmapsKey = "heatmaps"

// Heatmap is a grid of scores that a scorer's Aggregate offers for display,
// when its grid is not the samples' own length × depth (which the reports
// draw from the samples): Counting-Stars' counting index × context length,
// where each sample holds a whole column of indices. The HTML report draws
// every heatmap of an eval on the usual red-to-green scale, its values on
// hover, without knowing the benchmark.
type Heatmap struct {
	// ID is stable across runs and names what the heatmap shows, e.g.
	// "countingstars.index_by_length".
	ID    string `json:"id"`
	Title string `json:"title"`
	// X is the columns' axis, Y the rows'.
	X Axis `json:"x"`
	Y Axis `json:"y"`
	// Values[i][j] is the value at row Y.Keys[i] and column X.Keys[j]; nil
	// where there is none. Values in [0, 1] are coloured as they are;
	// others are scaled between the grid's least and greatest.
	Values [][]*float64 `json:"values"`
	// N[i][j], when given, is how many samples the value is over.
	N [][]int `json:"n,omitempty"`
	// LowerIsBetter reverses the scale (errors).
	LowerIsBetter bool `json:"lower_is_better,omitempty"`
}

// Axis is one axis of a Heatmap.
type Axis struct {
	Label string `json:"label"`
	// Keys name the positions along the axis, in order ("4000", "1");
	// Labels, when given, are what the report prints for them ("4K").
	Keys   []string `json:"keys"`
	Labels []string `json:"labels,omitempty"`
}

// TickLabel is what the report prints at position i of the axis.
func (a Axis) TickLabel(i int) string {
	if i < len(a.Labels) && a.Labels[i] != "" {
		return a.Labels[i]
	}
	return a.Keys[i]
}

// Validate checks that the values fill the axes' grid.
func (h Heatmap) Validate() error {
	if len(h.Values) != len(h.Y.Keys) {
		return fmt.Errorf("heatmap %s: %d rows of values for %d row keys", h.ID, len(h.Values), len(h.Y.Keys))
	}
	for i, row := range h.Values {
		if len(row) != len(h.X.Keys) {
			return fmt.Errorf("heatmap %s: row %d has %d values for %d column keys", h.ID, i, len(row), len(h.X.Keys))
		}
	}
	if h.N != nil && len(h.N) != len(h.Values) {
		return fmt.Errorf("heatmap %s: %d rows of counts for %d rows of values", h.ID, len(h.N), len(h.Values))
	}
	return nil
}

// WithHeatmaps returns details (allocated when nil) carrying hs under
// HeatmapsKey, after any heatmaps it already carries.
func WithHeatmaps(details map[string]any, hs ...Heatmap) map[string]any {
	if details == nil {
		details = map[string]any{}
	}
	prev, _ := HeatmapsOf(details)
	details[HeatmapsKey] = append(prev, hs...)
	return details
}

// HeatmapsOf returns the heatmaps in an aggregate's details, whether they
// are still typed (in the scorer's process) or came back as decoded JSON
// (across a plugin boundary or from the journal).
func HeatmapsOf(details map[string]any) ([]Heatmap, error) {
	v, ok := details[HeatmapsKey]
	if !ok || v == nil {
		return nil, nil
	}
	hs, ok := v.([]Heatmap)
	if !ok {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("details %q: %w", HeatmapsKey, err)
		}
		if err := json.Unmarshal(raw, &hs); err != nil {
			return nil, fmt.Errorf("details %q: not a list of heatmaps: %w", HeatmapsKey, err)
		}
	}
	for _, h := range hs {
		if err := h.Validate(); err != nil {
			return nil, fmt.Errorf("details %q: %w", HeatmapsKey, err)
		}
	}
	return hs, nil
}
