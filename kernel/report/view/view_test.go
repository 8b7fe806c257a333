package view_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hayloft/hayloft/kernel/report/browsertest"
	"github.com/hayloft/hayloft/kernel/report/reporttest"
	"github.com/hayloft/hayloft/kernel/report/view"
	"github.com/hayloft/hayloft/sdk"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestViewServesReadOnlyAndEscaped(t *testing.T) {
	st, id, hostileID := reporttest.Fixture(t)
	srv := httptest.NewServer(view.New(st))
	defer srv.Close()
	if code, body := get(t, srv.URL+"/"); code != 200 || !strings.Contains(body, "/run/"+id) {
		t.Fatalf("run list: %d %.300s", code, body)
	}
	code, body := get(t, srv.URL+"/api/sample?run="+id+"&eval=needle/model.test.a/none&id="+hostileID)
	if code != 200 || strings.Contains(body, "<script>") || !strings.Contains(body, `\u003cscript\u003e`) {
		t.Fatalf("sample JSON: %d %s", code, body)
	}
	if code, _ := get(t, srv.URL+"/run/nope"); code != http.StatusNotFound {
		t.Errorf("unknown run: %d, want 404", code)
	}
	resp, err := http.Post(srv.URL+"/run/"+id, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
}

// A run's page is drawn from its rows' journaled aggregates and its first
// samples, the rest fetched by the page; rows without aggregates (a journal
// before schema 2, rows still running) have their metrics fetched too.
// Both pages pass the same checks.
func TestViewInChromium(t *testing.T) {
	for _, tc := range []struct {
		name      string
		aggregate bool
		shot      string
	}{
		{"first page then the rest", true, "view.png"},
		{"no aggregates journaled", false, "view-recomputed.png"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, id, hostileID := reporttest.Fixture(t)
			if tc.aggregate {
				if err := reporttest.Aggregate(context.Background(), st, id); err != nil {
					t.Fatal(err)
				}
			}
			srv := httptest.NewServer(view.New(st))
			defer srv.Close()
			if _, page := get(t, srv.URL+"/run/"+id); !strings.Contains(page, `"partial":true`) || strings.Contains(page, `id="hl-metrics-0"`) == tc.aggregate {
				t.Fatalf("not the first page with metrics journaled %t: %.300s", tc.aggregate, page)
			}
			b := browsertest.New(t)
			browsertest.CheckPage(t, b, srv.URL+"/run/"+id, hostileID, tc.shot)
			if f := b.ForeignRequests(srv.URL + "/"); len(f) > 0 {
				t.Errorf("requests left the page: %q", f)
			}
		})
	}
}

// A page open on a run in progress reloads when a sample is journaled.
func TestViewRefreshesLiveRun(t *testing.T) {
	ctx := context.Background()
	st, _, _ := reporttest.Fixture(t)
	ev := reporttest.Eval{Base: "live", Model: "model.test.a", Scorers: []string{"niah"},
		Samples: reporttest.Grid([]int{1000}, []float64{0, 1}, func(int, float64) float64 { return 1 })}
	id, err := reporttest.Write(ctx, st, reporttest.Run{ConfigPath: "live.hcl", Running: true, Evals: []reporttest.Eval{ev}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(view.New(st))
	defer srv.Close()
	b := browsertest.New(t)
	if _, err := chromedp.Run(b.Ctx, chromedp.Navigate(srv.URL+"/run/"+id)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(b.Ctx, chromedp.Poll[chromedp.Void](`document.body.dataset.ready === "1" && document.getElementById("count").textContent.startsWith("2 of 2")`)); err != nil {
		t.Fatal(err)
	}
	smp := &sdk.Sample{ID: "late", Length: sdk.Length{Tokens: 2000}, Depth: 0.5}
	if err := st.PutResult(ctx, id, ev.JournalName(), smp, storeMeta(), nil); err != nil {
		t.Fatal(err)
	}
	// The page reloads itself, which ends a wait begun in the old page:
	// wait again in the new one until it shows the sample.
	cond := `document.body && document.body.dataset.ready === "1" && document.getElementById("count").textContent.startsWith("3 of 3")`
	deadline := time.Now().Add(30 * time.Second)
	for {
		wctx, cancel := context.WithTimeout(b.Ctx, 5*time.Second)
		_, err := chromedp.Run(wctx, chromedp.Poll[chromedp.Void](cond))
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not show the new sample: %v", err)
		}
	}
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("console: %q", p)
	}
}

// Requests that come while the page is drawn at start-up get that page:
// every one answers with the same page, whichever draw they waited on.
func TestViewRequestsDuringWarmUp(t *testing.T) {
	st, id, _ := reporttest.Fixture(t)
	v := view.New(st)
	srv := httptest.NewServer(v)
	defer srv.Close()
	warmed := make(chan error, 1)
	go func() { warmed <- v.Warm(context.Background()) }()
	pages := make(chan string, 4)
	for range cap(pages) {
		go func() {
			resp, err := http.Get(srv.URL + "/run/" + id)
			if err != nil {
				pages <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			pages <- string(b)
		}()
	}
	if err := <-warmed; err != nil {
		t.Fatal(err)
	}
	first := <-pages
	if !strings.Contains(first, `id="hl-index"`) {
		t.Fatalf("not the run's page: %.300s", first)
	}
	for range cap(pages) - 1 {
		if p := <-pages; p != first {
			t.Errorf("pages differ: %.200s", p)
		}
	}
}
