// Command decoded prints a report page with each embedded block of sample
// details (gzip, then base64) decoded in place, so that two reports whose
// blocks were compressed differently compare with cmp or diff:
//
//	go run ./bench/report/decoded old.html > old.txt
//	go run ./bench/report/decoded new.html > new.txt
//	cmp old.txt new.txt
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"regexp"
)

// block is one embedded block: its opening tag, its body, its closing tag.
var block = regexp.MustCompile(`(data-encoding="gzip-base64"[^>]*>)([^<]*)(</script>)`)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: decoded REPORT.html")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "decoded:", err)
		os.Exit(1)
	}
}

func run(path string, out io.Writer) error {
	page, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	last := 0
	for n, m := range block.FindAllSubmatchIndex(page, -1) {
		w.Write(page[last:m[3]]) // up to the body
		raw, err := base64.StdEncoding.DecodeString(string(page[m[4]:m[5]]))
		if err != nil {
			return fmt.Errorf("%s: block %d: %w", path, n, err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return fmt.Errorf("%s: block %d: %w", path, n, err)
		}
		if _, err := io.Copy(w, zr); err != nil {
			return fmt.Errorf("%s: block %d: %w", path, n, err)
		}
		last = m[5]
	}
	w.Write(page[last:])
	return w.Flush()
}
