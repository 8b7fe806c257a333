package scoreio

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"unsafe"
)

// lineReader gives the lines bufio.Reader.ReadString('\n') gives, with
// chunks far smaller than a line or than many lines, reads of any size, a
// last line with or without its '\n', and a reader's error after its data;
// and a line handed out keeps its bytes however much is read after it.
func TestLineReader(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	boom := errors.New("boom")
	for round := range 300 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(strings.Repeat("x", rng.IntN(3)*rng.IntN(50)))
			b.WriteByte('\n')
		}
		if rng.IntN(2) == 0 {
			b.WriteString("last")
		}
		in := b.String()
		var want []string
		br := bufio.NewReader(strings.NewReader(in))
		for {
			l, err := br.ReadString('\n')
			want = append(want, l)
			if err != nil {
				break
			}
		}
		var r io.Reader = strings.NewReader(in)
		wantErr := io.EOF
		switch round % 4 {
		case 1:
			r = iotest.OneByteReader(r)
		case 2:
			r = iotest.HalfReader(r)
		case 3:
			r, wantErr = io.MultiReader(iotest.DataErrReader(r), iotest.ErrReader(boom)), boom
		}
		lr := newLineReader(r)
		lr.chunkBytes = 1 + rng.IntN(64)
		var got [][]byte
		var err error
		for err == nil {
			var l []byte
			l, err = lr.next()
			got = append(got, l)
		}
		if err != wantErr {
			t.Fatalf("round %d: error %v, want %v", round, err, wantErr)
		}
		var gotS []string
		for _, l := range got {
			gotS = append(gotS, string(l))
		}
		if strings.Join(gotS, "|") != strings.Join(want, "|") {
			t.Fatalf("round %d (chunk %d): lines\n%q\nwant\n%q", round, lr.chunkBytes, gotS, want)
		}
		if !bytes.Equal(bytes.Join(got, nil), []byte(in)) {
			t.Fatalf("round %d: lines changed after they were read", round)
		}
	}
}

func TestLineReaderMaxLine(t *testing.T) {
	for _, in := range []string{"ok\n" + strings.Repeat("y", 101), "ok\n" + strings.Repeat("y", 100) + "\n"} {
		lr := newLineReader(iotest.OneByteReader(strings.NewReader(in)))
		lr.maxLine = 100
		if l, err := lr.next(); string(l) != "ok\n" || err != nil {
			t.Fatalf("first line %q, %v", l, err)
		}
		if _, err := lr.next(); err == nil || !strings.Contains(err.Error(), "line longer than 100 bytes") {
			t.Fatalf("long line: %v", err)
		}
	}
}

// With released set, a chunk is read into again only once every line in
// it is released: lines not yet released keep their bytes, and chunks are
// reused.
func TestLineReaderReusesReleasedChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var b strings.Builder
	var want []string
	for i := range 500 {
		l := strings.Repeat(string(rune('a'+i%26)), rng.IntN(40)) + "\n"
		want = append(want, l)
		b.WriteString(l)
	}
	lr := newLineReader(strings.NewReader(b.String()))
	lr.chunkBytes = 64
	lr.released = new(atomic.Int64)
	type read struct {
		line []byte
		seq  int64
	}
	var got []read
	bases := map[*byte]bool{}
	const lag = 7 // lines read but not yet written
	for i := 0; ; i++ {
		l, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, read{l, lr.seq})
		bases[unsafe.SliceData(lr.buf[:1])] = true
		if i >= lag {
			// Lines up to i-lag are written: their chunks before the
			// last one's are free.
			lr.released.Store(got[i-lag].seq)
		}
		for j := max(0, i-lag+1); j <= i; j++ {
			if string(got[j].line) != want[j] {
				t.Fatalf("line %d changed before it was released: %q, want %q", j, got[j].line, want[j])
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	if int64(len(bases)) >= lr.seq {
		t.Fatalf("%d chunks for %d chunk changes: none reused", len(bases), lr.seq)
	}
}
