package notebook_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/notebook"
	"github.com/iota-uz/repl-mcp/repl"
)

// nb is the part of a notebook the tests read.
type nb struct {
	NBFormat      int `json:"nbformat"`
	NBFormatMinor int `json:"nbformat_minor"`
	Metadata      struct {
		Kernelspec   map[string]any `json:"kernelspec"`
		LanguageInfo map[string]any `json:"language_info"`
		ReplMCP      map[string]any `json:"repl_mcp"`
	} `json:"metadata"`
	Cells []nbCell `json:"cells"`
}

type nbCell struct {
	CellType       string           `json:"cell_type"`
	ID             string           `json:"id"`
	ExecutionCount *int             `json:"execution_count"`
	Source         []string         `json:"source"`
	Metadata       map[string]any   `json:"metadata"`
	Outputs        []map[string]any `json:"outputs"`
}

func (c nbCell) text() string { return strings.Join(c.Source, "") }

// code is the cells the session ran: the code cells but the first, which changes to
// the project directory (projectCell).
func (n nb) code() []nbCell {
	var out []nbCell
	for _, c := range n.Cells {
		if c.CellType == "code" && c.ID != "repl-mcp-project" {
			out = append(out, c)
		}
	}
	return out
}

func readNotebook(t *testing.T, path string) nb {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var n nb
	if err := json.Unmarshal(data, &n); err != nil {
		t.Fatalf("%s is no notebook: %v", path, err)
	}
	return n
}

