package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rssWatch follows the peak resident memory of a process tree: the process
// it is started on and every descendant (hayloft's plugin processes). At
// each sample it sums the peak (VmHWM, kept by the kernel) of every process
// alive then, and keeps the largest sum: an upper bound of the tree's
// memory at any one instant that does not add up processes which never
// lived at once (the plugins the config check starts and stops before the
// run). A process that grows after the last sample and exits before the
// next is missed. Linux only: elsewhere the peak stays 0.
type rssWatch struct {
	root int
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	peaks map[int]int64  // pid → VmHWM in bytes
	names map[int]string // pid → its command line, shortened
	// anon and file are each process's largest RssAnon and RssFile seen
	// (sampled, so at most VmHWM together): how much of its peak is its
	// own memory and how much the binary's pages it has mapped, which
	// the processes share and which depend on how the page cache holds
	// the binary (large folios are mapped whole).
	anon, file map[int]int64
	max        int64 // the largest sum of the live processes' peaks
	procs      int   // how many processes that sum counted
}

// watchRSS starts sampling the tree under root every interval.
func watchRSS(root int, interval time.Duration) *rssWatch {
	w := &rssWatch{root: root, stop: make(chan struct{}), done: make(chan struct{}),
		peaks: map[int]int64{}, names: map[int]string{}, anon: map[int]int64{}, file: map[int]int64{}}
	go func() {
		defer close(w.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			w.sample()
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// finish stops sampling and returns the peak, in bytes, and how many
// processes it sums.
func (w *rssWatch) finish() (int64, int) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max, w.procs
}

// breakdown is each process's peak, largest first: where the memory is.
func (w *rssWatch) breakdown() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	pids := make([]int, 0, len(w.peaks))
	for pid := range w.peaks {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return w.peaks[pids[i]] > w.peaks[pids[j]] })
	var b strings.Builder
	for _, pid := range pids {
		fmt.Fprintf(&b, "  %6.1f MB  (anon %5.1f, file %5.1f)  %s\n", mb(w.peaks[pid]), mb(w.anon[pid]), mb(w.file[pid]), w.names[pid])
	}
	return b.String()
}

// split is the sums of each process's largest anonymous and file-backed
// resident memory: what the processes hold of their own, and the pages
// of the binary they map, which they share and which the peak counts once
// per process. The file part moves with code layout (the page cache maps
// the binary in large folios, whole), by ±20 MB between builds that run
// the same code; the anonymous part is what copies of a prompt add to.
func (w *rssWatch) split() (anon, file int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for pid := range w.peaks {
		anon += w.anon[pid]
		file += w.file[pid]
	}
	return anon, file
}

// commandOf is a process's command line without the binary's directory:
// "hayloft plugin start model openai".
func commandOf(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return fmt.Sprintf("pid %d", pid)
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	args[0] = filepath.Base(args[0])
	return strings.Join(args, " ")
}

// sample reads VmHWM of every process of the tree now.
func (w *rssWatch) sample() {
	pids := descendants(w.root)
	w.mu.Lock()
	defer w.mu.Unlock()
	var sum int64
	n := 0
	for _, pid := range append(pids, w.root) {
		st, ok := memStatus(pid)
		if !ok {
			continue // gone meanwhile
		}
		hwm := st.hwm
		w.anon[pid] = max(w.anon[pid], st.anon)
		w.file[pid] = max(w.file[pid], st.file)
		sum += hwm
		n++
		w.peaks[pid] = max(w.peaks[pid], hwm)
		if _, ok := w.names[pid]; !ok {
			w.names[pid] = commandOf(pid)
		}
	}
	if sum > w.max {
		w.max, w.procs = sum, n
	}
}

// descendants lists the processes under root: from the children files of
// each thread of each process (/proc/PID/task/TID/children) where the
// kernel has them, else from every process's parent.
//
// The scan of every process's stat file cost this process 6 % of a core
// at a sample every 20 ms (81 processes on the machine), CPU that the
// rows' client and server then lacked; the children files cost a read
// per thread of the tree's few processes.
func descendants(root int) []int {
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		kids, ok := childrenOf(p)
		if !ok {
			return scanDescendants(root)
		}
		out = append(out, kids...)
		queue = append(queue, kids...)
	}
	return out
}

// childrenOf lists pid's children from its threads' children files; ok
// is false when the kernel has none (CONFIG_PROC_CHILDREN unset). A
// process gone meanwhile has no children.
func childrenOf(pid int) (kids []int, ok bool) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(pid), "children")); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(dir); err == nil {
			return nil, false // the process is there, its children file is not
		}
		return nil, true
	}
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, true
	}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "children"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				kids = append(kids, c)
			}
		}
	}
	return kids, true
}

// scanDescendants lists the processes under root, from each process's
// parent in /proc/PID/stat.
func scanDescendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads a process's parent pid: the field after the command name,
// which is in parentheses and may itself hold spaces and parentheses.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// procMem is what a process's status says of its memory, in bytes: its
// peak resident set size and its resident anonymous and file pages now.
type procMem struct{ hwm, anon, file int64 }

// memStatus reads a process's procMem; ok is false if it is gone or its
// status has no VmHWM.
func memStatus(pid int) (m procMem, ok bool) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return m, false
	}
	defer f.Close()
	fields := map[string]*int64{"VmHWM:": &m.hwm, "RssAnon:": &m.anon, "RssFile:": &m.file}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, v, _ := strings.Cut(sc.Text(), "\t")
		dst := fields[name]
		if dst == nil {
			continue
		}
		f := strings.Fields(v) // "123456 kB"
		if len(f) != 2 || f[1] != "kB" {
			return m, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, false
		}
		*dst = kb << 10
		if name == "VmHWM:" {
			ok = true
		}
	}
	return m, ok
}
