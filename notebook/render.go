package notebook

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/iota-uz/repl-mcp/repl"
)

// session is what a notebook says about the session it comes from.
type session struct {
	id, name         string
	pythonVersion    string // "3.12.1"; "" when no worker ever started
	pythonExecutable string
	project          string // the cells' working directory; "" before the first is recorded
}

// replOnlyHelpers are the names cells find in a repl-mcp worker and not in a Jupyter
// kernel (docs/contract.md §7); display is both.
var replOnlyHelpers = []string{
	"sh", "ShellResult", "ShellError", "mcp", "ToolError", "checkpoint", "restore",
	"repl_history", "repl_source", "repl_namespace", "repl_export",
	"artifact", "artifact_read", "artifact_save", "artifact_delete", "artifact_forward",
}

var helperUse = sync.OnceValue(func() map[string]*regexp.Regexp {
	m := map[string]*regexp.Regexp{}
	for _, name := range replOnlyHelpers {
		m[name] = regexp.MustCompile(`\b` + name + `\b`)
	}
	return m
})

// kept is what a notebook is written from: the record's cells in order, read one
// at a time so that a notebook of 64 MiB of cells is never held whole.
type keptCells struct {
	n       int
	cell    func(i int) (cell, error)
	used    []string // the repl-mcp-only helpers the cells use
	dropped int
	// events happened after the last cell (kept.pending): shown after it.
	events []event
}

// then is kc with events shown after its last cell.
func (kc keptCells) then(events []event) keptCells {
	kc.events = events
	return kc
}

// writeNotebook writes the nbformat 4.5 notebook of cells to w, as nbformat itself
// does (keys sorted, one space of indent), and returns how many code cells it holds.
// A cell the record lost or cannot read is a markdown cell that says so.
func writeNotebook(w io.Writer, s session, cells keptCells, now time.Time) (int, error) {
	bw := bufio.NewWriter(w)
	r := &renderer{w: bw}
	if err := r.head(s, cells.used, cells.dropped); err != nil {
		return 0, err
	}
	for i := range cells.n {
		if err := r.next(cells.cell(i)); err != nil {
			return 0, err
		}
	}
	if err := r.events(cells.events); err != nil {
		return 0, err
	}
	if err := r.tail(s, cells.dropped, now); err != nil {
		return 0, err
	}
	return r.code, bw.Flush()
}

// renderer writes a notebook a piece at a time: the head (the opening and the first
// cell), the record's cells in order, the tail (the metadata). A live notebook is the
// bytes up to its last cell, then the tail: new cells are appended where the tail
// began, rendered by the same renderer state, so that they read exactly as a whole
// rendering would.
type renderer struct {
	w *bufio.Writer
	n int64 // bytes written
	// What a cell's rendering depends on: the cells before it.
	cells      int    // notebook cells written, the first included
	code       int    // code cells among them
	generation uint64 // the session's generation after the last cell
	previous   cell
	any        bool // a record cell has been rendered
}

func (r *renderer) write(s string) {
	n, _ := r.w.WriteString(s) // a bufio.Writer's error comes back from Flush or the next Write
	r.n += int64(n)
}

// emit writes one notebook cell.
func (r *renderer) emit(v any) error {
	data, err := json.MarshalIndent(v, "  ", " ")
	if err != nil {
		return err
	}
	if r.cells > 0 {
		r.write(",")
	}
	r.cells++
	r.write("\n  ")
	n, err := r.w.Write(data)
	r.n += int64(n)
	return err
}

func (r *renderer) head(s session, used []string, dropped int) error {
	r.write("{\n \"cells\": [")
	if err := r.emit(markdown("repl-mcp-about", aboutText(s, used, dropped))); err != nil {
		return err
	}
	if setup := projectCell(s.project); setup != nil {
		return r.emit(setup)
	}
	return nil
}

// events writes session events (SessionEvent) as markdown cells, where they happened.
func (r *renderer) events(events []event) error {
	for _, e := range events {
		if err := r.emit(eventCell(r.cells, e)); err != nil {
			return err
		}
	}
	return nil
}