func keeper(t *testing.T, live string, cells int, bytes int64) *notebook.Keeper {
	t.Helper()
	k, err := notebook.NewKeeperWithLimits(notebook.Config{Root: filepath.Join(t.TempDir(), "records"), LiveDir: live}, cells, bytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

var started = time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)

// finished is a cell of session "s1" that printed out and showed preview.
func finished(n int, generation uint64, code, out string, preview *string) repl.FinishedCell {
	return repl.FinishedCell{
		SessionID: "0123456789abcdef", SessionName: "analysis", Started: started.Add(time.Duration(n) * time.Second),
		Code: code,
		Result: &repl.Result{RunID: "run-" + code, Success: true, Stdout: out, ReturnValue: preview,
			Generation: generation, ElapsedMS: 12.5, State: repl.StatePreserved},
		Python: &repl.Ready{PythonVersion: "3.12.1", PythonExecutable: "/usr/bin/python3.12"},
	}
}

func str(s string) *string { return &s }

func export(t *testing.T, k *notebook.Keeper, path string) (notebook.Exported, nb) {
	t.Helper()
	out, err := k.Export(t.Context(), "0123456789abcdef", "analysis", path, false)
	if err != nil {
		t.Fatal(err)
	}
	return out, readNotebook(t, path)
}

func TestNotebookShape(t *testing.T) {
	k := keeper(t, "", 100, 1<<20)
	k.CellFinished(finished(1, 1, "x = 1\nprint(x)", "1\n", nil))
	k.CellFinished(finished(2, 1, "x + 1", "", str("2")))
	out, n := export(t, k, filepath.Join(t.TempDir(), "s.ipynb"))
	if out.Cells != 2 || out.Dropped != 0 {
		t.Fatalf("exported %+v, want 2 cells, none dropped", out)
	}
	if n.NBFormat != 4 || n.NBFormatMinor != 5 {
		t.Fatalf("nbformat %d.%d, want 4.5", n.NBFormat, n.NBFormatMinor)
	}
	if n.Metadata.Kernelspec["name"] != "python3" || n.Metadata.LanguageInfo["version"] != "3.12.1" ||
		n.Metadata.ReplMCP["python_executable"] != "/usr/bin/python3.12" {
		t.Fatalf("metadata names the wrong Python: %+v", n.Metadata)
	}
	if first := n.Cells[0]; first.CellType != "markdown" || !strings.Contains(first.text(), "none of repl-mcp's own helpers") {
		t.Fatalf("first cell: %+v", first)
	}
	code := n.code()
	if len(code) != 2 || code[0].text() != "x = 1\nprint(x)" || *code[0].ExecutionCount != 1 || *code[1].ExecutionCount != 2 {
		t.Fatalf("code cells: %+v", code)
	}
	stream := code[0].Outputs[0]
	if stream["output_type"] != "stream" || stream["name"] != "stdout" || stream["text"].([]any)[0] != "1\n" {
		t.Fatalf("stdout output: %v", stream)
	}
	result := code[1].Outputs[0]
	if result["output_type"] != "execute_result" || result["execution_count"] != 2.0 || result["data"].(map[string]any)["text/plain"].([]any)[0] != "2" {
		t.Fatalf("execute_result: %v", result)
	}
	meta := code[1].Metadata["repl_mcp"].(map[string]any)
	if meta["run_id"] != "run-x + 1" || meta["generation"] != 1.0 || meta["elapsed_ms"] != 12.5 || meta["started"] != "2026-12-01T21:00:02Z" {
		t.Fatalf("cell metadata: %v", meta)
	}
}

func TestNotebookErrorsAndLostState(t *testing.T) {
	k := keeper(t, "", 100, 1<<20)
	k.CellFinished(finished(1, 1, "import os", "", nil))
	fail := finished(2, 1, "raise ValueError('bad row')", "", nil)
	fail.Result.Success = false
	fail.Result.Error = str("Traceback (most recent call last):\n  File \"<cell 2>\", line 1, in <module>\nValueError: bad row")
	k.CellFinished(fail)
	reset := finished(3, 2, "y = 2", "", nil)
	reset.Reset = true
	k.CellFinished(reset)
	crash := finished(4, 2, "os._exit(1)", "", nil)
	crash.Result.Success, crash.Result.State, crash.Result.Error = false, repl.StateCleared, str("Worker crashed")
	k.CellFinished(crash)
	k.CellFinished(finished(5, 3, "z = 3", "", nil))
	k.CellFinished(finished(6, 4, "w = 4", "", nil)) // the idle worker died between cells
	fresh := finished(7, 4, "", "", nil)
	fresh.SourcePath, fresh.Argv, fresh.Fresh = "/tmp/job.py", []string{"a b"}, true
	fresh.Result.State, fresh.Result.Success = repl.StateCleared, false // its own worker died: the namespace is untouched
	k.CellFinished(fresh)
	_, n := export(t, k, filepath.Join(t.TempDir(), "s.ipynb"))

	var kinds []string
	for _, c := range n.Cells[1:] {
		if c.CellType == "markdown" {
			kinds = append(kinds, strings.SplitN(strings.TrimPrefix(c.text(), "**"), "**", 2)[0])
		} else {
			kinds = append(kinds, c.text())
		}
	}
	want := []string{
		"import os", "raise ValueError('bad row')",
		"The worker was reset before this cell", "y = 2",
		"os._exit(1)", "The worker stopped during the cell above",
		"z = 3",
		"The worker was restarted before this cell", "w = 4",
		"# python_execute_file(fresh=true): run in a worker of its own, the namespace untouched\n%run /tmp/job.py 'a b'",
	}
	if strings.Join(kinds, "|") != strings.Join(want, "|") {
		t.Fatalf("cells:\n%s\nwant:\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
	errOut := n.code()[1].Outputs[0]
	if errOut["output_type"] != "error" || errOut["ename"] != "ValueError" || errOut["evalue"] != "bad row" || len(errOut["traceback"].([]any)) != 3 {
		t.Fatalf("error output: %v", errOut)
	}
	crashOut := n.code()[3].Outputs[0]
	if crashOut["ename"] != "ReplMcpError" || crashOut["evalue"] != "Worker crashed" {
		t.Fatalf("a failure that is no traceback: %v", crashOut)
	}
}

// TestNotebookTellsWhatHappened: the notebook names the project the cells ran in, in
// its metadata and as a first code cell that changes to it; the session's events (a
// busy refusal, an interrupt) stand where they happened, between the cells, and count
// as no cell; a timeout reads as a TimeoutError, an interrupt as a KeyboardInterrupt,
// a dead worker as a DeadKernelError, Jupyter's names for them.
func TestNotebookTellsWhatHappened(t *testing.T) {
	k := keeper(t, "", 100, 1<<20)
	project := "/home/me/it's here"
	first := finished(1, 1, "import pandas as pd\nsales = pd.read_csv('sales.csv')", "", nil)
	first.Project = project
	k.CellFinished(first)
	k.SessionEvent(repl.SessionEvent{SessionID: "0123456789abcdef", SessionName: "analysis", Project: project,
		At: started.Add(90 * time.Second), Kind: repl.EventBusy, RunID: "run-slow", Text: "A call was refused: run run-slow had been running for 2 s"})
	k.SessionEvent(repl.SessionEvent{SessionID: "0123456789abcdef", SessionName: "analysis",
		At: started.Add(95 * time.Second), Kind: repl.EventCancel, RunID: "run-slow", Text: "python_cancel asked run run-slow to stop"})
	stops := map[repl.StopKind]string{repl.StopTimeout: "Execution timed out after 2 s; variables preserved; for a longer cell ...",
		repl.StopCancel: "Execution cancelled", repl.StopLost: "Python worker crashed; variables cleared (killed by SIGKILL)"}
	for i, stop := range []repl.StopKind{repl.StopCancel, repl.StopTimeout, repl.StopLost} {
		c := finished(2+i, 1, "slow()", "", nil)
		c.Result.Success, c.Result.Error, c.Stopped = false, str(stops[stop]+"\nTraceback (most recent call last):\nKeyboardInterrupt"), stop
		k.CellFinished(c)
	}
	out, n := export(t, k, filepath.Join(t.TempDir(), "s.ipynb"))
	if out.Cells != 4 {
		t.Errorf("exported %d cells, want the 4 the session ran (events are none)", out.Cells)
	}
	if n.Metadata.ReplMCP["project"] != project || !strings.Contains(n.Cells[0].text(), "The cells ran in `"+project+"`") {
		t.Errorf("the project is not named: %v\n%s", n.Metadata.ReplMCP, n.Cells[0].text())
	}
	setup := n.Cells[1]
	if setup.ID != "repl-mcp-project" || setup.CellType != "code" || setup.ExecutionCount != nil ||
		!strings.HasSuffix(setup.text(), "import os\nos.chdir('/home/me/it\\'s here')") {
		t.Errorf("the first code cell: %+v %q", setup, setup.text())
	}
	var order []string
	for _, c := range n.Cells[2:] {
		order = append(order, c.CellType+":"+strings.SplitN(c.text(), " (", 2)[0])
	}
	want := []string{"code:import pandas as pd\nsales = pd.read_csv('sales.csv')",
		"markdown:**Call refused: a cell was already running**", "markdown:**Interrupted**", "code:slow()", "code:slow()", "code:slow()"}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Errorf("cells in order:\n%s\nwant\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
	if text := n.Cells[3].text(); !strings.Contains(text, "(2026-12-01 21:01:30 UTC): A call was refused: run run-slow") {
		t.Errorf("the busy event: %q", text)
	}
	code := n.code()
	if *code[1].ExecutionCount != 2 {
		t.Errorf("the cell after the events is number %d, want 2", *code[1].ExecutionCount)
	}
	for i, want := range [][2]string{{"KeyboardInterrupt", "Execution cancelled"},
		{"TimeoutError", "Execution timed out after 2 s; variables preserved; for a longer cell ..."},
		{"DeadKernelError", "Python worker crashed; variables cleared (killed by SIGKILL)"}} {
		errOut := code[1+i].Outputs[0]
		if errOut["ename"] != want[0] || errOut["evalue"] != want[1] {
			t.Errorf("error of cell %d: %v %v, want %q", 2+i, errOut["ename"], errOut["evalue"], want)
		}
	}
}

// The first cell after a server restart says so, where a restore brought the variables
// back shows as an event, and an event after the last cell is still in an export.
func TestNotebookSaysTheServerRestartedAndWhatCameBack(t *testing.T) {
	k := keeper(t, "", 100, 1<<20)
	first := finished(1, 7, "x", "", nil)
	first.Result.StateReset, first.Result.StateResetReason = new(true), repl.ResetRestart
	k.CellFinished(first)
	k.SessionEvent(repl.SessionEvent{SessionID: "0123456789abcdef", SessionName: "analysis",
		At: started.Add(time.Minute), Kind: repl.EventRestore, RunID: "run-r", Text: "2 of 3 variables came back"})
	_, n := export(t, k, filepath.Join(t.TempDir(), "s.ipynb"))
	var order []string
	for _, c := range n.Cells[1:] {
		order = append(order, c.CellType+":"+strings.SplitN(c.text(), " (", 2)[0])
	}
	want := []string{"markdown:**The server restarted before this cell**", "code:x", "markdown:**Variables restored from a snapshot**"}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Errorf("cells in order:\n%s\nwant\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
}

func TestNotebookNamesReplOnlyHelpers(t *testing.T) {
	k := keeper(t, "", 100, 1<<20)
	k.CellFinished(finished(1, 1, "r = sh('ls')\nartifact_save(a, 'x')", "", nil))
	k.CellFinished(finished(2, 1, "mcp.call('s', 't')\nshape = 1", "", nil))
	_, n := export(t, k, filepath.Join(t.TempDir(), "s.ipynb"))
	about := n.Cells[0].text()
	if !strings.Contains(about, "`sh`, `mcp`, `artifact_save`") || strings.Contains(about, "`artifact`,") {
		t.Fatalf("the first cell names the wrong helpers: %s", about)
	}
}

func TestRecordDropsOldestFirst(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		k := keeper(t, "", 3, 1<<20)
		for i := 1; i <= 5; i++ {
			k.CellFinished(finished(i, 1, "c"+string(rune('0'+i)), "", nil))
		}
		out, n := export(t, k, filepath.Join(t.TempDir(), "s.ipynb"))
		code := n.code()
		if out.Cells != 3 || out.Dropped != 2 || len(code) != 3 || code[0].text() != "c3" || *code[0].ExecutionCount != 3 {
			t.Fatalf("exported %+v, cells %+v", out, code)
		}
		if !strings.Contains(n.Cells[0].text(), "**2 older cells were dropped**") || n.Metadata.ReplMCP["cells_dropped"] != 2.0 {
			t.Fatalf("the notebook does not say what was dropped: %s", n.Cells[0].text())
		}
	})
	t.Run("bytes", func(t *testing.T) {
		big := strings.Repeat("x", 10_000)
		k := keeper(t, "", 100, 25_000) // two such cells fit, three do not
		for i := 1; i <= 4; i++ {
			k.CellFinished(finished(i, 1, "print(big)", big, nil))
		}
		out, _ := export(t, k, filepath.Join(t.TempDir(), "s.ipynb"))
		if out.Cells != 2 || out.Dropped != 2 {
			t.Fatalf("exported %+v, want the 2 newest cells and 2 dropped", out)
		}
	})
}

func TestClosedSessionRecordIsRemoved(t *testing.T) {
	records := filepath.Join(t.TempDir(), "records")
	k, err := notebook.New(notebook.Config{Root: records})
	if err != nil {
		t.Fatal(err)
	}
	k.CellFinished(finished(1, 1, "x = 1", "", nil))
	k.Flush() // the record is written after CellFinished returns
	own := k.Dir()
	dir := filepath.Join(own, "0123456789abcdef")
	if files, err := os.ReadDir(dir); err != nil || len(files) != 1 {
		t.Fatalf("the record of one cell: %v %v", files, err)
	}
	k.SessionClosed("0123456789abcdef")
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a closed session's record is still there: %v", err)
	}
	k.Close()
	if entries, err := os.ReadDir(records); err != nil || len(entries) != 0 {
		t.Fatalf("the keeper's directory or lock outlived it: %v %v", entries, err)
	}
}

// TestDeadServersRecordsAreSwept: a new keeper removes the records of a server that
// died without closing (its lock is free), never those of a live one.
func TestDeadServersRecordsAreSwept(t *testing.T) {
	records := filepath.Join(t.TempDir(), "records")
	live, err := notebook.New(notebook.Config{Root: records})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	live.CellFinished(finished(1, 1, "x = 1", "", nil))
	live.Flush() // the record is written after CellFinished returns
	dead := filepath.Join(records, "dead-server")
	os.MkdirAll(filepath.Join(dead, "some-session"), 0o700)
	os.WriteFile(filepath.Join(dead, "some-session", "000000001.json"), []byte("{}"), 0o600)
	os.WriteFile(dead+".lock", nil, 0o600) // left by a SIGKILLed server: nobody holds it
	next, err := notebook.New(notebook.Config{Root: records})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a dead server's records were kept: %v", err)
	}
	if _, err := os.Stat(dead + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a dead server's lock was kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(live.Dir(), "0123456789abcdef")); err != nil {
		t.Fatalf("a live server's records were swept: %v", err)
	}
}

func TestExportPathRules(t *testing.T) {
	k := keeper(t, "", 100, 1<<20)
	k.CellFinished(finished(1, 1, "x = 1", "", nil))
	dir := t.TempDir()
	exp := func(path string, overwrite bool) error {
		_, err := k.Export(t.Context(), "0123456789abcdef", "analysis", path, overwrite)
		return err
	}
	existing := filepath.Join(dir, "existing.ipynb")
	os.WriteFile(existing, []byte("mine"), 0o644)
	if err := exp(existing, false); !errors.Is(err, notebook.ErrExportExists) {
		t.Fatalf("over an existing file without overwrite: %v", err)
	}
	if data, _ := os.ReadFile(existing); string(data) != "mine" {
		t.Fatalf("a refused export changed the file: %q", data)
	}
	if err := exp(existing, true); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	readNotebook(t, existing)

	// A symlink at the destination is never followed, nor replaced: overwrite replaces
	// a regular file only.
	target := filepath.Join(dir, "target.txt")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(dir, "link.ipynb")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := exp(link, false); !errors.Is(err, notebook.ErrExportExists) {
		t.Fatalf("over a symlink without overwrite: %v", err)
	}
	dangling := filepath.Join(dir, "dangling.ipynb")
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	if err := exp(dangling, false); !errors.Is(err, notebook.ErrExportExists) {
		t.Fatalf("over a dangling symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the export wrote through a dangling symlink")
	}
	if err := exp(link, true); !errors.Is(err, notebook.ErrExportFile) || err.Error() != "Notebook destination is not a regular file; overwrite replaces only a regular file (it is a symlink)" {
		t.Fatalf("overwrite a symlink: %v", err)
	}
	if data, _ := os.ReadFile(target); string(data) != "keep" {
		t.Fatalf("the export wrote through a symlink: %q", data)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v", fi.Mode())
	}
	fifo := filepath.Join(dir, "fifo.ipynb")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := exp(fifo, true); !errors.Is(err, notebook.ErrExportFile) || !strings.HasSuffix(err.Error(), "(it is a FIFO)") {
		t.Fatalf("overwrite a FIFO: %v", err)
	}
	if fi, _ := os.Lstat(fifo); fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v", fi.Mode())
	}

	for name, c := range map[string]struct {
		path string
		want error
	}{
		"relative":       {"s.ipynb", notebook.ErrExportPath},
		"missing parent": {filepath.Join(dir, "no-such-dir", "s.ipynb"), notebook.ErrExportParent},
		"file parent":    {filepath.Join(target, "s.ipynb"), notebook.ErrExportParent},
		"directory":      {dir, notebook.ErrExportDir},
		"trailing slash": {filepath.Join(dir, "new") + "/", notebook.ErrExportDir},
	} {
		if err := exp(c.path, true); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".repl-notebook-export-") {
			t.Errorf("a temp file was left: %s", e.Name())
		}
	}
}

