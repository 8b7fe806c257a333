package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// wrkResult is what one wrk run reports.
type wrkResult struct {
	Requests int     // completed requests ("N requests in 5.00s")
	RPS      float64 // "Requests/sec:"
	Non2xx   int     // "Non-2xx or 3xx responses:"
	// Socket errors by kind ("Socket errors: connect 0, read 0, write 0, timeout 0").
	Connect, Read, Write, Timeout int
	// CPU is wrk's own user+system time; runWrk sets it, not the report.
	CPU time.Duration
}

func (r wrkResult) socketErrors() int { return r.Connect + r.Read + r.Write + r.Timeout }

// parseWrk reads wrk 4's plain report. Lines it does not know are ignored, so
// a newer wrk that adds lines still parses; a report without "Requests/sec:"
// is an error, since that is the figure the benchmark is after.
func parseWrk(out []byte) (wrkResult, error) {
	var r wrkResult
	var haveRPS bool
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var err error
		switch {
		case strings.HasPrefix(line, "Requests/sec:"):
			r.RPS, err = strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, "Requests/sec:")), 64)
			haveRPS = err == nil
		case strings.HasPrefix(line, "Non-2xx or 3xx responses:"):
			r.Non2xx, err = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "Non-2xx or 3xx responses:")))
		case strings.HasPrefix(line, "Socket errors:"):
			_, err = fmt.Sscanf(line, "Socket errors: connect %d, read %d, write %d, timeout %d",
				&r.Connect, &r.Read, &r.Write, &r.Timeout)
		case strings.Contains(line, " requests in "):
			r.Requests, err = strconv.Atoi(strings.Fields(line)[0])
		}
		if err != nil {
			return r, fmt.Errorf("wrk output line %q: %w", line, err)
		}
	}
	if !haveRPS {
		return r, errors.New(`wrk output has no "Requests/sec:" line`)
	}
	return r, nil
}

// wrkScript is a wrk Lua script that POSTs body as JSON. A long bracket
// string keeps the JSON verbatim: no Lua escaping rules to get right.
func wrkScript(body []byte) (string, error) {
	if bytes.Contains(body, []byte("]==]")) {
		return "", errors.New("request body contains the Lua long-bracket terminator ]==]")
	}
	return "wrk.method = \"POST\"\n" +
		"wrk.headers[\"Content-Type\"] = \"application/json\"\n" +
		"wrk.body = [==[" + string(body) + "]==]\n", nil
}

// runWrk drives url with wrk for d over conns connections, posting body.
func runWrk(ctx context.Context, wrk, dir, url string, body []byte, threads, conns int, d time.Duration) (wrkResult, error) {
	script, err := wrkScript(body)
	if err != nil {
		return wrkResult{}, err
	}
	path := filepath.Join(dir, "post.lua")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		return wrkResult{}, fmt.Errorf("write wrk script: %w", err)
	}
	// wrk stops by itself after d; the margin covers its start and the
	// requests it drains at the end.
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, wrk,
		"-t"+strconv.Itoa(threads), "-c"+strconv.Itoa(conns),
		"-d"+strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second)))+"s",
		"--timeout", "10s", "-s", path, url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return wrkResult{}, fmt.Errorf("%s: %w: %s%s", wrk, err, out, stderr.Bytes())
	}
	res, err := parseWrk(out)
	if err != nil {
		return res, fmt.Errorf("%s: %w", wrk, err)
	}
	res.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return res, nil
}
