// Package view serves a journal's runs over HTTP, read-only: the run list,
// each run's report page (the same page as the HTML report, fetching sample
// details on demand with whole messages), one sample's detail as JSON, and a
// run's progress so an open page reloads while the run goes on.
package view

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"sync"
	"time"

	reporthtml "github.com/hayloft/hayloft/kernel/report/html"
	"github.com/hayloft/hayloft/kernel/report/journal"
	"github.com/hayloft/hayloft/kernel/store"
)

// Server is the viewer's HTTP handler.
type Server struct {
	st  *store.Store
	mux *http.ServeMux
	// pages are the run pages, rests what a page fetches after it
	// (/api/rest): each drawn once per run and progress.
	pages, rests flights
}

// firstPage is how many samples a run page lists before its whole index
// arrives: page.js's PAGE, one page of the list.
const firstPage = 100

// New returns a viewer over st.
func New(st *store.Store) *Server {
	s := &Server{st: st, mux: http.NewServeMux(), pages: newFlights(), rests: newFlights()}
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET /run/{id}", s.run)
	s.mux.HandleFunc("GET /api/sample", s.sample)
	s.mux.HandleFunc("GET /api/progress", s.progress)
	s.mux.HandleFunc("GET /api/rest", s.rest)
	return s
}

// flights draws something once per run and progress: a request that comes
// while it is drawn waits for that draw, and the last one drawn for each
// run is kept.
type flights struct {
	mu      sync.Mutex
	done    map[string]cached // by run ID
	drawing map[string]*draw  // by run ID and progress
}

// draw is a thing being drawn; done closes when out or err is set.
type draw struct {
	done chan struct{}
	out  []byte
	err  error
}

type cached struct {
	progress string
	out      []byte
}

func newFlights() flights {
	return flights{done: map[string]cached{}, drawing: map[string]*draw{}}
}

