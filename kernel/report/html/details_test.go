package html

import (
	"testing"

	"github.com/hayloft/hayloft/kernel/report/journal"
)

// The block builder finds each row the journal gives among the index's
// samples: in the index's order by following it, out of it (a collation
// that is not bytewise) by looking it up; a row the index lacks is not
// found, and a lone failure is never a row.
func TestSampleFinder(t *testing.T) {
	index := []*journal.Sample{{ID: "a"}, {ID: "b"}, {ID: "d"}, {ID: "e"}, {ID: "c", Lone: true}}
	for _, tc := range []struct {
		name string
		rows []string
		want []int // -1: not found
	}{
		{"in order", []string{"a", "b", "d", "e"}, []int{0, 1, 2, 3}},
		{"some missing", []string{"b", "e"}, []int{1, 3}},
		{"a row the index lacks", []string{"a", "c", "d"}, []int{0, -1, 2}},
		{"out of bytewise order", []string{"d", "a", "e", "b"}, []int{2, 0, 3, 1}},
		{"unknown past the end", []string{"a", "z", "b"}, []int{0, -1, 1}},
	} {
		find := sampleFinder(index)
		for k, id := range tc.rows {
			i, ok := find(id)
			if !ok {
				i = -1
			}
			if i != tc.want[k] {
				t.Errorf("%s: row %s found at %d, want %d", tc.name, id, i, tc.want[k])
			}
		}
	}
}