// next writes the record's next cell, as read: a cell, or a *missingCell in its place.
func (r *renderer) next(c cell, err error) error {
	var missing *missingCell
	if errors.As(err, &missing) {
		return r.emit(markdown(fmt.Sprintf("repl-mcp-missing-%d", missing.count), fmt.Sprintf(
			"**Cell [%d] is not in this notebook**: %s.", missing.count, missing.why)))
	}
	if err != nil {
		return err
	}
	if err := r.events(c.Events); err != nil {
		return err
	}
	for _, v := range renderCell(c, r.any, r.previous, r.generation) {
		if err := r.emit(v); err != nil {
			return err
		}
	}
	r.code++
	if !c.Fresh {
		r.generation = c.Generation
	}
	r.previous, r.any = cell{Cleared: c.Cleared}, true // all renderCell reads of it
	return nil
}

func (r *renderer) tail(s session, dropped int, now time.Time) error {
	meta, err := json.MarshalIndent(notebookMetadata(s, dropped, now), " ", " ")
	if err != nil {
		return err
	}
	r.write("\n ],\n \"metadata\": ")
	n, err := r.w.Write(meta)
	r.n += int64(n)
	r.write(",\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n")
	return err
}

func notebookMetadata(s session, dropped int, now time.Time) map[string]any {
	display := "Python 3 (repl-mcp worker)"
	if s.pythonVersion != "" {
		display = "Python " + s.pythonVersion + " (repl-mcp worker)"
	}
	language := map[string]any{
		"name": "python", "mimetype": "text/x-python", "file_extension": ".py",
		"pygments_lexer": "ipython3", "codemirror_mode": map[string]any{"name": "ipython", "version": 3},
		"nbconvert_exporter": "python",
	}
	if s.pythonVersion != "" {
		language["version"] = s.pythonVersion
	}
	return map[string]any{
		// python3 is the kernel every Jupyter with ipykernel has, so the notebook opens
		// and re-runs there; repl_mcp names the worker's own interpreter.
		"kernelspec":    map[string]any{"name": "python3", "display_name": display, "language": "python"},
		"language_info": language,
		"repl_mcp": map[string]any{
			"session_id": s.id, "session_name": s.name, "project": s.project,
			"python_executable": s.pythonExecutable, "python_version": s.pythonVersion,
			"cells_dropped": dropped, "written": now.UTC().Format(time.RFC3339Nano),
		},
	}
}

// renderCell is c's code cell, with the markdown cells that say where the worker
// lost its variables: before c, when c found a new worker (generation is the
// session's before c, previous the cell before it); after c, when it stopped during c.
func renderCell(c cell, hasPrevious bool, previous cell, generation uint64) []any {
	var out []any
	if c.NewWorker == repl.ResetRestart && !c.Fresh {
		// The first cell after a server restart: the notebook of the earlier server's
		// session is another file, so this one says where its cells' variables went.
		out = append(out, markdown(fmt.Sprintf("repl-mcp-restart-%d", c.Count), fmt.Sprintf(
			"**The server restarted before this cell** (generation %d): the variables of the session's earlier "+
				"server are gone unless a python_session_restore below brought them back.", c.Generation)))
	} else if hasPrevious && !c.Fresh && generation != 0 && c.Generation != generation && !previous.Cleared {
		out = append(out, markdown(fmt.Sprintf("repl-mcp-restart-%d", c.Count), restartText(c, generation)))
	}
	out = append(out, codeCell(c))
	if c.Cleared {
		out = append(out, markdown(fmt.Sprintf("repl-mcp-lost-%d", c.Count), fmt.Sprintf(
			"**The worker stopped during the cell above** (state cleared, generation %d): "+
				"every variable defined so far was lost; the next cell starts a new worker.", c.Generation)))
	}
	return out
}

// projectCell is the notebook's first code cell: it changes to the project directory
// the session's cells ran in, so that their relative paths (pd.read_csv("sales.csv"))
// resolve when the notebook is run from anywhere else (jupyter nbconvert --execute).
// nil when the project is not known, or is no path Python can be given as text.
func projectCell(project string) map[string]any {
	if project == "" || !utf8.ValidString(project) {
		return nil
	}
	code := "# The directory the session's cells ran in (its project): relative paths resolve there.\n" +
		"import os\nos.chdir(" + pythonString(project) + ")"
	return map[string]any{
		"cell_type": "code", "id": "repl-mcp-project", "execution_count": nil,
		"metadata": map[string]any{"repl_mcp": map[string]any{"project": project}},
		"source":   lines(code), "outputs": []any{},
	}
}

