package rougel

import (
	"testing"
	"unsafe"
)

// The stem cache keeps its own copies of the word and of the stem: the
// caller's text may live in memory that is reused once the call returns
// (scoreio's input chunks in process, a plugin's packed batch), and a
// cached stem that is a prefix of the word would change with it.
func TestStemCacheOwnsItsStrings(t *testing.T) {
	for _, tc := range []struct{ word, stem string }{
		{"running", "run"},     // a stem that is a prefix of the word
		{"cats", "cat"},        // likewise
		{"happily", "happili"}, // a stem stemming builds itself
	} {
		t.Run(tc.word, func(t *testing.T) {
			c := newStemCache()
			buf := []byte(tc.word)
			if got := c.stem(unsafe.String(&buf[0], len(buf))); got != tc.stem {
				t.Fatalf("stem(%q) = %q, want %q", tc.word, got, tc.stem)
			}
			for i := range buf {
				buf[i] = 'z' // the caller's memory, reused
			}
			if got := c.stem(tc.word); got != tc.stem {
				t.Errorf("cached stem of %q = %q after its text's memory was reused, want %q", tc.word, got, tc.stem)
			}
		})
	}
}