func TestExportOfASessionWithoutCells(t *testing.T) {
	k := keeper(t, "", 100, 1<<20)
	out, err := k.Export(t.Context(), "fedcba9876543210", "empty", filepath.Join(t.TempDir(), "e.ipynb"), false)
	if err != nil || out.Cells != 0 {
		t.Fatalf("export of a session without cells: %+v %v", out, err)
	}
	n := readNotebook(t, out.Path)
	if len(n.Cells) != 1 || !strings.Contains(n.Cells[0].text(), "session `empty`") {
		t.Fatalf("cells: %+v", n.Cells)
	}
}

// TestRecordsNeedAPrivateRoot: a root another user could read (a directory made
// beforehand in a shared temp directory), or a symlink, is refused.
func TestRecordsNeedAPrivateRoot(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o755)
	if _, err := notebook.New(notebook.Config{Root: open}); err == nil || !strings.Contains(err.Error(), "open to other users") {
		t.Fatalf("a root of mode 0755: %v", err)
	}
	private := filepath.Join(t.TempDir(), "private")
	os.Mkdir(private, 0o700)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(private, link)
	if _, err := notebook.New(notebook.Config{Root: link}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("a root that is a symlink: %v", err)
	}
}

// TestDisplaysBecomeDisplayData: what display() printed of objects that are no image
// is a display_data where it was printed, between the stdout around it, with pandas'
// HTML or the repr; a display the kept stdout no longer holds stays text.
func TestDisplaysBecomeDisplayData(t *testing.T) {
	k := keeper(t, "", 100, 1<<20)
	c := finished(1, 1, "print('before'); display(df, {'a': 1}); print('after')", "before\n   a\n0  1\n{\"a\":1}\nafter\n", nil)
	c.Result.Displays = []repl.Display{{Text: "   a\n0  1", HTML: "<table class=\"dataframe\"></table>"}, {Text: `{"a":1}`, Repr: "{'a': 1}"}, {Text: "cut away"}}
	k.CellFinished(c)
	_, n := export(t, k, filepath.Join(t.TempDir(), "s.ipynb"))
	var got []string
	for _, o := range n.code()[0].Outputs {
		switch o["output_type"] {
		case "stream":
			got = append(got, "stream:"+strings.Join(anyStrings(o["text"]), ""))
		case "display_data":
			data := o["data"].(map[string]any)
			got = append(got, "display:"+strings.Join(anyStrings(data["text/plain"]), "")+"|"+strings.Join(anyStrings(data["text/html"]), ""))
		}
	}
	want := []string{"stream:before\n", "display:   a\n0  1|<table class=\"dataframe\"></table>", "display:{'a': 1}|", "stream:after\n"}
	if strings.Join(got, "\n--\n") != strings.Join(want, "\n--\n") {
		t.Fatalf("outputs:\n%q\nwant:\n%q", got, want)
	}
}

func anyStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, len(list))
	for i, s := range list {
		out[i], _ = s.(string)
	}
	return out
}

// TestExportOfADamagedRecord: a torn last record is the end of the log, not an
// error. A cell whose bytes are cut off in the record (a full disk, a crash) failed
// every export until it aged out; the export now holds every other cell, and a
// markdown cell in its place says it cannot be read.
func TestExportOfADamagedRecord(t *testing.T) {
	k, err := notebook.New(notebook.Config{Root: filepath.Join(t.TempDir(), "records")})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	k.CellFinished(finished(1, 1, "x = 1", "", nil))
	k.CellFinished(finished(2, 1, "y = 2", "", nil))
	k.Flush() // the record is written after CellFinished returns
	// The segment that holds both cells loses the second's bytes.
	segment := filepath.Join(k.Dir(), "0123456789abcdef", "000000001.cells")
	if st, err := os.Stat(segment); err != nil || os.Truncate(segment, st.Size()-5) != nil {
		t.Fatalf("the record's segment: %v", err)
	}
	k.CellFinished(finished(3, 1, "z = 3", "", nil))
	out, n := export(t, k, filepath.Join(t.TempDir(), "s.ipynb"))
	if out.Cells != 2 || len(n.Cells) != 4 {
		t.Fatalf("exported %+v, %d notebook cells", out, len(n.Cells))
	}
	if got := []string{n.Cells[1].text(), n.Cells[3].text()}; got[0] != "x = 1" || got[1] != "z = 3" {
		t.Fatalf("the code cells: %q", got)
	}
	note := n.Cells[2]
	if note.CellType != "markdown" || !strings.HasPrefix(note.text(), "**Cell [2] is not in this notebook**: the session's record of it cannot be read: ") {
		t.Fatalf("in the damaged cell's place: %s %q", note.CellType, note.text())
	}
}
