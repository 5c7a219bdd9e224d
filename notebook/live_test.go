package notebook_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/cellops"
	"github.com/iota-uz/repl-mcp/guardian"
	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/iota-uz/repl-mcp/notebook"
	"github.com/iota-uz/repl-mcp/repl"
)

// TestMain lets the test binary serve as the process guardian.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == guardian.Flag {
		os.Exit(guardian.Main())
	}
	os.Exit(m.Run())
}

// recordedManager is a manager of real workers in a project of its own, whose cells k
// records. The caller closes it before k.
func recordedManager(t *testing.T, k *notebook.Keeper) *repl.Manager {
	project, _ := filepath.EvalSymlinks(t.TempDir())
	m := repl.NewManager(t.Context(), repl.Config{OpLimits: cellops.Limits(),
		Python: pythons.ForTest(t)[0].Path, PythonSource: "test", Project: project, Env: os.Environ(),
		Version: "test", Recorder: k,
	})
	return m
}

// TestLiveNotebookAfterEveryCell runs real cells in a real worker with a live
// directory: soon after each cell (off its call's path) the session's live notebook
// holds exactly the cells run so far, and a reader polling the directory (and
// exporting) the whole time never finds an .ipynb that is not a whole notebook.
func TestLiveNotebookAfterEveryCell(t *testing.T) {
	live := t.TempDir()
	k, err := notebook.New(notebook.Config{Root: filepath.Join(t.TempDir(), "records"), LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	m := recordedManager(t, k)
	defer m.Close(0)
	sess := m.Default()
	name := filepath.Join(live, notebook.LiveName("default", sess.ID()))
	exported := filepath.Join(t.TempDir(), "exported.ipynb")

	stop := make(chan struct{})
	var reads, torn int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// An export while cells finish reads the record under the same lock.
			if _, err := k.Export(t.Context(), sess.ID(), "default", exported, true); err != nil {
				t.Errorf("export while cells run: %v", err)
				return
			}
			matches, _ := filepath.Glob(filepath.Join(live, "*.ipynb"))
			for _, path := range matches {
				data, err := os.ReadFile(path)
				if err != nil {
					continue // replaced between the glob and the read
				}
				reads++
				var v map[string]any
				if json.Unmarshal(data, &v) != nil || v["nbformat"] != 4.0 {
					torn++
				}
			}
		}
	}()

	cells := []string{"x = 21", "print(x * 2)", "{'answer': x * 2}"}
	for i, code := range cells {
		res := sess.Execute(t.Context(), repl.ExecRequest{Code: code})
		if !res.Success {
			t.Fatalf("%s: %v", code, *res.Error)
		}
		var got []nbCell
		testwait.Until(t, 10*time.Second, fmt.Sprintf("cell %d in the live notebook", i+1), func() bool {
			data, err := os.ReadFile(name)
			var n nb
			if err != nil || json.Unmarshal(data, &n) != nil {
				return false
			}
			got = n.code()
			return len(got) > i
		})
		if len(got) != i+1 || got[i].text() != code {
			t.Fatalf("after cell %d the live notebook holds %d code cells (last %q)", i+1, len(got), got[len(got)-1].text())
		}
	}
	close(stop)
	wg.Wait()
	if torn > 0 {
		t.Fatalf("%d of %d reads of the live directory found a half-written notebook", torn, reads)
	}
	last := readNotebook(t, name).code()[2].Outputs[0]
	if last["output_type"] != "execute_result" || last["data"].(map[string]any)["text/plain"].([]any)[0] != "{'answer': 42}" {
		t.Fatalf("the last cell's value: %v", last)
	}
	if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the live notebook's mode: %v %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(live)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".ipynb") {
			t.Errorf("the live directory holds %s", e.Name())
		}
	}
}

// TestRecordOutlivesTheHistory: past the session's 64 retained results the record
// still has every cell; python_run can no longer find the first, the notebook can.
func TestRecordOutlivesTheHistory(t *testing.T) {
	k, err := notebook.New(notebook.Config{Root: filepath.Join(t.TempDir(), "records")})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	m := recordedManager(t, k)
	defer m.Close(0)
	sess := m.Default()
	total := repl.HistoryRuns + 6
	var first string
	for i := range total {
		res := sess.Execute(t.Context(), repl.ExecRequest{Code: "n = " + strconv.Itoa(i)})
		if i == 0 {
			first = res.RunID
		}
	}
	if _, _, err := sess.Lookup(first, repl.Offsets{}); err == nil {
		t.Fatal("the history still has the first run: the test proves nothing")
	}
	out, err := k.Export(t.Context(), sess.ID(), "default", filepath.Join(t.TempDir(), "all.ipynb"), false)
	if err != nil {
		t.Fatal(err)
	}
	code := readNotebook(t, out.Path).code()
	if out.Cells != total || len(code) != total || code[0].text() != "n = 0" || code[0].Metadata["repl_mcp"].(map[string]any)["run_id"] != first {
		t.Fatalf("exported %+v; first cell %+v", out, code[0])
	}
}