// pythonString is s as a Python string literal.
func pythonString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// eventCell is a session event where it happened among the cells: a markdown cell,
// named by its place in the notebook (i notebook cells come before it).
func eventCell(i int, e event) map[string]any {
	titles := map[string]string{
		string(repl.EventBusy):    "Call refused: a cell was already running",
		string(repl.EventCancel):  "Interrupted",
		string(repl.EventRestore): "Variables restored from a snapshot",
	}
	title, ok := titles[e.Kind]
	if !ok {
		title = "Session event: " + e.Kind
	}
	text := fmt.Sprintf("**%s** (%s UTC): %s", title, e.At.UTC().Format("2006-01-02 15:04:05"), e.Text)
	m := markdown(fmt.Sprintf("repl-mcp-event-%d", i+1), text)
	m["metadata"] = map[string]any{"repl_mcp": map[string]any{"event": e.Kind, "run_id": e.RunID, "at": e.At.UTC().Format(time.RFC3339Nano)}}
	return m
}

func restartText(c cell, before uint64) string {
	if c.Reset {
		return fmt.Sprintf("**The worker was reset before this cell** (`reset=true`, generation %d → %d): "+
			"the variables of the cells above are gone.", before, c.Generation)
	}
	if c.NewWorker == repl.ResetReleased {
		return fmt.Sprintf("**The worker was released while idle before this cell** (generation %d → %d): its "+
			"variables were saved, and restored before the cell ran (the call's result named any that did not come back).", before, c.Generation)
	}
	return fmt.Sprintf("**The worker was restarted before this cell** (it died or was recovered between cells, "+
		"generation %d → %d): the variables of the cells above were lost.", before, c.Generation)
}

// aboutText is the first cell: where the notebook comes from, what it no longer
// holds, and what will not run in a plain Jupyter kernel.
func aboutText(s session, used []string, dropped int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# repl-mcp session `%s`\n\n", s.name)
	fmt.Fprintf(&b, "The cells an agent ran in repl-mcp session `%s` (id `%s`), in order, with their outputs", s.name, s.id)
	if s.pythonExecutable != "" {
		fmt.Fprintf(&b, ", in Python %s (`%s`)", s.pythonVersion, s.pythonExecutable)
	}
	b.WriteString(". Each cell's metadata holds its run id, generation, start time and elapsed milliseconds.")
	if s.project != "" {
		fmt.Fprintf(&b, " The cells ran in `%s`; the first code cell changes to it, so that their relative paths "+
			"resolve wherever the notebook runs.", s.project)
	}
	b.WriteString("\n\n")
	if dropped > 0 {
		fmt.Fprintf(&b, "**%d older cells were dropped**: a session's record keeps its newest %d cells and %d MiB.\n\n",
			dropped, MaxCells, MaxBytes>>20)
	}
	if len(used) == 0 {
		b.WriteString("The cells use none of repl-mcp's own helpers: they should re-run in a plain Jupyter kernel.")
	} else {
		fmt.Fprintf(&b, "These cells use helpers that exist only in repl-mcp and fail in a plain Jupyter kernel: `%s`.",
			strings.Join(used, "`, `"))
	}
	return b.String()
}

// helpersIn are the repl-mcp-only helpers code uses, in replOnlyHelpers' order.
func helpersIn(code string) []string {
	var used []string
	for _, name := range replOnlyHelpers {
		if helperUse()[name].MatchString(code) {
			used = append(used, name)
		}
	}
	return used
}

func markdown(id, text string) map[string]any {
	return map[string]any{"cell_type": "markdown", "id": id, "metadata": map[string]any{}, "source": lines(text)}
}

func codeCell(c cell) map[string]any {
	started := c.Started.UTC()
	ended := started.Add(time.Duration(c.ElapsedMS * float64(time.Millisecond)))
	return map[string]any{
		"cell_type":       "code",
		"id":              fmt.Sprintf("repl-mcp-cell-%d", c.Count),
		"execution_count": c.Count,
		"metadata": map[string]any{
			// Where JupyterLab keeps a cell's timing, so its own tools show it.
			"execution": map[string]any{
				"iopub.execute_input": started.Format(time.RFC3339Nano),
				"shell.execute_reply": ended.Format(time.RFC3339Nano),
			},
			"repl_mcp": map[string]any{
				"run_id": c.RunID, "generation": c.Generation, "started": started.Format(time.RFC3339Nano),
				"elapsed_ms": c.ElapsedMS, "success": c.Success,
			},
		},
		"source":  lines(source(c)),
		"outputs": outputs(c),
	}
}

