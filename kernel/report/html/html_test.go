package html_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hayloft/hayloft/kernel/report"
	"github.com/hayloft/hayloft/kernel/report/browsertest"
	"github.com/hayloft/hayloft/kernel/report/html"
	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/kernel/report/reporttest"
	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"

	_ "modernc.org/sqlite" // to tamper with a journal
)

func writeReport(t testing.TB, st *store.Store, runID string, opts html.Options) []byte {
	t.Helper()
	ctx := context.Background()
	run, err := journal.Load(ctx, st, runID, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := html.Write(ctx, &buf, st, run, opts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReportEscapesModelOutput(t *testing.T) {
	st, id, _ := reporttest.Fixture(t)
	page := string(writeReport(t, st, id, html.Options{}))
	if strings.Contains(page, "<script>window.__pwned") || strings.Contains(page, "<img src=x") {
		t.Fatal("a model output reached the page as markup")
	}
	if !strings.Contains(chunks(t, page), `\u003cscript\u003ewindow.__pwned=1\u003c/script\u003e`) {
		t.Fatal("the hostile output is not in the page's data at all")
	}
	for _, bad := range []string{"http://", "https://"} {
		for _, line := range strings.Split(page, "\n") {
			if strings.Contains(line, bad) && !strings.Contains(line, "http://www.w3.org/2000/svg") {
				t.Errorf("page refers to %s: %.200s", bad, line)
			}
		}
	}
}

func TestColourScale(t *testing.T) {
	for v, want := range reporttest.WantColour {
		if got := html.Colour(v); got != want {
			t.Errorf("Colour(%v) = %s, want %s", v, got, want)
		}
	}
}

// TestReportInChromium opens the report file in a real headless Chromium.
func TestReportInChromium(t *testing.T) {
	st, id, hostileID := reporttest.Fixture(t)
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, writeReport(t, st, id, html.Options{ChunkSize: 7}), 0o644); err != nil {
		t.Fatal(err)
	}
	b := browsertest.New(t)
	url := "file://" + path
	browsertest.CheckPage(t, b, url, hostileID, "report.png")
	if f := b.ForeignRequests(url); len(f) > 0 {
		t.Errorf("requests left the page: %q", f)
	}
}

// A scorer's own heatmap (Counting-Stars' counting index × length, from its
// journaled aggregate) is drawn in a real Chromium with one cell per grid
// point, coloured by the credit the answers earned there.
func TestScorerHeatmapInChromium(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hayloft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id, err := reporttest.CountingStars(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, writeReport(t, st, id, html.Options{}), 0o644); err != nil {
		t.Fatal(err)
	}
	b := browsertest.New(t)
	if _, err := chromedp.Run(b.Ctx, chromedp.Navigate("file://"+path)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(b.Ctx, chromedp.Poll[chromedp.Void](`document.body.dataset.ready === "1"`)); err != nil {
		t.Fatal(err)
	}
	cells := browsertest.HeatmapCells(t, b, `figure[data-heatmap="countingstars.index_by_length"] svg.heatmap`)
	if want := len(reporttest.CSLengths) * len(reporttest.CSCounts); len(cells) != want {
		t.Fatalf("%d heatmap cells, want %d", len(cells), want)
	}
	seen := map[[2]string]bool{}
	for _, c := range cells {
		l, _ := strconv.Atoi(c.X)
		i, _ := strconv.Atoi(c.Y)
		seen[[2]string{c.X, c.Y}] = true
		if want := reporttest.WantColour[reporttest.CSKnown(i-1, l)]; c.Fill != want {
			t.Errorf("index %s × length %s: fill %s, want %s", c.Y, c.X, c.Fill, want)
		}
	}
	if len(seen) != len(cells) {
		t.Errorf("cells repeat a grid point: %v", cells)
	}
	title, err := chromedp.Run(b.Ctx, chromedp.Evaluate[string](`document.querySelector('figure[data-heatmap] rect.hm-cell title').textContent`))
	if err != nil || !strings.Contains(title, "counting index 1") || !strings.Contains(title, "1.000") {
		t.Errorf("hover text %q (%v): want the index, length and value", title, err)
	}
	b.Screenshot(t, "report-countingstars.png")
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("console: %q", p)
	}
}

// Every benchmark table is drawn, whatever the benchmark: title, group
// headers, formatted cells tinted on the scale, notes, and escaped labels.
func TestReportDrawsBenchmarkTables(t *testing.T) {
	ctx := context.Background()
	st, id, _ := reporttest.Fixture(t)
	run, err := journal.Load(ctx, st, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	run.Tables = report.MergeTables([]report.TableSource{{Model: "<b>m</b>", Tables: []sdk.Table{{
		ID: "bench.acc", Title: "Accuracy by setting",
		Columns: []sdk.Column{{Key: "a", Label: "2k", Group: "short", Scale: 100, Decimals: 1}, {Key: "b", Label: "4k", Group: "short", Scale: 100, Decimals: 1}},
		Rows:    []sdk.Row{{Label: sdk.ModelSlot, Cells: map[string]sdk.Cell{"a": sdk.Val(1, 10), "b": sdk.Val(0, 10)}}},
		Notes:   []string{"parse mode: strict"},
		Derived: []string{sdk.DerivedMean},
	}}}})
	var buf bytes.Buffer
	if err := html.Write(ctx, &buf, st, run, html.Options{}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{"Accuracy by setting", `<th colspan="2" class="group">short</th>`, ">100.0</td>", ">0.0</td>", ">50.0</td>",
		"parse mode: strict", "&lt;b&gt;m&lt;/b&gt;", `style="background:`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<b>m</b>") {
		t.Error("a row label reached the page as markup")
	}
}

// chunks decodes the page's blocks of sample details.
func chunks(t *testing.T, page string) string {
	t.Helper()
	var out strings.Builder
	re := regexp.MustCompile(`data-encoding="gzip-base64" id="hl-d-\d+">([^<]*)</script>`)
	for _, m := range re.FindAllStringSubmatch(page, -1) {
		raw, err := base64.StdEncoding.DecodeString(m[1])
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
	}
	return out.String()
}

// The report's sample blocks hold, for every sample in the index's order,
// what the live view serves for it (MakeDetail) with messages cut to the
// report's size: the blocks are written by hand from the journaled JSON,
// the view's detail through encoding/json.
func TestReportBlocksMatchDetails(t *testing.T) {
	// The blocks find attempts in one pass over the journal's, or, when it
	// holds many more than the run's, by looking each block's up; they take
	// the scores' details from the index when it holds them, else read
	// them with the samples.
	type loader struct {
		name    string
		load    func(ctx context.Context, st *store.Store, id string) (*journal.Run, error)
		details bool // the index holds the score details
	}
	loaders := []loader{
		{"index", func(ctx context.Context, st *store.Store, id string) (*journal.Run, error) {
			return journal.LoadIndex(ctx, st, id, nil)
		}, false},
		{"index with details", func(ctx context.Context, st *store.Store, id string) (*journal.Run, error) {
			return journal.LoadIndexDetails(ctx, st, id, nil, html.ScoreDetailsBudget)
		}, true},
		{"index over its details budget", func(ctx context.Context, st *store.Store, id string) (*journal.Run, error) {
			return journal.LoadIndexDetails(ctx, st, id, nil, 100)
		}, false},
		{"whole run", func(ctx context.Context, st *store.Store, id string) (*journal.Run, error) {
			return journal.Load(ctx, st, id, nil)
		}, true},
	}
	for _, other := range []int{0, 20_000} {
		for _, l := range loaders {
			t.Run(fmt.Sprintf("%d other tries, %s", other, l.name), func(t *testing.T) {
				testBlocksMatchDetails(t, other, func(ctx context.Context, st *store.Store, id string) (*journal.Run, error) {
					run, err := l.load(ctx, st, id)
					if err == nil && run.Evals[0].ScoreDetails != l.details {
						t.Errorf("index holds score details: %v, want %v", run.Evals[0].ScoreDetails, l.details)
					}
					return run, err
				})
			})
		}
	}
}

func testBlocksMatchDetails(t *testing.T, otherTries int, load func(context.Context, *store.Store, string) (*journal.Run, error)) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hayloft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	samples := reporttest.Grid([]int{1000, 2000}, []float64{0, 0.5, 1}, reporttest.Known)
	for i := range samples {
		s := &samples[i]
		s.Context = strings.Repeat(fmt.Sprintf("ünïcode 😀 %d \"q\" <b>&</b>\n\t", i), 8)
		s.Metadata = map[string]any{"needle": "<n>", "i": i, "list": []any{1.5, "x"}}
		s.Details = map[string]map[string]any{"niah": {"matched": i%2 == 0, "why": "<because>"}}
		if i == 2 {
			s.Invalid = map[string]bool{"niah": true}
		}
		if i == 3 {
			s.Attempts = []sdk.Attempt{{Error: "429 slow down"}, {}}
		}
	}
	samples[1].Response = reporttest.Hostile
	samples = append(samples, reporttest.Sample{ID: "lost", Fail: "connection refused", Attempts: []sdk.Attempt{{Error: "refused"}}})
	id, err := reporttest.Write(ctx, st, reporttest.Run{ConfigPath: "c.hcl", Evals: []reporttest.Eval{
		{Base: "needle", Model: "m1", Scorers: []string{"niah"}, Samples: samples},
		{Base: "needle", Model: "m2", Retriever: "r", Scorers: []string{"niah"}, Samples: samples[:4]},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if otherTries > 0 {
		if err := st.PutAttempts(ctx, "another run's request", make([]sdk.Attempt, otherTries)); err != nil {
			t.Fatal(err)
		}
	}
	run, err := load(ctx, st, id)
	if err != nil {
		t.Fatal(err)
	}
	const maxChars = 40
	var buf bytes.Buffer
	if err := html.Write(ctx, &buf, st, run, html.Options{ChunkSize: 3, MaxMessageChars: maxChars}); err != nil {
		t.Fatal(err)
	}
	got := blocks(t, buf.String())
	var want []any
	for _, ev := range run.Evals {
		for _, s := range ev.Samples {
			a, err := st.SampleAnswerByID(ctx, id, ev.Name, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			scores, err := st.SampleScores(ctx, id, ev.Name, s.ID, ev.Scorers)
			if err != nil {
				t.Fatal(err)
			}
			attempts, err := st.Attempts(ctx, a.RequestKey)
			if err != nil {
				t.Fatal(err)
			}
			d, err := html.MakeDetail(ev, a, scores, attempts, maxChars)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			want = append(want, v)
		}
	}
	if len(got) != len(want) || len(want) != 11 {
		t.Fatalf("%d samples in the blocks, %d details; want 11", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("sample %d:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
	if !strings.Contains(fmt.Sprint(want), "characters left out") {
		t.Error("no message was cut: the test does not exercise elision")
	}
}

// blocks decodes the page's blocks of sample details into one list.
func blocks(t *testing.T, page string) []any {
	t.Helper()
	var out []any
	re := regexp.MustCompile(`data-encoding="gzip-base64" id="hl-d-(\d+)">([^<]*)</script>`)
	for i, m := range re.FindAllStringSubmatch(page, -1) {
		if m[1] != strconv.Itoa(i) {
			t.Fatalf("block %s where %d belongs", m[1], i)
		}
		raw, err := base64.StdEncoding.DecodeString(m[2])
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		var block []any
		if err := json.NewDecoder(zr).Decode(&block); err != nil {
			t.Fatal(err)
		}
		out = append(out, block...)
	}
	return out
}

// A journaled request that is not JSON stops the report with an error
// naming the eval and sample, wherever its block is in the pipeline.
func TestReportBadRequestNamesSample(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hayloft.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id, err := reporttest.Write(ctx, st, reporttest.Run{ConfigPath: "c.hcl", Evals: []reporttest.Eval{
		{Base: "needle", Model: "m", Scorers: []string{"niah"}, Samples: reporttest.Grid(reporttest.Lengths, reporttest.Depths, reporttest.Known)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := journal.LoadIndex(ctx, st, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := run.Evals[0].Samples[1] // in the first block: the later ones are still queued
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE responses SET request = '{"messages": [{"role": "user", "content": "cut' WHERE key = ?`, bad.RequestKey); err != nil {
		t.Fatal(err)
	}
	err = html.Write(ctx, io.Discard, st, run, html.Options{ChunkSize: 2})
	if err == nil || !strings.Contains(err.Error(), bad.ID) || !strings.Contains(err.Error(), run.Evals[0].Name) {
		t.Fatalf("error %v: want one naming sample %s of %s", err, bad.ID, run.Evals[0].Name)
	}
}
