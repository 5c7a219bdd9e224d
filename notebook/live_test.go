package notebook_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/iota-uz/repl-mcp/guardian"
	"github.com/iota-uz/repl-mcp/internal/pythons"
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

// TestLiveNotebookAfterEveryCell runs real cells in a real worker with a live
// directory: after each cell the session's live notebook holds exactly the cells
// run so far, and a reader polling the directory (and exporting) the whole time
// never finds an .ipynb that is not a whole notebook.
func TestLiveNotebookAfterEveryCell(t *testing.T) {
	live := t.TempDir()
	k, err := notebook.New(notebook.Config{Root: filepath.Join(t.TempDir(), "records"), LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	project, _ := filepath.EvalSymlinks(t.TempDir())
	m := repl.NewManager(t.Context(), repl.Config{
		Python: pythons.ForTest(t)[0].Path, PythonSource: "test", Project: project, Env: os.Environ(),
		Version: "test", Recorder: k,
	})
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
		n := readNotebook(t, name)
		got := n.code()
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
