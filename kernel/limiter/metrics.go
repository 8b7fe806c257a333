package limiter

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// eachSample calls fn for every sample line of a Prometheus text
// exposition whose metric name want accepts: the name, and the value. A
// value that is not a number is an error naming the metric.
func eachSample(r io.Reader, want func(name string) bool, fn func(name string, v float64)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if !want(name) {
			continue
		}
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fn(name, v)
	}
	return sc.Err()
}
