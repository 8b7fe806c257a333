package wasm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// meter rewrites a module so that it checks its own deadline cheaply, and
// returns the rewritten module.
//
// Why: wazero stops a looping guest only with close-on-context-done, which
// compiles every loop header into an exit from native code to Go and back.
// A Go guest enters a loop with every function call, so that exit is most
// of its time: measured on the keyword-coverage example, its words function
// ran 11× slower with it than without. The rewritten module instead counts
// down a fuel global at every function entry and loop header — a load, a
// subtraction, a store and a branch, all native; a function that opens
// with a loop is checked at that loop only — and calls the host's
// hayloft.tick only when the fuel runs out; tick ends the call when its
// deadline has passed or the scorer is closing, and refills the fuel.
// Each check charges one unit plus one per meterBytesPerUnit bytes of the
// function or loop body it guards, so that a huge loop body or a chain of
// calls without loops still reaches tick soon; a bulk memory or table
// operation is charged by its size first. The fuel is an i64, which no run
// of charges can wrap.
//
// The rewrite appends a function type, an import, and a global, shifts the
// index of every defined function by one (calls, exports, the start
// function, element segments, ref.func) and drops the name and DWARF
// sections, whose indices and offsets it would invalidate. It refuses what it does not fully
// understand (unknown opcodes, sections or encodings) with an error; the
// scorer then runs the module unchanged under close-on-context-done, which
// is slower but as safe. Whatever it emits, wazero validates it as any
// module.
func meter(code []byte) ([]byte, error) {
	r := reader{b: code}
	if len(code) < 8 || string(code[:4]) != "\x00asm" || binary.LittleEndian.Uint32(code[4:8]) != 1 {
		return nil, errors.New("not a version 1 WebAssembly binary")
	}
	r.off = 8
	var secs []section
	for r.more() {
		id := r.byte()
		size := r.u32()
		start := r.off
		r.skip(size)
		if r.err != nil {
			return nil, fmt.Errorf("section %d: %w", id, r.err)
		}
		if _, ok := sectionRank[id]; !ok {
			return nil, fmt.Errorf("unknown section %d", id)
		}
		secs = append(secs, section{id: id, body: code[start:r.off]})
	}
	for _, id := range []byte{secType, secImport, secGlobal} {
		secs = ensureSection(secs, id)
	}
	m := &meterer{}
	// Imports first: their count of functions and globals fixes the new
	// import's index and the new global's.
	for i := range secs {
		if secs[i].id == secType {
			if err := m.countTypes(secs[i].body); err != nil {
				return nil, fmt.Errorf("type section: %w", err)
			}
		}
		if secs[i].id == secImport {
			if err := m.countImports(secs[i].body); err != nil {
				return nil, fmt.Errorf("import section: %w", err)
			}
		}
		if secs[i].id == secGlobal {
			if err := m.countGlobals(secs[i].body); err != nil {
				return nil, fmt.Errorf("global section: %w", err)
			}
		}
		if secs[i].id == secFunction {
			if err := m.readFunctions(secs[i].body); err != nil {
				return nil, fmt.Errorf("function section: %w", err)
			}
		}
		if secs[i].id == secMemory {
			if err := checkMemories(secs[i].body); err != nil {
				return nil, fmt.Errorf("memory section: %w", err)
			}
		}
	}
	out := append([]byte(nil), code[:8]...)
	for _, s := range secs {
		body, err := m.rewrite(s)
		if err != nil {
			return nil, fmt.Errorf("section %d: %w", s.id, err)
		}
		if body == nil {
			continue // dropped
		}
		out = append(out, s.id)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	return out, nil
}

const (
	// meterFuel is the fuel a call starts with and tick refills: about a
	// millisecond of a Go guest's work between two ticks.
	meterFuel = 100_000
	// meterBytesPerUnit is how many bytes of code one unit of fuel pays for.
	meterBytesPerUnit = 64
	// tickModule and tickName are the import the rewrite adds.
	tickModule, tickName = "hayloft", "tick"
)

// Section ids.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// sectionRank is the order sections must appear in; custom sections may
// appear anywhere.
var sectionRank = map[byte]int{
	secCustom: 0, secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5, secTag: 6,
	secGlobal: 7, secExport: 8, secStart: 9, secElement: 10, secDataCount: 11, secCode: 12, secData: 13,
}

type section struct {
	id   byte
	body []byte
}

// ensureSection adds an empty section id where the order puts it, unless
// the module has one.
func ensureSection(secs []section, id byte) []section {
	at := len(secs)
	for i, s := range secs {
		if s.id == id {
			return secs
		}
		if s.id != secCustom && sectionRank[s.id] > sectionRank[id] && at == len(secs) {
			at = i
		}
	}
	empty := section{id: id, body: []byte{0}} // a vector of zero entries
	return append(secs[:at], append([]section{empty}, secs[at:]...)...)
}

// meterer holds what the rewrite learned about the module.
type meterer struct {
	types         uint32 // the new type's index
	importedFuncs uint32 // the tick import's index; defined functions shift past it
	fuelGlobal    uint32 // the new global's index
	importedGlobs uint32
	params        []uint32 // parameter count of each type
	funcTypes     []uint32 // type of each defined function
	defined       int      // defined functions rewritten so far
}

func (m *meterer) countTypes(b []byte) error {
	r := reader{b: b}
	m.types = r.u32()
	for range m.types {
		if form := r.byte(); form != 0x60 {
			r.fail(fmt.Errorf("type form %#x", form))
		}
		params := r.u32()
		for range params {
			r.valType()
		}
		for range r.u32() {
			r.valType()
		}
		m.params = append(m.params, params)
		if r.err != nil {
			return r.err
		}
	}
	return r.end()
}

func (m *meterer) readFunctions(b []byte) error {
	r := reader{b: b}
	for range r.u32() {
		t := r.u32()
		if r.err == nil && t >= uint32(len(m.params)) {
			return fmt.Errorf("type index %d out of range", t)
		}
		m.funcTypes = append(m.funcTypes, t)
	}
	return r.end()
}

// checkMemories refuses 64-bit memories, whose bulk operations take i64
// sizes that the charge for them does not read.
func checkMemories(b []byte) error {
	r := reader{b: b}
	for range r.u32() {
		if r.more() && r.b[r.off]&4 != 0 {
			return errors.New("64-bit memory")
		}
		r.limits()
	}
	return r.end()
}

func (m *meterer) countImports(b []byte) error {
	r := reader{b: b}
	n := r.u32()
	for range n {
		r.name()
		r.name()
		switch kind := r.byte(); kind {
		case 0: // func
			r.u32()
			m.importedFuncs++
		case 1: // table
			r.byte()
			r.limits()
		case 2: // memory
			r.limits()
		case 3: // global
			r.byte()
			r.byte()
			m.importedGlobs++
		default:
			return fmt.Errorf("import kind %d", kind)
		}
		if r.err != nil {
			return r.err
		}
	}
	return r.end()
}

func (m *meterer) countGlobals(b []byte) error {
	r := reader{b: b}
	m.fuelGlobal = m.importedGlobs + r.u32()
	return r.err
}

// fn maps a function index to its index in the rewritten module.
func (m *meterer) fn(i uint32) uint32 {
	if i >= m.importedFuncs {
		return i + 1
	}
	return i
}

func (m *meterer) rewrite(s section) ([]byte, error) {
	r := reader{b: s.body}
	var out []byte
	switch s.id {
	case secCustom:
		// Names and DWARF refer to function indices and code offsets
		// that the rewrite changes: stale, they would mislabel traces.
		if name := r.name(); r.err == nil && (name == "name" || strings.HasPrefix(name, ".debug_")) {
			return nil, nil
		}
		return s.body, nil
	case secTable:
		n := r.u32()
		for range n {
			if r.more() && r.b[r.off] == 0x40 { // a table with an initialiser
				return nil, errors.New("table initialiser expressions")
			}
			r.byte()
			r.limits()
		}
		out = s.body
	case secType:
		n := r.u32()
		out = appendU32(out, n+1)
		out = append(out, r.rest()...)
		out = append(out, 0x60, 0, 0) // func () -> ()
	case secImport:
		n := r.u32()
		out = appendU32(out, n+1)
		out = append(out, r.rest()...)
		out = appendName(out, tickModule)
		out = appendName(out, tickName)
		out = append(out, 0)
		out = appendU32(out, m.types)
	case secGlobal:
		n := r.u32()
		out = appendU32(out, n+1)
		for range n {
			out = append(out, r.byte(), r.byte()) // value type, mutability
			out = m.constExpr(&r, out)
		}
		out = append(out, 0x7E, 1, 0x42) // mutable i64 = meterFuel
		out = appendS32(out, meterFuel)
		out = append(out, 0x0B)
	case secExport:
		n := r.u32()
		out = appendU32(out, n)
		for range n {
			out = appendName(out, r.name())
			kind, idx := r.byte(), r.u32()
			if kind == 0 {
				idx = m.fn(idx)
			}
			out = appendU32(append(out, kind), idx)
		}
	case secStart:
		out = appendU32(out, m.fn(r.u32()))
	case secElement:
		n := r.u32()
		out = appendU32(out, n)
		for range n {
			out = m.element(&r, out)
		}
	case secCode:
		n := r.u32()
		out = appendU32(out, n)
		for range n {
			size := r.u32()
			body := r.bytes(size)
			if r.err != nil {
				break
			}
			fb, err := m.function(body)
			if err != nil {
				return nil, fmt.Errorf("function %d: %w", m.defined, err)
			}
			m.defined++
			out = appendU32(out, uint32(len(fb)))
			out = append(out, fb...)
		}
	default:
		return s.body, nil
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return out, nil
}

// element copies an element segment, mapping its function indices.
func (m *meterer) element(r *reader, out []byte) []byte {
	flags := r.u32()
	out = appendU32(out, flags)
	if flags > 7 {
		r.fail(fmt.Errorf("element segment flags %d", flags))
		return out
	}
	if flags&2 != 0 && flags&1 == 0 { // explicit table index
		out = appendU32(out, r.u32())
	}
	if flags&1 == 0 { // active: an offset
		out = m.constExpr(r, out)
	}
	if flags&3 != 0 { // elemkind or reftype
		out = append(out, r.byte())
	}
	n := r.u32()
	out = appendU32(out, n)
	for range n {
		if r.err != nil {
			return out
		}
		if flags&4 != 0 {
			out = m.constExpr(r, out)
		} else {
			out = appendU32(out, m.fn(r.u32()))
		}
	}
	return out
}

// constExpr copies a constant expression up to its end, mapping ref.func.
func (m *meterer) constExpr(r *reader, out []byte) []byte {
	for r.err == nil {
		op := r.byte()
		out = append(out, op)
		switch op {
		case 0x0B: // end
			return out
		case 0x41: // i32.const
			out = appendRaw(out, r.leb(5))
		case 0x42: // i64.const
			out = appendRaw(out, r.leb(10))
		case 0x43:
			out = appendRaw(out, r.bytes(4))
		case 0x44:
			out = appendRaw(out, r.bytes(8))
		case 0x23: // global.get
			g := r.u32()
			if r.err == nil && g >= m.fuelGlobal {
				r.fail(fmt.Errorf("global index %d out of range", g))
			}
			out = appendU32(out, g)
		case 0xD0: // ref.null
			out = append(out, r.byte())
		case 0xD2: // ref.func
			out = appendU32(out, m.fn(r.u32()))
		case 0x6A, 0x6B, 0x6C, 0x7C, 0x7D, 0x7E: // extended constants: add, sub, mul
		case 0xFD: // v128.const
			if sub := r.u32(); sub != 12 {
				r.fail(fmt.Errorf("constant expression opcode 0xfd %d", sub))
				return out
			}
			out = appendU32(out, 12)
			out = appendRaw(out, r.bytes(16))
		default:
			r.fail(fmt.Errorf("constant expression opcode %#x", op))
		}
	}
	return out
}

// function rewrites one function body: a fuel check at its entry and at
// every loop header, a charge before every bulk memory or table operation
// in proportion to its size, and function indices mapped.
func (m *meterer) function(body []byte) ([]byte, error) {
	if m.defined >= len(m.funcTypes) {
		return nil, errors.New("more bodies than functions")
	}
	r := reader{b: body}
	groups := r.u32()
	locals := uint64(m.params[m.funcTypes[m.defined]])
	var decls []byte
	for range groups {
		n := r.u32()
		locals += uint64(n)
		decls = appendU32(decls, n)
		decls = append(decls, r.valType())
	}
	if r.err != nil {
		return nil, r.err
	}
	if locals >= 50_000 { // wazero's own limit is lower still
		return nil, fmt.Errorf("%d locals", locals)
	}
	code := r.rest()
	// The first pass finds where each loop ends, so that its check can
	// charge for its size, and whether a scratch local is needed.
	info, err := m.walk(code, nil)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+len(body)/8+32)
	// Two locals are added: the fuel as a check computes it, so that the
	// check compares it without loading the global again, and, for bulk
	// operations, their size.
	fuel, scratch := uint32(locals), uint32(locals)+1
	if info.bulk {
		out = appendU32(out, groups+2)
		out = append(out, decls...)
		out = append(out, 1, 0x7E, 1, 0x7F) // one i64, one i32
	} else {
		out = appendU32(out, groups+1)
		out = append(out, decls...)
		out = append(out, 1, 0x7E)
	}
	// Most of a Go guest's functions start with the loop their branches go
	// through, after a lead-in (the stack pointer loaded, the blocks of the
	// resume points): that loop's check follows the entry's with a few
	// constant-time instructions between them, so the entry's is left out
	// and the loop's charges what the entry's would have, the whole
	// function. The lead-in runs once per entry and what follows the loop
	// at most once, so each path through the function is still charged for
	// every byte it runs, and a call costs one check instead of two.
	if info.leadLoop < 0 {
		out = m.check(out, len(code), fuel)
	}
	_, err = m.walk(code, func(op, sub uint32, at, next int) {
		switch {
		case op == 0x10 || op == 0x12 || op == 0xD2: // call, return_call, ref.func
			ir := reader{b: code[:next], off: at + 1}
			idx := ir.u32()
			out = appendU32(append(out, byte(op)), m.fn(idx))
		case op == 0x03: // loop
			out = append(out, code[at:next]...)
			size := info.loopEnds[at] - next
			if at == info.leadLoop {
				size = len(code)
			}
			out = m.check(out, size, fuel)
		case op == 0xFC && isBulk(sub):
			out = m.charge(out, scratch)
			out = append(out, code[at:next]...)
		default:
			out = append(out, code[at:next]...)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// isBulk reports the 0xfc operations whose work grows with the size on top
// of the stack: memory.init, memory.copy, memory.fill, table.init,
// table.copy, table.fill.
func isBulk(sub uint32) bool {
	return sub == 8 || sub == 10 || sub == 11 || sub == 12 || sub == 14 || sub == 17
}

// check appends the fuel check guarding size bytes of code, with local
// tmp (an i64) as scratch:
//
//	global.get fuel; i64.const cost; i64.sub; local.tee tmp; global.set fuel
//	local.get tmp; i64.const 0; i64.le_s
//	if; call tick; i64.const meterFuel; global.set fuel; end
func (m *meterer) check(out []byte, size int, tmp uint32) []byte {
	cost := int32(1 + size/meterBytesPerUnit)
	if cost > meterFuel {
		cost = meterFuel
	}
	out = appendU32(append(out, 0x23), m.fuelGlobal)
	out = appendS32(append(out, 0x42), cost)
	out = append(out, 0x7D)
	out = appendU32(append(out, 0x22), tmp)
	out = appendU32(append(out, 0x24), m.fuelGlobal)
	out = appendU32(append(out, 0x20), tmp)
	out = append(out, 0x42, 0, 0x57, 0x04, 0x40)
	out = appendU32(append(out, 0x10), m.importedFuncs)
	out = appendS32(append(out, 0x42), meterFuel)
	out = appendU32(append(out, 0x24), m.fuelGlobal)
	return append(out, 0x0B)
}

// charge appends, before a bulk operation, a charge of one unit per
// bulkBytesPerUnit of its size, which is on top of the stack and stays
// there; the next check calls tick if that emptied the fuel:
//
//	local.tee scratch; global.get fuel; local.get scratch; i64.extend_i32_u
//	i64.const shift; i64.shr_u; i64.sub; global.set fuel
func (m *meterer) charge(out []byte, scratch uint32) []byte {
	out = appendU32(append(out, 0x22), scratch)
	out = appendU32(append(out, 0x23), m.fuelGlobal)
	out = appendU32(append(out, 0x20), scratch)
	out = append(out, 0xAD, 0x42, bulkShift, 0x88, 0x7D)
	return appendU32(append(out, 0x24), m.fuelGlobal)
}

// bulkShift makes a bulk operation cost one unit of fuel per 4 KiB: a
// loop filling all of a 4 GiB memory reaches tick every few iterations.
const bulkShift = 12

// leadIn reports whether op may come before a function's lead loop: it
// runs in constant time and cannot branch, call or trap. A Go guest's
// functions open with global.get, local.set and blocks before their loop.
func leadIn(op uint32) bool {
	switch op {
	case 0x02, // block
		0x20, 0x21, 0x22, // local.get, local.set, local.tee
		0x23,       // global.get
		0x41, 0x42: // i32.const, i64.const
		return true
	}
	return false
}

// walkInfo is what walk learns of a function's code.
type walkInfo struct {
	// loopEnds maps each loop instruction's position to the position
	// just past its matching end.
	loopEnds map[int]int
	bulk     bool // the code has a bulk memory or table operation
	// leadLoop is the position of a loop that only a lead-in precedes
	// (see leadIn), -1 if the code does not start so.
	leadLoop int
}

// walk decodes every instruction of a function's code, calling visit (if
// not nil) with each one's opcode, its sub-opcode for prefixed ones, where it
// starts and where the next begins. Any opcode or encoding it does not know
// is an error, and so is a global index past the module's own globals: the
// original module cannot have used the fuel global's index validly, and
// must not reach the fuel through it.
func (m *meterer) walk(code []byte, visit func(op, sub uint32, at, next int)) (walkInfo, error) {
	r := reader{b: code}
	info := walkInfo{loopEnds: map[int]int{}, leadLoop: -1}
	lead := true // only a lead-in so far
	// open holds the positions of the open blocks, -1 for those that are
	// not loops; the function's body is the outermost.
	open := []int{-1}
	for r.more() && r.err == nil {
		if len(open) == 0 {
			r.fail(errors.New("code after the function's end"))
			break
		}
		at := r.off
		op := uint32(r.byte())
		var sub uint32
		if lead && !leadIn(op) {
			lead = false
			if op == 0x03 {
				info.leadLoop = at
			}
		}
		switch {
		case op == 0x02 || op == 0x04: // block, if
			r.blockType()
			open = append(open, -1)
		case op == 0x03: // loop
			r.blockType()
			open = append(open, at)
		case op == 0x0B: // end
			if start := open[len(open)-1]; start >= 0 {
				info.loopEnds[start] = r.off
			}
			open = open[:len(open)-1]
		case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0F || op == 0x1A || op == 0x1B || op == 0xD1:
		case op == 0x0C || op == 0x0D: // br, br_if
			r.u32()
		case op == 0x0E: // br_table
			n := r.u32()
			for i := uint32(0); i <= n && r.err == nil; i++ {
				r.u32()
			}
		case op == 0x10 || op == 0x12 || op == 0xD2: // call, return_call, ref.func
			r.u32()
		case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
			r.u32()
			r.u32()
		case op == 0x1C: // select with types
			n := r.u32()
			r.bytes(n)
		case op == 0x23 || op == 0x24: // global.get, global.set
			if g := r.u32(); r.err == nil && g >= m.fuelGlobal {
				r.fail(fmt.Errorf("global index %d out of range", g))
			}
		case op >= 0x20 && op <= 0x26: // local and table get/set/tee
			r.u32()
		case op >= 0x28 && op <= 0x3E: // loads and stores
			r.memarg()
		case op == 0x3F || op == 0x40: // memory.size, memory.grow
			r.u32()
		case op == 0x41:
			r.leb(5)
		case op == 0x42:
			r.leb(10)
		case op == 0x43:
			r.bytes(4)
		case op == 0x44:
			r.bytes(8)
		case op >= 0x45 && op <= 0xC4: // numeric
		case op == 0xD0: // ref.null
			if t := r.byte(); t != 0x70 && t != 0x6F {
				r.fail(fmt.Errorf("ref.null of type %#x", t))
			}
		case op == 0xFC:
			sub = r.u32()
			switch {
			case sub <= 7:
			case sub == 8 || sub == 10 || sub == 12 || sub == 14: // memory.init, memory.copy, table.init, table.copy
				r.u32()
				r.u32()
			case sub == 9 || sub == 11 || sub == 13 || (sub >= 15 && sub <= 17):
				r.u32()
			default:
				r.fail(fmt.Errorf("opcode 0xfc %d", sub))
			}
			info.bulk = info.bulk || isBulk(sub)
		case op == 0xFD:
			sub = r.u32()
			switch {
			case sub <= 11 || sub == 92 || sub == 93: // loads and stores
				r.memarg()
			case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
				r.bytes(16)
			case sub >= 21 && sub <= 34: // lane access
				r.byte()
			case sub >= 84 && sub <= 91: // lane loads and stores
				r.memarg()
				r.byte()
			case sub <= 0x113:
			default:
				r.fail(fmt.Errorf("opcode 0xfd %d", sub))
			}
		case op == 0xFE:
			sub = r.u32()
			switch {
			case sub == 3: // atomic.fence
				r.byte()
			case sub <= 0x4E:
				r.memarg()
			default:
				r.fail(fmt.Errorf("opcode 0xfe %d", sub))
			}
		default:
			r.fail(fmt.Errorf("opcode %#x", op))
		}
		if r.err == nil && visit != nil {
			visit(op, sub, at, r.off)
		}
	}
	if r.err != nil {
		return walkInfo{}, r.err
	}
	if len(open) != 0 {
		return walkInfo{}, errors.New("function body does not end its blocks")
	}
	return info, nil
}
