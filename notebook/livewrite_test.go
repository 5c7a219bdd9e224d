package notebook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/iota-uz/repl-mcp/notebook"
)

const sessionID = "0123456789abcdef"

// liveNotebook waits until the session's live notebook holds want code cells and
// returns it, and its bytes.
func liveNotebook(t *testing.T, live string, want int) (nb, []byte) {
	t.Helper()
	path := filepath.Join(live, notebook.LiveName("analysis", sessionID))
	var n nb
	var data []byte
	testwait.Until(t, 10*time.Second, fmt.Sprintf("%d code cells in the live notebook", want), func() bool {
		var err error
		data, err = os.ReadFile(path)
		n = nb{}
		return err == nil && json.Unmarshal(data, &n) == nil && len(n.code()) == want
	})
	return n, data
}

// written is the metadata line that says when a notebook was written.
var written = regexp.MustCompile(`"written": "[^"]*"`)

// TestLiveNotebookIsTheExport: the live notebook, written a piece at a time as cells
// come (appended, and whole where its first cell changes), is byte for byte what an
// export of the same cells is, but for when each was written.
func TestLiveNotebookIsTheExport(t *testing.T) {
	live := t.TempDir()
	k := keeper(t, live, 100, 1<<20)
	for i, code := range []string{"x = 1", "print(x)", "r = mcp.call('s', 't')", "y = 2", "sh('ls')", "z = 3"} {
		fc := finished(i+1, 1, code, "out\n", str(fmt.Sprint(i)))
		if i == 3 {
			fc.Reset, fc.Result.Generation = true, 2
		}
		if i >= 3 {
			fc.Result.Generation = 2
		}
		k.CellFinished(fc)
		liveNotebook(t, live, i+1) // one write per cell: appends and whole renderings alike
	}
	_, data := liveNotebook(t, live, 6)
	exported := filepath.Join(t.TempDir(), "e.ipynb")
	export(t, k, exported)
	want, _ := os.ReadFile(exported)
	if got := written.ReplaceAll(data, nil); !bytes.Equal(got, written.ReplaceAll(want, nil)) {
		t.Fatalf("the live notebook:\n%s\nthe export:\n%s", data, want)
	}
	if !bytes.Contains(data, []byte("**The worker was reset before this cell**")) || !bytes.Contains(data, []byte("`sh`, `mcp`")) {
		t.Fatalf("the live notebook lacks the reset note or the helpers: %s", data)
	}
}

// TestLiveNotebookAppendsWhatIsNew: a new cell is appended to the live notebook;
// the cells it already holds are neither rendered nor read from the record again.
// The record's first segment is cut to nothing after the first cells reached the
// live file: a rendering of the whole record could no longer show them (every
// live write failed, and the notebook froze), the append still does.
func TestLiveNotebookAppendsWhatIsNew(t *testing.T) {
	live := t.TempDir()
	k := keeper(t, live, 100, 1<<20)
	k.CellFinished(finished(1, 1, "x = 1", "one\n", nil))
	k.CellFinished(finished(2, 1, "y = 2", "two\n", nil))
	before, _ := liveNotebook(t, live, 2)
	if err := os.Truncate(filepath.Join(k.Dir(), sessionID, "000000001.cells"), 0); err != nil {
		t.Fatal(err)
	}
	k.CellFinished(finished(3, 1, "z = 3", "three\n", nil))
	after, _ := liveNotebook(t, live, 3)
	for i, c := range before.code() {
		if got := after.code()[i]; got.text() != c.text() || got.Outputs[0]["text"].([]any)[0] != c.Outputs[0]["text"].([]any)[0] {
			t.Fatalf("cell %d changed: %+v, was %+v", i+1, got, c)
		}
	}
	if got := after.code()[2].text(); got != "z = 3" {
		t.Fatalf("the new cell: %q", got)
	}
}

// TestLiveNotebookIsWrittenOffTheCallsPath: a cell's CellFinished, and an export,
// return while the live notebook's write is held up; the notebook gets the cells
// once it may go on, in one write.
func TestLiveNotebookIsWrittenOffTheCallsPath(t *testing.T) {
	live := t.TempDir()
	k, err := notebook.NewKeeperWithLimits(notebook.Config{Root: filepath.Join(t.TempDir(), "records"), LiveDir: live}, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}, 1), make(chan struct{})
	var writes atomic.Int32
	k.SetLiveHook(func() {
		if writes.Add(1) == 1 {
			held <- struct{}{}
			<-release
		}
	})
	defer k.Close()
	k.CellFinished(finished(1, 1, "x = 1", "", nil))
	<-held // the first live write has begun, and waits
	for i := 2; i <= 5; i++ {
		k.CellFinished(finished(i, 1, fmt.Sprintf("x = %d", i), "", nil))
	}
	if out, _ := export(t, k, filepath.Join(t.TempDir(), "e.ipynb")); out.Cells != 5 {
		t.Fatalf("the export while the live write waits: %+v", out)
	}
	close(release)
	liveNotebook(t, live, 5)
	if n := writes.Load(); n > 3 {
		t.Errorf("%d live writes for 5 cells that came while one waited: not coalesced", n)
	}
}