// source is what the cell ran: its code, or for a saved file the IPython command
// that runs it the same way.
func source(c cell) string {
	if c.SourcePath == "" {
		return c.Code
	}
	words := []string{"%run", shellQuote(c.SourcePath)}
	for _, a := range c.Argv {
		words = append(words, shellQuote(a))
	}
	cmd := strings.Join(words, " ")
	if c.Fresh {
		cmd = "# python_execute_file(fresh=true): run in a worker of its own, the namespace untouched\n" + cmd
	}
	return cmd
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// outputs are the cell's outputs as Jupyter writes them: its streams, its images,
// its value, its error.
func outputs(c cell) []any {
	out := stdoutOutputs(c.Stdout, c.Displays)
	if c.Stderr != "" {
		out = append(out, stream("stderr", c.Stderr))
	}
	for _, img := range c.Images {
		out = append(out, map[string]any{
			"output_type": "display_data",
			"data": map[string]any{
				img.MIME:     base64.StdEncoding.EncodeToString(img.Data),
				"text/plain": lines(fmt.Sprintf("<%s image %dx%d>", img.MIME, img.Width, img.Height)),
			},
			"metadata": map[string]any{},
		})
	}
	if c.ImagesNotShown > 0 {
		out = append(out, stream("stderr", fmt.Sprintf("[%d more images of this cell were past its inline bounds and became artifacts]\n", c.ImagesNotShown)))
	}
	if c.Preview != nil {
		data := map[string]any{"text/plain": lines(*c.Preview)}
		if c.HTML != "" {
			data["text/html"] = lines(c.HTML)
		}
		out = append(out, map[string]any{"output_type": "execute_result", "execution_count": c.Count, "data": data, "metadata": map[string]any{}})
	}
	if c.Error != nil {
		ename, evalue := errorName(*c.Error, c.Stopped)
		out = append(out, map[string]any{
			"output_type": "error", "ename": ename, "evalue": evalue,
			"traceback": strings.Split(strings.TrimRight(*c.Error, "\n"), "\n"),
		})
	}
	return out
}

// stdoutOutputs is the cell's stdout as streams, with each display() of an object
// that is no image as a display_data where its text was printed, as Jupyter shows
// it. A display whose text the kept stdout no longer holds (a cut stream) and those
// after it stay text.
func stdoutOutputs(stdout string, displays []display) []any {
	out := []any{}
	rest := stdout
	for _, d := range displays {
		printed := d.Text + "\n"
		i := strings.Index(rest, printed)
		if i < 0 {
			break
		}
		if i > 0 {
			out = append(out, stream("stdout", rest[:i]))
		}
		out = append(out, displayData(d))
		rest = rest[i+len(printed):]
	}
	if rest != "" {
		out = append(out, stream("stdout", rest))
	}
	return out
}

func displayData(d display) map[string]any {
	plain := d.Text
	if d.Repr != "" {
		plain = d.Repr
	}
	data := map[string]any{"text/plain": lines(plain)}
	if d.HTML != "" {
		data["text/html"] = lines(d.HTML)
	}
	return map[string]any{"output_type": "display_data", "data": data, "metadata": map[string]any{}}
}

func stream(name, text string) map[string]any {
	return map[string]any{"output_type": "stream", "name": name, "text": lines(text)}
}

// exceptionLine is the last line of a Python traceback: the exception's type and
// message.
var exceptionLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.]*)(?::\s?(.*))?$`) })

// stopNames are the names a notebook gives a run that did not end on its own, as
// Jupyter names the same: a timeout, an interrupt, a kernel that died.
var stopNames = map[string]string{
	string(repl.StopTimeout): "TimeoutError",
	string(repl.StopCancel):  "KeyboardInterrupt",
	string(repl.StopLost):    "DeadKernelError",
}

// errorName is the exception's name and message: what stopped the run, when it did
// not end on its own (its message's first line); else from the traceback's last line;
// an error that is neither is named by repl-mcp.
func errorName(text, stopped string) (ename, evalue string) {
	all := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if name, ok := stopNames[stopped]; ok {
		return name, all[0]
	}
	if strings.Contains(text, "Traceback (most recent call last):") {
		if m := exceptionLine().FindStringSubmatch(all[len(all)-1]); m != nil {
			return m[1], m[2]
		}
	}
	return "ReplMcpError", all[0]
}

// lines is text as nbformat's multiline strings: a list of lines, each but the last
// with its newline, as Jupyter writes them.
func lines(text string) []string {
	if text == "" {
		return []string{}
	}
	parts := strings.SplitAfter(text, "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}