func (f *flights) get(ctx context.Context, id, prog string, drawFn func(context.Context) ([]byte, error)) ([]byte, error) {
	key := id + "\x00" + prog
	f.mu.Lock()
	if c, ok := f.done[id]; ok && c.progress == prog {
		f.mu.Unlock()
		return c.out, nil
	}
	d, inFlight := f.drawing[key]
	if !inFlight {
		d = &draw{done: make(chan struct{})}
		f.drawing[key] = d
	}
	f.mu.Unlock()
	if !inFlight {
		// The draw serves every waiter: it outlives the request that
		// started it.
		d.out, d.err = drawFn(context.WithoutCancel(ctx))
		f.mu.Lock()
		if d.err == nil {
			f.done[id] = cached{progress: prog, out: d.out}
		}
		delete(f.drawing, key)
		f.mu.Unlock()
		close(d.done)
	}
	select {
	case <-d.done:
		return d.out, d.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ServeHTTP serves GET and HEAD only: the viewer never changes the journal.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the viewer is read-only", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; connect-src 'self'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(w, r)
}

func fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, store.ErrNotFound) {
		code = http.StatusNotFound
	}
	http.Error(w, err.Error(), code)
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	runs, err := s.st.Runs(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>hayloft runs</title>
<style>body{font:14px system-ui,sans-serif;margin:1.5em}td,th{padding:2px 8px;text-align:left}</style></head><body>
<h1>hayloft runs</h1><p>journal <code>%s</code></p><table><thead><tr><th>run</th><th>config</th><th>status</th><th>started</th></tr></thead><tbody>`, html.EscapeString(s.st.Path()))
	for _, run := range runs {
		fmt.Fprintf(&b, `<tr><td><a href="/run/%s">%s</a></td><td>%s</td><td>%s</td><td>%s</td></tr>`,
			html.EscapeString(run.ID), html.EscapeString(run.ID), html.EscapeString(run.ConfigPath), html.EscapeString(run.Status),
			run.StartedAt.UTC().Format(time.RFC3339))
	}
	b.WriteString(`</tbody></table></body></html>`)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

func (s *Server) progressOf(ctx context.Context, runID string) (string, error) {
	run, err := s.st.GetRun(ctx, runID)
	if err != nil {
		return "", err
	}
	if !run.FinishedAt.IsZero() {
		// A finished run's rows are all journaled (FinishRun flushes
		// first) and no process adds to it: its end stands for its
		// progress, without counting 200,000 samples per request.
		return fmt.Sprintf("%s %s", run.Status, run.FinishedAt.UTC().Format(time.RFC3339Nano)), nil
	}
	n, f, err := s.st.RunProgress(ctx, runID)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %d %d", run.Status, n, f), nil
}

// run serves a run's page, drawn again only when the run has moved on.
func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	page, err := s.page(r.Context(), r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(page)
}

// Warm draws the newest run's page ahead of the first request, then what
// the page fetches after it (the whole sample index, read in seconds at
// 200,000 samples), so both are ready when the browser asks.
func (s *Server) Warm(ctx context.Context) error {
	id, err := journal.Latest(ctx, s.st)
	if err != nil {
		return err
	}
	prog, err := s.progressOf(ctx, id)
	if err != nil {
		return err
	}
	if _, err := s.pages.get(ctx, id, prog, func(ctx context.Context) ([]byte, error) { return s.draw(ctx, id, prog) }); err != nil {
		return err
	}
	_, err = s.rests.get(ctx, id, prog, func(ctx context.Context) ([]byte, error) { return s.drawRest(ctx, id) })
	return err
}

func (s *Server) page(ctx context.Context, id string) ([]byte, error) {
	prog, err := s.progressOf(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.pages.get(ctx, id, prog, func(ctx context.Context) ([]byte, error) { return s.draw(ctx, id, prog) })
}

// draw draws a run's page from its journaled aggregates, counts and first
// samples (journal.LoadFirst), which it reads in milliseconds at any size;
// the page fetches the rest (/api/rest).
func (s *Server) draw(ctx context.Context, id, prog string) ([]byte, error) {
	run, first, err := journal.LoadFirst(ctx, s.st, id, firstPage)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := reporthtml.Write(ctx, &b, s.st, run, reporthtml.Options{Live: true, Progress: prog, First: first}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// rest serves what a page drawn from the run's first samples fetches: the
// whole sample index the list filters, and the parts drawn from every
// sample (reporthtml.Later), as JSON.
func (s *Server) rest(w http.ResponseWriter, r *http.Request) {
	// Drawn for the journal's state now, as the page was (a page drawn
	// earlier reloads when the progress moves on).
	id := r.URL.Query().Get("run")
	prog, err := s.progressOf(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	out, err := s.rests.get(r.Context(), id, prog, func(ctx context.Context) ([]byte, error) { return s.drawRest(ctx, id) })
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

func (s *Server) drawRest(ctx context.Context, id string) ([]byte, error) {
	run, err := journal.LoadIndex(ctx, s.st, id, nil)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"later":`)
	// encoding/json escapes <, > and &: the fragments reach the page as
	// JSON strings, which its script puts in place.
	later, err := reporthtml.Later(ctx, s.st, run)
	if err != nil {
		return nil, err
	}
	if err := json.NewEncoder(&b).Encode(later); err != nil {
		return nil, err
	}
	b.WriteString(`,"index":`)
	if err := reporthtml.WriteIndex(&b, run, reporthtml.DefaultChunkSize, nil); err != nil {
		return nil, err
	}
	b.WriteString("}")
	return b.Bytes(), nil
}

func (s *Server) progress(w http.ResponseWriter, r *http.Request) {
	prog, err := s.progressOf(r.Context(), r.URL.Query().Get("run"))
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprint(w, prog)
}

// sample serves one sample's detail as JSON, with whole messages.
func (s *Server) sample(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	runID, evalName, id := q.Get("run"), q.Get("eval"), q.Get("id")
	// The eval's name and scorers are all a detail needs: its row, not
	// its samples.
	infos, err := s.st.Evals(r.Context(), runID)
	if err != nil {
		fail(w, err)
		return
	}
	var ev *journal.Eval
	for _, e := range infos {
		if e.Name == evalName {
			ev = &journal.Eval{EvalInfo: e}
		}
	}
	if ev == nil {
		http.Error(w, fmt.Sprintf("run %s has no eval %q", runID, evalName), http.StatusNotFound)
		return
	}
	a, err := s.st.SampleAnswerByID(r.Context(), runID, evalName, id)
	if err != nil {
		fail(w, err)
		return
	}
	attempts, err := s.st.Attempts(r.Context(), a.RequestKey)
	if err != nil {
		fail(w, err)
		return
	}
	scores, err := s.st.SampleScores(r.Context(), runID, evalName, id, ev.Scorers)
	if err != nil {
		fail(w, err)
		return
	}
	d, err := reporthtml.MakeDetail(ev, a, scores, attempts, 0)
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(d)
}