// TestLiveNotebookDropsInBatches: past the record's bounds the live notebook keeps
// cells the record has dropped, up to a tenth of the bounds, then is rendered anew
// from the record: a cell's cost does not grow with the session, and the file says
// how many cells came before its first.
func TestLiveNotebookDropsInBatches(t *testing.T) {
	live := t.TempDir()
	k := keeper(t, live, 10, 1<<20)
	for i := 1; i <= 35; i++ {
		k.CellFinished(finished(i, 1, fmt.Sprintf("n = %d", i), "", nil))
		k.Flush()
		path := filepath.Join(live, notebook.LiveName("analysis", sessionID))
		testwait.Until(t, 10*time.Second, fmt.Sprintf("cell %d in the live notebook", i), func() bool {
			data, err := os.ReadFile(path)
			var n nb
			if err != nil || json.Unmarshal(data, &n) != nil {
				return false
			}
			code := n.code()
			if len(code) == 0 || code[len(code)-1].text() != fmt.Sprintf("n = %d", i) {
				return false
			}
			if len(code) < min(i, 10) || len(code) > 11 {
				t.Fatalf("after cell %d the live notebook holds %d cells", i, len(code))
			}
			first := *code[0].ExecutionCount
			if dropped := n.Metadata.ReplMCP["cells_dropped"].(float64); int(dropped) != first-1 {
				t.Fatalf("after cell %d: first cell [%d], %v said dropped", i, first, dropped)
			}
			return true
		})
	}
	if out, _ := export(t, k, filepath.Join(t.TempDir(), "e.ipynb")); out.Cells != 10 || out.Dropped != 25 {
		t.Fatalf("the export: %+v", out)
	}
}

// TestLiveNotebookAPersonChanged: a live file someone else replaced (a Jupyter save)
// is rendered anew from the record, never appended to at offsets that are no longer
// its own.
func TestLiveNotebookAPersonChanged(t *testing.T) {
	live := t.TempDir()
	k := keeper(t, live, 100, 1<<20)
	k.CellFinished(finished(1, 1, "x = 1", "", nil))
	liveNotebook(t, live, 1)
	path := filepath.Join(live, notebook.LiveName("analysis", sessionID))
	if err := os.WriteFile(path, []byte(`{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`), 0o600); err != nil {
		t.Fatal(err)
	}
	k.CellFinished(finished(2, 1, "y = 2", "", nil))
	n, _ := liveNotebook(t, live, 2)
	if n.code()[0].text() != "x = 1" || n.code()[1].text() != "y = 2" {
		t.Fatalf("the live notebook: %+v", n.code())
	}
}

// TestLiveNameNeverAnOption: a session named -rf gave -rf-0123abcd.ipynb, a name
// that a shell command takes for options; names keep no leading dash or dot.
func TestLiveNameNeverAnOption(t *testing.T) {
	for name, want := range map[string]string{
		"-rf": "rf-01234567.ipynb", "--all": "all-01234567.ipynb", ".-.x": "x-01234567.ipynb",
		"-": "session-01234567.ipynb", "": "session-01234567.ipynb", "a-b": "a-b-01234567.ipynb",
		"é x": "__x-01234567.ipynb",
	} {
		if got := notebook.LiveName(name, "0123456789"); got != want {
			t.Errorf("LiveName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestLiveTempFilesOfKilledServersAreSwept: a server killed while it wrote a live
// notebook left .NAME.ipynb.tmp-N beside it, up to tens of MB, for good. A new
// keeper removes those nobody writes; one a live writer holds, one just made, and
// files that are not such temp files stay.
func TestLiveTempFilesOfKilledServersAreSwept(t *testing.T) {
	live := t.TempDir()
	old := time.Now().Add(-time.Minute)
	make := func(name string) string {
		path := filepath.Join(live, name)
		if err := os.WriteFile(path, bytes.Repeat([]byte("x"), 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
		return path
	}
	left := make(".analysis-01234567.ipynb.tmp-123456")
	held := make(".other-89abcdef.ipynb.tmp-777")
	f, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(live, ".new-00000000.ipynb.tmp-1")
	os.WriteFile(fresh, nil, 0o600)
	kept := []string{held, fresh, make("analysis-01234567.ipynb"), make(".hidden.tmp-1"), make("notes.ipynb.tmp-2")}
	keeper(t, live, 100, 1<<20)
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temp file a killed server left is still there: %v", err)
	}
	for _, path := range kept {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s was swept: %v", filepath.Base(path), err)
		}
	}
}
