package main

import (
	"os"
	"os/exec"
	"slices"
	"testing"
)

// memStatus reads this process's peak and its anonymous and file pages;
// the two parts are resident now, so they cannot exceed the peak.
func TestMemStatus(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc:", err)
	}
	held := make([]byte, 8<<20)
	for i := range held {
		held[i] = 1
	}
	m, ok := memStatus(os.Getpid())
	if !ok {
		t.Fatal("no VmHWM in /proc/self/status")
	}
	if m.anon < int64(len(held)) || m.file <= 0 || m.anon+m.file > m.hwm {
		t.Errorf("hwm %d, anon %d, file %d: want anon >= %d, file > 0, anon+file <= hwm", m.hwm, m.anon, m.file, len(held))
	}
	if _, ok := memStatus(-1); ok {
		t.Error("a process that does not exist has a status")
	}
	w := &rssWatch{peaks: map[int]int64{7: 3 << 20}, names: map[int]string{7: "hayloft plugin start task niah"},
		anon: map[int]int64{7: 1 << 20}, file: map[int]int64{7: 2 << 20}}
	if got, want := w.breakdown(), "     3.0 MB  (anon   1.0, file   2.0)  hayloft plugin start task niah\n"; got != want {
		t.Errorf("breakdown:\n%q\nwant\n%q", got, want)
	}
}

// descendants finds a child and its child, by the children files and by
// the scan of every process alike.
func TestDescendants(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc:", err)
	}
	// sh starts cat and waits for it: a child and a grandchild, both
	// alive until cat's stdin closes.
	cmd := exec.Command("sh", "-c", "cat; exit 0")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	for name, list := range map[string]func(int) []int{"descendants": descendants, "scanDescendants": scanDescendants} {
		got := list(os.Getpid())
		if !slices.Contains(got, cmd.Process.Pid) {
			t.Errorf("%s(self) = %v: no child %d", name, got, cmd.Process.Pid)
		}
	}
	if got := descendants(-1); len(got) != 0 {
		t.Errorf("descendants of no process = %v", got)
	}
}
