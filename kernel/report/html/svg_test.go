package html

import (
	"strings"
	"testing"

	"github.com/hayloft/hayloft/kernel/report/journal"
)

func TestDepthPercent(t *testing.T) {
	for _, tc := range []struct {
		depth float64
		want  string
	}{
		{0, "0%"},
		{1, "100%"},
		{0.5, "50%"},
		{0.025, "2.5%"},
		{3 * 0.111, "33.3%"}, // 0.33300000000000004
		{1.0 / 9, "11.1%"},
		{0.125, "12.5%"},
	} {
		if got := depthPercent(tc.depth); got != tc.want {
			t.Errorf("depthPercent(%v) = %q, want %q", tc.depth, got, tc.want)
		}
	}
}

// A computed depth labels its row and its cells' hover text briefly.
func TestHeatmapComputedDepthLabels(t *testing.T) {
	d := 3 * 0.111
	svg := Heatmap([]journal.Cell{{Length: 1000, Depth: d, Mean: 1, N: 1}}, []int{1000}, []float64{d}, "niah")
	if strings.Contains(svg, "33.300000000000004%") {
		t.Errorf("heatmap shows a depth's float noise: %s", svg)
	}
	if !strings.Contains(svg, ">33.3%<") || !strings.Contains(svg, "depth 33.3%") {
		t.Errorf("heatmap lacks the depth label 33.3%% on its axis and hover: %s", svg)
	}
}
