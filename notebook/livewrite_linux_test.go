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

	"github.com/iota-uz/repl-mcp/internal/testproc"
	"github.com/iota-uz/repl-mcp/internal/tier"
	"github.com/iota-uz/repl-mcp/notebook"
)

// TestFullDiskIsReportedAndHeals fills a real filesystem (a 512 KiB tmpfs) that holds
// the record and the live notebook. A cell recorded while it is full left a torn
// entry, and from then on every export failed ("Notebook record of the session
// cannot be read") and the live notebook froze, also once space was back. Now the
// cell that could not be written is named in the notebook where it would be, the
// cells after it are kept, and the live notebook catches up once space is back.
func TestFullDiskIsReportedAndHeals(t *testing.T) {
	disk, ran := smallDisk(t)
	if ran {
		return
	}
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

// inMountNamespace marks the copy of a test that smallDisk runs in a user and mount
// namespace of its own.
const inMountNamespace = "REPL_MCP_TEST_IN_MOUNT_NAMESPACE"

// smallDisk mounts a 512 KiB tmpfs for t and returns its directory. Mounting needs
// CAP_SYS_ADMIN: without it (not root), t runs again in a child test binary inside a
// user and mount namespace of its own (unshare -rm), where it has that capability over
// its own mounts, and ran says the child ran it (and t failed if the child did).
func smallDisk(t *testing.T) (disk string, ran bool) {
	t.Helper()
	disk = t.TempDir()
	err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=512k,mode=0700")
	if err == nil {
		t.Cleanup(func() { syscall.Unmount(disk, syscall.MNT_DETACH) })
		return disk, false
	}
	if os.Getenv(inMountNamespace) != "" {
		t.Fatalf("a tmpfs could not be mounted even in a mount namespace of the test's own: %v", err)
	}
	env := append(os.Environ(), inMountNamespace+"=1")
	out, errOut, runErr := testproc.Run(t.Context(), "", env, "unshare", "--user", "--map-root-user", "--mount",
		os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	switch {
	case runErr == nil && strings.Contains(out, "--- PASS: "+t.Name()):
		t.Logf("mounted as root of a user namespace of its own (not root here: %v)", err)
		return "", true
	case runErr != nil && !strings.Contains(out, "=== RUN"):
		// unshare itself failed: no user namespaces for this user here.
		if tier.Fast() {
			t.Skipf("a small tmpfs needs root or a user namespace, and neither is here: %v; %v: %s", err, runErr, errOut)
		}
		t.Fatalf("a small tmpfs needs root or a user namespace (unshare -rm), and neither is here: %v; %v: %s", err, runErr, errOut)
	}
	t.Fatalf("in a mount namespace of its own: %v\n%s%s", runErr, out, errOut)
	return "", true
}
