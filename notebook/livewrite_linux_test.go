package notebook_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iota-uz/repl-mcp/notebook"
)

// TestFullDiskIsReportedAndHeals fills a real filesystem (a 512 KiB tmpfs) that holds
// the record and the live notebook. A cell recorded while it is full left a torn
// entry, and from then on every export failed ("Notebook record of the session
// cannot be read") and the live notebook froze, also once space was back. Now the
// cell that could not be written is named in the notebook where it would be, the
// cells after it are kept, and the live notebook catches up once space is back.
func TestFullDiskIsReportedAndHeals(t *testing.T) {
	disk := t.TempDir()
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=512k,mode=0700"); err != nil {
		t.Skipf("a small tmpfs needs root (CAP_SYS_ADMIN) to mount, which this run has not: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(disk, syscall.MNT_DETACH) })
	live := filepath.Join(disk, "live")
	os.Mkdir(live, 0o700)
	k, err := notebook.NewKeeperWithLimits(notebook.Config{Root: filepath.Join(disk, "records"), LiveDir: live}, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	for i := 1; i <= 2; i++ {
		k.CellFinished(finished(i, 1, fmt.Sprintf("x = %d", i), "small\n", nil))
	}
	liveNotebook(t, live, 2)

	filler := filepath.Join(disk, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("f"), 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	// 100 KB of output cannot be written: the disk is full.
	k.CellFinished(finished(3, 1, "print('y' * 100_000)", strings.Repeat("y", 100_000)+"\n", nil))
	k.Flush()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	k.CellFinished(finished(4, 1, "z = 4", "after\n", nil))

	out, n := export(t, k, filepath.Join(t.TempDir(), "e.ipynb"))
	if out.Cells != 3 {
		t.Fatalf("exported %+v", out)
	}
	var texts []string
	for _, c := range n.Cells[1:] {
		texts = append(texts, c.text())
	}
	if len(texts) != 4 || texts[0] != "x = 1" || texts[1] != "x = 2" || texts[3] != "z = 4" ||
		!strings.HasPrefix(texts[2], "**Cell [3] is not in this notebook**: it could not be recorded: ") ||
		!strings.Contains(texts[2], "no space left on device") {
		t.Fatalf("the notebook's cells: %q", texts)
	}
	ln, _ := liveNotebook(t, live, 3)
	if got := ln.Cells[3].text(); got != texts[2] {
		t.Fatalf("the live notebook's third cell: %q", got)
	}
}
