package browsertest

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hayloft/hayloft/kernel/report/reporttest"
)

// CheckPage asserts what the report and the live view share: heatmap
// cells and colours, filters, a sample's messages, escaping, a clean console.
func CheckPage(t *testing.T, b *Browser, url, hostileID, shot string) {
	t.Helper()
	ctx := b.Ctx
	step := 0
	run := func(a chromedp.Action[chromedp.Void]) {
		t.Helper()
		step++
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if _, err := chromedp.Run(sctx, a); err != nil {
			t.Fatalf("step %d: %v (console: %q)", step, err, b.Problems())
		}
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	run(chromedp.Navigate(url))
	run(chromedp.Poll[chromedp.Void](`document.body.dataset.ready === "1"`))

	// One cell per grid point in model a's heatmap, coloured by its score.
	got := HeatmapCells(t, b, `article[data-eval="needle/model.test.a/none"] svg.heatmap`)
	if len(got) != len(reporttest.Lengths)*len(reporttest.Depths) {
		t.Fatalf("%d heatmap cells, want %d", len(got), len(reporttest.Lengths)*len(reporttest.Depths))
	}
	for _, c := range got {
		l, _ := strconv.Atoi(c.X)
		d, _ := strconv.ParseFloat(c.Y, 64)
		if want := reporttest.WantColour[reporttest.Known(l, d)]; c.Fill != want {
			t.Errorf("cell %s × %s: fill %s, want %s", c.X, c.Y, c.Fill, want)
		}
	}

	total := eval(`document.getElementById("count").textContent`)
	if !strings.HasPrefix(total, "61 of 61") {
		t.Fatalf("count %q, want all 61 samples", total)
	}
	// Filtering by depth and model narrows the list.
	run(chromedp.SetValue("#f-depth", "0.5"))
	eval(`document.getElementById("f-depth").dispatchEvent(new Event("change")), ""`)
	if got := eval(`document.getElementById("count").textContent`); !strings.HasPrefix(got, "12 of 61") {
		t.Errorf("depth 50%%: %q, want 12 of 61", got)
	}
	run(chromedp.SetValue("#f-model", "model.test.a"))
	eval(`document.getElementById("f-model").dispatchEvent(new Event("change")), ""`)
	if got := eval(`document.getElementById("count").textContent`); !strings.HasPrefix(got, "4 of 61") {
		t.Errorf("depth 50%% of model a: %q, want 4 of 61", got)
	}
	if n := eval(`String(document.querySelectorAll("#list tbody tr").length)`); n != "4" {
		t.Errorf("%s rows listed, want 4", n)
	}
	// The hostile sample: its messages show, its answer is text.
	run(chromedp.SetValue("#f-depth", ""))
	run(chromedp.SetValue("#f-id", hostileID))
	eval(`document.getElementById("f-id").dispatchEvent(new Event("input")), ""`)
	eval(`document.querySelector("#list tbody tr").click(), ""`)
	run(chromedp.WaitVisible("#detail pre.response"))
	if got := eval(`document.querySelector("#detail pre.response").textContent`); got != reporttest.Hostile {
		t.Errorf("response shown as %q, want the text %q", got, reporttest.Hostile)
	}
	if got := eval(`String(window.__pwned) + document.querySelectorAll("#detail script, #detail img").length`); got != "undefined0" {
		t.Errorf("the model output ran or became markup: %s", got)
	}
	msgs := eval(`Array.from(document.querySelectorAll("#detail pre.msg")).map(p => p.textContent).join("\n")`)
	if !strings.Contains(msgs, "haystack of 1000 tokens") || !strings.Contains(msgs, "San Francisco") {
		t.Errorf("messages sent not shown: %q", msgs)
	}
	// The screenshot shows the hostile sample open: its messages, and its
	// answer as text.
	b.Screenshot(t, shot)
	// A failed sample shows its error and every attempt.
	run(chromedp.SetValue("#f-id", "dead"))
	eval(`document.getElementById("f-id").dispatchEvent(new Event("input")), ""`)
	eval(`document.querySelector("#list tbody tr").click(), ""`)
	run(chromedp.WaitVisible("#detail .fail"))
	if got := eval(`document.getElementById("detail").textContent`); !strings.Contains(got, "is the server running?") || strings.Count(got, "connection refused") < 3 {
		t.Errorf("failed sample: %q", got)
	}
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("console: %q", p)
	}
}

// Cell is one cell of a heatmap on the page: its column and row keys
// (data-x, data-y) and its colour.
type Cell struct {
	X, Y, Fill string
}

// HeatmapCells lists the cells of the first heatmap matching selector.
func HeatmapCells(t *testing.T, b *Browser, selector string) []Cell {
	t.Helper()
	sel, _ := json.Marshal(selector)
	js := `JSON.stringify(Array.from(document.querySelector(` + string(sel) + `).querySelectorAll("rect.hm-cell")).map(r => [r.dataset.x, r.dataset.y, r.getAttribute("fill")]))`
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("heatmap %s: %v", selector, err)
	}
	var raw [][3]string
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		t.Fatalf("heatmap %s: %v: %s", selector, err, v)
	}
	out := make([]Cell, len(raw))
	for i, r := range raw {
		out[i] = Cell{r[0], r[1], r[2]}
	}
	return out
}
