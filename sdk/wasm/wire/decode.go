package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/hayloft/hayloft/sdk"
)

// errShort is a length or count that runs past the end of the data.
var errShort = errors.New("truncated")

// decoder reads values from b. Every length and count is checked against
// the bytes left before anything is allocated for it, and the containers
// that nest (arrays and objects of any values) are sized by their declared
// counts only while the counts sized so far total no more elements than b
// has bytes (presized): beyond, they grow as their elements decode. Sized
// by every count, each of 63 nested levels could claim every byte left, all
// alive at once, some 1,000 times the input. A hostile encoder can make a
// decode fail, but not make it allocate more than a small multiple of its
// input.
type decoder struct {
	b     []byte
	off   int
	depth int
	// presized counts the elements containers were sized for in advance.
	presized int
}

// presize is how many of a container's n declared elements to size it for
// in advance (see decoder).
func (d *decoder) presize(n int) int {
	k := min(n, len(d.b)-d.presized)
	d.presized += k
	return k
}

func (d *decoder) more() bool { return d.off < len(d.b) }

func (d *decoder) left() int { return len(d.b) - d.off }

func (d *decoder) tag() (byte, error) {
	if !d.more() {
		return 0, errShort
	}
	t := d.b[d.off]
	d.off++
	return t, nil
}

func (d *decoder) expect(want byte) error {
	t, err := d.tag()
	if err != nil {
		return err
	}
	if t != want {
		return fmt.Errorf("tag %d, want %d", t, want)
	}
	return nil
}

func (d *decoder) u32() (int, error) {
	if d.left() < 4 {
		return 0, errShort
	}
	n := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return int(n), nil
}

// count reads an element count; each element takes at least min bytes.
func (d *decoder) count(min int) (int, error) {
	n, err := d.u32()
	if err != nil {
		return 0, err
	}
	if n > d.left()/min {
		return 0, fmt.Errorf("count %d exceeds the %d bytes left", n, d.left())
	}
	return n, nil
}

// bytes reads a u32 length and that many bytes, sharing d.b.
func (d *decoder) bytes() ([]byte, error) {
	n, err := d.u32()
	if err != nil {
		return nil, err
	}
	if n > d.left() {
		return nil, fmt.Errorf("length %d exceeds the %d bytes left", n, d.left())
	}
	p := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return p, nil
}

// rawString reads a string payload without its tag.
func (d *decoder) rawString() (string, error) {
	p, err := d.bytes()
	if err != nil || len(p) == 0 {
		return "", err
	}
	return unsafe.String(&p[0], len(p)), nil
}

func (d *decoder) string() (string, error) {
	if err := d.expect(TagString); err != nil {
		return "", err
	}
	return d.rawString()
}

func (d *decoder) rawNumber() (float64, error) {
	if d.left() < 8 {
		return 0, errShort
	}
	x := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.off:]))
	d.off += 8
	if !finite(x) {
		return 0, fmt.Errorf("%v is not a finite number", x)
	}
	return x, nil
}

func (d *decoder) number() (float64, error) {
	if err := d.expect(TagNumber); err != nil {
		return 0, err
	}
	return d.rawNumber()
}

// int reads a number that must be a whole number an int holds.
func (d *decoder) int() (int, error) {
	x, err := d.number()
	if err != nil {
		return 0, err
	}
	if x != math.Trunc(x) || x < math.MinInt32 || x > math.MaxInt32 {
		return 0, fmt.Errorf("%v is not a whole number within 32 bits", x)
	}
	return int(x), nil
}

func (d *decoder) bool() (bool, error) {
	t, err := d.tag()
	switch {
	case err != nil:
		return false, err
	case t == TagTrue:
		return true, nil
	case t == TagFalse:
		return false, nil
	}
	return false, fmt.Errorf("tag %d, want a boolean", t)
}

