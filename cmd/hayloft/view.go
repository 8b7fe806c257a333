package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hayloft/hayloft/kernel/report/view"
)

func (e *cliEnv) cmdView(ctx context.Context, args []string) error {
	fs := e.newFlagSet("view")
	var jf journalFlags
	jf.register(fs, false)
	addr := fs.String("addr", "127.0.0.1:8080", "address to serve on (loopback by default: the journal holds every prompt and answer)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return &exitError{code: 2, err: errors.New("usage: hayloft view [--store PATH] [--addr 127.0.0.1:8080]")}
	}
	st, err := jf.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--addr %s: %w", *addr, err)}
	}
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() {
		fmt.Fprintf(e.stderr, "hayloft: warning: serving on %s, reachable from other machines; the journal holds every prompt and answer\n", ln.Addr())
	}
	stopProfile, err := startKernelProfile("view")
	if err != nil {
		return err
	}
	defer stopProfile()
	v := view.New(st)
	// Draw the newest run's page while the user opens the browser.
	go v.Warm(ctx)
	srv := &http.Server{Handler: v, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stderr, "hayloft: serving %s read-only on http://%s/ (Ctrl-C stops)\n", st.Path(), ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}
