package view_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	reporthtml "github.com/hayloft/hayloft/kernel/report/html"
	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/kernel/report/reporttest"
	"github.com/hayloft/hayloft/kernel/report/view"
	"github.com/hayloft/hayloft/kernel/store"
)

// samples are n samples of eval k: a grid of lengths and depths, some
// failed before they were journaled (lone failures), some scores invalid
// or missing.
func samples(k, n int) []reporttest.Sample {
	var out []reporttest.Sample
	for i := range n {
		s := reporttest.Sample{ID: fmt.Sprintf("e%d-s%04d", k, i), Length: 1000 * (1 + i%4), Depth: float64(i%3) / 2,
			Response: fmt.Sprintf("<b>%d</b>", i), Scores: map[string]float64{"niah": float64(i%5) / 4},
			Invalid: map[string]bool{}}
		if k == 0 && i%2 == 0 {
			// Some answers report cached prompt tokens: the prefix-cache
			// section, drawn later too.
			c := s.Length / 2
			s.CachedTokens = &c
		}
		switch {
		case i%11 == 3:
			s.Fail = "boom"
		case i%7 == 2:
			s.Invalid["other"] = true
		case i%6 != 1:
			s.Scores["other"] = float64(i%3) / 2
		}
		out = append(out, s)
	}
	return out
}

var hlLater = regexp.MustCompile(`<div class="hl-later" id="([^"]+)"></div>`)

var hlIndex = regexp.MustCompile(`(?s)<script type="application/json" id="hl-index">(.*?)</script>`)

// The page the view answers first, from the journaled aggregates, counts
// and the list's first samples, is the page drawn from every sample once
// the page puts in what it fetches after (/api/rest); that index is the
// whole one, and the first page's is its head.
func TestViewFirstPageIsTheWholePage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sizes     []int
		aggregate bool // else the metrics are recomputed, fetched later
		running   bool
	}{
		{"one eval longer than a page", []int{230}, true, false},
		{"a page across evals", []int{30, 40, 90}, true, false},
		{"fewer samples than a page", []int{12, 5}, true, false},
		{"no aggregates journaled", []int{30, 140}, false, false},
		{"running, with a retriever", []int{60, 60}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hayloft.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var evs []reporttest.Eval
			for k, n := range tc.sizes {
				ev := reporttest.Eval{Base: fmt.Sprintf("needle%d", k), Model: "model.test.a", Scorers: []string{"niah", "other"}, Samples: samples(k, n)}
				if tc.running && k == 1 {
					// The same eval and model through a retriever: an ablation.
					ev.Base, ev.Retriever = evs[0].Base, "retriever.bm25.r"
				}
				evs = append(evs, ev)
			}
			id, err := reporttest.Write(ctx, st, reporttest.Run{ConfigPath: "c.hcl", Evals: evs, Running: tc.running})
			if err != nil {
				t.Fatal(err)
			}
			if tc.aggregate {
				if err := reporttest.Aggregate(ctx, st, id); err != nil {
					t.Fatal(err)
				}
			}
			srv := httptest.NewServer(view.New(st))
			defer srv.Close()
			code, first := get(t, srv.URL+"/run/"+id)
			if code != 200 {
				t.Fatalf("page: %d %s", code, first)
			}
			_, prog := get(t, srv.URL+"/api/progress?run="+id)
			code, restBody := get(t, srv.URL+"/api/rest?run="+id)
			if code != 200 {
				t.Fatalf("rest: %d %s", code, restBody)
			}
			var rest struct {
				Later map[string]string
				Index map[string]any
			}
			if err := json.Unmarshal([]byte(restBody), &rest); err != nil {
				t.Fatal(err)
			}

			run, err := journal.LoadIndex(ctx, st, id, nil)
			if err != nil {
				t.Fatal(err)
			}
			var whole bytes.Buffer
			if err := reporthtml.Write(ctx, &whole, st, run, reporthtml.Options{Live: true, Progress: prog}); err != nil {
				t.Fatal(err)
			}
			wholeIdx := decodeIndex(t, hlIndex.FindStringSubmatch(whole.String())[1])
			if !reflect.DeepEqual(rest.Index, wholeIdx) {
				t.Errorf("/api/rest's index is not the whole page's")
			}

			firstIdx := decodeIndex(t, hlIndex.FindStringSubmatch(first)[1])
			total := len(wholeIdx["id"].([]any))
			if firstIdx["partial"] != true || firstIdx["total"] != float64(total) {
				t.Fatalf("first page's index: partial %v, total %v; want true, %d", firstIdx["partial"], firstIdx["total"], total)
			}
			n := len(firstIdx["id"].([]any))
			if n != min(100, total) {
				t.Errorf("first page lists %d samples, want %d", n, min(100, total))
			}
			for key, col := range wholeIdx {
				switch key {
				case "evals", "scorers", "chunk":
					if !reflect.DeepEqual(firstIdx[key], col) {
						t.Errorf("first page's %s: %v, want %v", key, firstIdx[key], col)
					}
				case "scores", "invalid":
					for scorer, vals := range col.(map[string]any) {
						if got := firstIdx[key].(map[string]any)[scorer]; !reflect.DeepEqual(got, vals.([]any)[:n]) {
							t.Errorf("first page's %s[%s]: %v, want %v", key, scorer, got, vals.([]any)[:n])
						}
					}
				default:
					if got := firstIdx[key]; !reflect.DeepEqual(got, col.([]any)[:n]) {
						t.Errorf("first page's %s: %v, want %v", key, got, col.([]any)[:n])
					}
				}
			}

			// With the fetched parts in their places, the rest of the page is
			// the whole one.
			filled := hlLater.ReplaceAllStringFunc(first, func(place string) string {
				id := hlLater.FindStringSubmatch(place)[1]
				h, ok := rest.Later[id]
				if !ok {
					t.Errorf("/api/rest has nothing for the page's place %s", id)
				}
				return h
			})
			if !strings.Contains(filled, `<section id="prefix-cache">`) {
				t.Error("the filled first page has no prefix-cache section")
			}
			strip := func(s string) string { return hlIndex.ReplaceAllString(s, "") }
			if a, b := strip(filled), strip(whole.String()); a != b {
				i := 0
				for i < min(len(a), len(b)) && a[i] == b[i] {
					i++
				}
				t.Errorf("the filled first page differs from the whole page at byte %d:\n%.300s\nwant\n%.300s", i, a[i:], b[i:])
			}
		})
	}
}

func decodeIndex(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}