func (d *decoder) strings() ([]string, error) {
	if err := d.expect(TagArray); err != nil {
		return nil, err
	}
	n, err := d.count(5)
	if err != nil {
		return nil, err
	}
	ss := make([]string, n)
	for i := range ss {
		if ss[i], err = d.string(); err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return ss, nil
}

func (d *decoder) numbers() ([]float64, error) {
	if err := d.expect(TagArray); err != nil {
		return nil, err
	}
	n, err := d.count(9)
	if err != nil {
		return nil, err
	}
	xs := make([]float64, n)
	for i := range xs {
		if xs[i], err = d.number(); err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return xs, nil
}

func (d *decoder) grid() (*sdk.GridPoint, error) {
	if err := d.expect(TagArray); err != nil {
		return nil, err
	}
	if n, err := d.u32(); err != nil || n != 2 {
		return nil, fmt.Errorf("grid: want [length, depth] (%v)", err)
	}
	length, err := d.int()
	if err != nil {
		return nil, fmt.Errorf("grid length: %w", err)
	}
	depth, err := d.number()
	if err != nil {
		return nil, fmt.Errorf("grid depth: %w", err)
	}
	return &sdk.GridPoint{Length: length, Depth: depth}, nil
}

func (d *decoder) messages() ([]sdk.Message, error) {
	if err := d.expect(TagArray); err != nil {
		return nil, err
	}
	n, err := d.count(15)
	if err != nil {
		return nil, err
	}
	ms := make([]sdk.Message, n)
	for i := range ms {
		if err := d.expect(TagArray); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if k, err := d.u32(); err != nil || k != 2 {
			return nil, fmt.Errorf("message %d: want [role, content] (%v)", i, err)
		}
		if ms[i].Role, err = d.string(); err != nil {
			return nil, fmt.Errorf("message %d role: %w", i, err)
		}
		if ms[i].Content, err = d.string(); err != nil {
			return nil, fmt.Errorf("message %d content: %w", i, err)
		}
	}
	return ms, nil
}

// json reads a json value's text.
func (d *decoder) json() ([]byte, error) {
	if err := d.expect(TagJSON); err != nil {
		return nil, err
	}
	return d.bytes()
}

func (d *decoder) object() (map[string]any, error) {
	if err := d.expect(TagObject); err != nil {
		return nil, err
	}
	return d.rawObject()
}

func (d *decoder) rawObject() (map[string]any, error) {
	if d.depth++; d.depth > MaxDepth {
		return nil, fmt.Errorf("nested more than %d deep", MaxDepth)
	}
	defer func() { d.depth-- }()
	n, err := d.count(5)
	if err != nil {
		return nil, err
	}
	m := make(map[string]any, d.presize(n))
	for range n {
		k, err := d.rawString()
		if err != nil {
			return nil, fmt.Errorf("key: %w", err)
		}
		if m[k], err = d.value(); err != nil {
			return nil, fmt.Errorf("%q: %w", k, err)
		}
	}
	return m, nil
}

// value reads any value, as encoding/json would decode it into an any.
func (d *decoder) value() (any, error) {
	t, err := d.tag()
	if err != nil {
		return nil, err
	}
	switch t {
	case TagNull:
		return nil, nil
	case TagFalse:
		return false, nil
	case TagTrue:
		return true, nil
	case TagNumber:
		return d.rawNumber()
	case TagString:
		return d.rawString()
	case TagArray:
		if d.depth++; d.depth > MaxDepth {
			return nil, fmt.Errorf("nested more than %d deep", MaxDepth)
		}
		defer func() { d.depth-- }()
		n, err := d.count(1)
		if err != nil {
			return nil, err
		}
		a := make([]any, 0, d.presize(n))
		for i := range n {
			v, err := d.value()
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			a = append(a, v)
		}
		return a, nil
	case TagObject:
		return d.rawObject()
	case TagJSON:
		p, err := d.bytes()
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(p, &v); err != nil {
			return nil, fmt.Errorf("json value: %w", err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("unknown tag %d", t)
}

// skip passes over one value of a field the decoder does not know.
func (d *decoder) skip() error {
	_, err := d.value()
	return err
}
