package interop

// Code mode in the cell (docs/contract.md §7.5): downstream MCP tools as Python
// functions. TestToolFunctions runs the functions against real downstream servers
// (server-everything, server-filesystem and the FastMCP fixture), one cell each;
// TestCodeModeCharacters measures what it saves the agent's model: the same task, read
// the 30 files of a directory through server-filesystem and report their line counts,
// scripted in Claude Code once as 30 direct tool calls to server-filesystem and once
// as one cell through repl-mcp, counting the characters of the tool results the model
// reads in each.

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/pythons"
)

// filesystemPackage is the reference filesystem server, pinned in package.json.
const filesystemPackage = "@modelcontextprotocol/server-filesystem"

// filesystemEntry is server-filesystem's launcher: `node index.js DIR...`.
func (s *suite) filesystemEntry(t *testing.T) string {
	s.checkNpmPackage(t, filesystemPackage)
	return s.path("node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
}

func TestToolFunctions(t *testing.T) {
	s := newSuite(t)
	t.Run("Everything", func(t *testing.T) { t.Parallel(); s.testEverythingFunctions(t) })
	t.Run("Filesystem", func(t *testing.T) { t.Parallel(); s.testFilesystemFunctions(t) })
	t.Run("FastMCP", func(t *testing.T) { t.Parallel(); s.testFastMCPFunctions(t) })
}

// testEverythingFunctions registers server-everything as "server-everything", a name
// that is not an identifier.
func (s *suite) testEverythingFunctions(t *testing.T) {
	r := s.startRepl(t, project(t, map[string]any{
		"server-everything": map[string]any{"command": s.node, "args": []string{s.everythingEntry(), "stdio"}},
	}))
	var got struct {
		Refused []string       `json:"refused"`
		Sum     []any          `json:"sum"`
		Weather map[string]any `json:"weather"`
		Image   []any          `json:"image"`
		Echoes  []string       `json:"echoes"`
		Journal []string       `json:"journal"`
	}
	remarshal(t, r.execute(s.cell(t, "cell_functions_everything.py"), 60*time.Second), &got)
	wantRefused := []string{
		"mcp.server_everything.get_sum(): missing a required argument: 'b'; help(mcp.server_everything.get_sum) shows its signature",
		"mcp.server_everything.get_sum() argument 'a' must be int or float (its JSON schema type), not str",
		"mcp.server_everything.echo(): got an unexpected keyword argument 'msg'; help(mcp.server_everything.echo) shows its signature",
		"mcp.server_everything.get_structured_content() argument 'location' must be str (its JSON schema type), not int",
	}
	if !reflect.DeepEqual(got.Refused, wantRefused) {
		t.Errorf("refused calls:\n%q\nwant\n%q", got.Refused, wantRefused)
	}
	if want := []any{"The sum of 2 and 3 is 5.", false, nil}; !reflect.DeepEqual(got.Sum, want) {
		t.Errorf("get_sum(2, b=3) text, is_error, data = %v, want %v", got.Sum, want)
	}
	if want := map[string]any{"temperature": 36.0, "conditions": "Light rain / drizzle", "humidity": 82.0}; !reflect.DeepEqual(got.Weather, want) {
		t.Errorf("get_structured_content data = %v, want %v", got.Weather, want)
	}
	if want := []any{[]any{"image/png"}, "Here's the image you requested:\nThe image above is the MCP logo."}; !reflect.DeepEqual(got.Image, want) {
		t.Errorf("get-tiny-image images and text = %v, want %v", got.Image, want)
	}
	var wantEchoes []string
	for i := range 10 {
		wantEchoes = append(wantEchoes, fmt.Sprintf("Echo: m%d", i))
	}
	if wantEchoes = append(wantEchoes, "Echo: awaited"); !reflect.DeepEqual(got.Echoes, wantEchoes) {
		t.Errorf("echoes = %q, want %q", got.Echoes, wantEchoes)
	}
	// Only the calls that were sent: the refused ones never reached the broker.
	wantJournal := []string{"get-sum", "get-structured-content", "get-tiny-image"}
	for range 11 {
		wantJournal = append(wantJournal, "echo")
	}
	if !reflect.DeepEqual(got.Journal, wantJournal) {
		t.Errorf("journal = %q, want %q", got.Journal, wantJournal)
	}
}

// testFilesystemFunctions reads a directory of files from a cell through
// server-filesystem, registered as "files".
func (s *suite) testFilesystemFunctions(t *testing.T) {
	data := t.TempDir()
	want, err := writeNotes(data, 5)
	if err != nil {
		t.Fatal(err)
	}
	r := s.startRepl(t, project(t, map[string]any{
		"files": map[string]any{"command": s.node, "args": []string{s.filesystemEntry(t), data}},
	}))
	var got struct {
		Counts  map[string]int    `json:"counts"`
		Heads   map[string]string `json:"heads"`
		Refused string            `json:"refused"`
		Denied  []bool            `json:"denied"`
		Help    []string          `json:"help"`
		Search  string            `json:"search"`
		Journal []int             `json:"journal"`
	}
	remarshal(t, r.execute("DATA = "+strconv.Quote(data)+"\n"+s.cell(t, "cell_functions_filesystem.py"), 60*time.Second), &got)
	if !reflect.DeepEqual(got.Counts, want) {
		t.Errorf("line counts = %v, want %v", got.Counts, want)
	}
	if h := got.Heads["note-01.txt"]; h != noteLine(1, 1)+"\n" && h != noteLine(1, 1) {
		t.Errorf("head=1 of note-01.txt = %q, want its first line", h)
	}
	if want := "mcp.files.read_text_file() argument 'head' must be int or float (its JSON schema type), not str"; got.Refused != want {
		t.Errorf("refused = %q, want %q", got.Refused, want)
	}
	if !reflect.DeepEqual(got.Denied, []bool{true, true}) {
		t.Errorf("a path outside the allowed directory: is_error and message = %v", got.Denied)
	}
	signature := "files.read_text_file(path: str, *, head: float = None, tail: float = None) — Read the complete contents of a file from the file system as text."
	if len(got.Help) != 1 || got.Help[0] != signature {
		t.Errorf("mcp.help(\"files\") shows read_text_file as %q, want %q", got.Help, signature)
	}
	if got.Search != signature {
		t.Errorf("mcp.search(\"read text file\", limit=1) = %q, want %q", got.Search, signature)
	}
	if want := []int{1, 5 + 2 + 1}; !reflect.DeepEqual(got.Journal, want) {
		t.Errorf("journalled list_directory and read_text_file calls = %v, want %v (the refused call is not one)", got.Journal, want)
	}
}

// testFastMCPFunctions calls servers/fastmcp_server.py's tools as functions.
func (s *suite) testFastMCPFunctions(t *testing.T) {
	r := s.startRepl(t, project(t, map[string]any{
		"fast": map[string]any{"command": s.venvPython, "args": []string{s.path("servers", "fastmcp_server.py")}},
	}))
	var got struct {
		Signatures map[string]string `json:"signatures"`
		Greet      []any             `json:"greet"`
		Stats      map[string]any    `json:"stats"`
		Missing    string            `json:"missing"`
		Failure    []any             `json:"failure"`
		Calls      []string          `json:"calls"`
	}
	remarshal(t, r.execute(s.cell(t, "cell_functions_fastmcp.py"), 60*time.Second), &got)
	wantSigs := map[string]string{"fail": "(reason: str)", "greet": "(name: str)", "stats": "(values: list[float], *, label: str = 'v')"}
	if !reflect.DeepEqual(got.Signatures, wantSigs) {
		t.Errorf("signatures = %v, want %v", got.Signatures, wantSigs)
	}
	if want := []any{"Hello, repl-mcp!", nil}; !reflect.DeepEqual(got.Greet, want) {
		t.Errorf("greet text and data = %v, want %v (plain text is no data)", got.Greet, want)
	}
	if want := map[string]any{"count": 3.0, "total": 7.5, "mean": 2.5, "labels": []any{"x0", "x1", "x2"}}; !reflect.DeepEqual(got.Stats, want) {
		t.Errorf("stats data = %v, want %v", got.Stats, want)
	}
	if want := "mcp.fast.greet(): missing a required argument: 'name'; help(mcp.fast.greet) shows its signature"; got.Missing != want {
		t.Errorf("greet() = %q, want %q", got.Missing, want)
	}
	if want := []any{"ToolResult", true, "Error executing tool fail: refused: on purpose"}; !reflect.DeepEqual(got.Failure, want) {
		t.Errorf("fail's ToolError result = %v, want %v", got.Failure, want)
	}
	if want := []string{"greet", "stats", "fail"}; !reflect.DeepEqual(got.Calls, want) {
		t.Errorf("journalled calls = %q, want %q", got.Calls, want)
	}
}

// noteLine is line j of note i, as writeNotes writes it.
func noteLine(i, j int) string {
	return fmt.Sprintf("note %02d, line %02d: the quick brown fox jumps over the lazy dog", i, j)
}

// writeNotes writes n files note-01.txt... into dir, note i with 20+i lines, and
// returns each file's line count by name.
func writeNotes(dir string, n int) (map[string]int, error) {
	counts := map[string]int{}
	for i := 1; i <= n; i++ {
		var b strings.Builder
		for j := 1; j <= 20+i; j++ {
			b.WriteString(noteLine(i, j) + "\n")
		}
		name := fmt.Sprintf("note-%02d.txt", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			return nil, err
		}
		counts[name] = 20 + i
	}
	return counts, nil
}

// The measured task: read codeModeFiles files and report their line counts.
const codeModeFiles = 30

// codeModeCell is the cell the model writes for the task: it loops over the files
// through server-filesystem's read_text_file and returns only the summary.
const codeModeCell = `counts = {}
for i in range(1, %d):
    name = f"note-{i:02d}.txt"
    counts[name] = len(mcp.files.read_text_file(path=f"{DATA}/{name}").text.splitlines())
print("\n".join(f"{name}: {n} lines" for name, n in counts.items()))`

// minCodeModeRatio is how many times fewer characters the cell's way must give the
// model than the direct calls.
const minCodeModeRatio = 20

func TestCodeModeCharacters(t *testing.T) {
	s := newSuite(t)
	python := pythons.DataVenv(t)
	entry := s.filesystemEntry(t)
	// Claude Code offers server-filesystem its working directory as the only root,
	// which replaces the directories of the command line: the files go into each run's
	// project directory, known once the run has made it.
	var counts map[string]int
	notes := func(project string) (string, error) {
		data := filepath.Join(project, "notes")
		if err := os.Mkdir(data, 0o755); err != nil {
			return "", err
		}
		var err error
		counts, err = writeNotes(data, codeModeFiles)
		return data, err
	}

	// 30 direct calls: Claude Code calls server-filesystem's read_text_file once a file.
	var directData string
	var direct []step
	for i := 1; i <= codeModeFiles; i++ {
		direct = append(direct, step{
			id: fmt.Sprintf("read_%02d", i), server: "files", tool: "read_text_file",
			derive: func(map[string]*given) (map[string]any, string) {
				return map[string]any{"path": filepath.Join(directData, fmt.Sprintf("note-%02d.txt", i))}, ""
			},
		})
	}
	directRun := s.runClaudeCodeWith(t, direct, claudeCode, func(marker, project string) (map[string]agentServer, error) {
		var err error
		directData, err = notes(project)
		return map[string]agentServer{"files": {command: s.node, args: []string{entry, directData}, env: map[string]string{"INTEROP_MARKER": marker}}}, err
	})
	t.Run("DirectHarness", func(t *testing.T) { directRun.checkHarness(t, direct) })
	directChars := 0
	for i, st := range direct {
		g := directRun.recs.given[st.id]
		if g == nil {
			t.Fatalf("no result recorded for %s", st.id)
		}
		// The model read each file whole: its last line is in what it was given.
		name := fmt.Sprintf("note-%02d.txt", i+1)
		if text := g.Text(); !strings.Contains(text, noteLine(i+1, counts[name])) {
			t.Errorf("%s: the model was not given the whole file: %s", st.id, clip(text, 300))
		}
		directChars += modelChars(g)
	}

	// One cell: Claude Code calls repl-mcp's execute_python, whose broker has
	// server-filesystem registered as "files" on the same files.
	var cellData string
	cell := []step{{id: "cell", server: "repl", tool: "execute_python", derive: func(map[string]*given) (map[string]any, string) {
		code := "DATA = " + strconv.Quote(cellData) + "\n" + fmt.Sprintf(codeModeCell, codeModeFiles+1)
		return map[string]any{"code": code, "timeout": 50}, ""
	}}}
	cellRun := s.runClaudeCodeWith(t, cell, claudeCode, func(marker, project string) (map[string]agentServer, error) {
		var err error
		if cellData, err = notes(project); err != nil {
			return nil, err
		}
		registry := filepath.Join(project, "registry.json")
		err = writeJSONFile(registry, map[string]any{"mcpServers": map[string]any{
			"files": map[string]any{"command": s.node, "args": []string{entry, cellData}},
		}})
		return map[string]agentServer{"repl": {command: s.replMCP, args: []string{"--python", python, "--config", registry}, env: map[string]string{"INTEROP_MARKER": marker}}}, err
	})
	t.Run("CellHarness", func(t *testing.T) { cellRun.checkHarness(t, cell) })
	g := cellRun.recs.given["cell"]
	if g == nil {
		t.Fatal("no result recorded for the cell")
	}
	for name, n := range counts {
		if line := fmt.Sprintf("%s: %d lines", name, n); !strings.Contains(g.Text(), line) {
			t.Errorf("the cell's result lacks %q:\n%s", line, clip(g.Text(), 2000))
		}
	}
	cellChars := modelChars(g)

	t.Logf("characters of tool results the model read, %d files:\n| way | tool calls | characters |\n|---|---:|---:|\n| direct: read_text_file | %d | %d |\n| one cell: execute_python | 1 | %d |\nratio %.1fx",
		codeModeFiles, len(direct), directChars, cellChars, float64(directChars)/float64(max(cellChars, 1)))
	if cellChars == 0 || directChars < minCodeModeRatio*cellChars {
		t.Errorf("the cell gave the model %d characters and the direct calls %d: want at least %dx fewer", cellChars, directChars, minCodeModeRatio)
	}
}

// modelChars counts what the model read of one tool result: its text and the CLI's
// own notes around it.
func modelChars(g *given) int {
	n := g.Chars()
	for _, e := range g.Envelope {
		n += len([]rune(e))
	}
	return n
}
