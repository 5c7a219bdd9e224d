package repl

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/iota-uz/repl-mcp/internal/artifactref"
)

func terminalView(limit int, writes ...string) (string, bool) {
	t := newTerminalText(limit, limit/3)
	for _, w := range writes {
		t.write([]byte(w))
	}
	v := t.view()
	return v.Text, len(v.Gaps) > 0
}

// A line rewritten with \r shows its last state, as on a terminal.
func TestTerminalTextRewritesLines(t *testing.T) {
	cases := []struct {
		writes []string
		want   string
	}{
		{[]string{"abc\rX"}, "Xbc"},
		{[]string{"abc", "\r", "XY", "Z", "\n"}, "XYZ\n"},
		{[]string{"abc\r\n"}, "abc\n"},
		{[]string{"first\nlong line\rshort\nlast"}, "first\nshortline\nlast"},
		{[]string{" 10%|#  |\r 50%|## |\r100%|###|\n", "done\n"}, "100%|###|\ndone\n"},
	}
	for _, c := range cases {
		got, cut := terminalView(1000, c.writes...)
		if got != c.want || cut {
			t.Errorf("%q: got %q (cut %v), want %q", c.writes, got, cut, c.want)
		}
	}
}

// Past its limit a text keeps its head, a marker with the bytes left out, and its
// latest bytes; the view changes nothing, so it can be taken again.
func TestTerminalTextKeepsHeadAndTail(t *testing.T) {
	text := newTerminalText(LiveLimit, streamHead)
	var all strings.Builder
	for i := range 20000 {
		line := fmt.Sprintf("line %d é\n", i)
		all.WriteString(line)
		text.write([]byte(line))
	}
	text.write([]byte("progress 1\rprogress 2"))
	all.WriteString("progress 2")
	view := text.view()
	got, cut := view.Text, len(view.Gaps) > 0
	again := text.view().Text
	if !cut || got != again {
		t.Fatalf("cut %v; a second view differs: %v", cut, got != again)
	}
	if len(got) > LiveLimit || !utf8.ValidString(got) {
		t.Fatalf("view of %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
	}
	head, rest, ok := strings.Cut(got, "\n[... ")
	if !ok {
		t.Fatalf("no marker in %q", got[:200])
	}
	count, tail, _ := strings.Cut(rest, " bytes left out ...]\n")
	complete := all.String()
	if !strings.HasPrefix(complete, head) || !strings.HasSuffix(complete, tail) || !strings.HasSuffix(tail, "line 19999 é\nprogress 2") {
		t.Fatalf("head %q... tail ...%q", head[:40], tail[len(tail)-40:])
	}
	if len(head) > streamHead || len(head) < streamHead-3 {
		t.Fatalf("head of %d bytes", len(head))
	}
	if want := withCommas(len(complete) - len(head) - len(tail)); count != want {
		t.Fatalf("marker says %s bytes left out, want %s", count, want)
	}
	// The gap says where the marker is, and the lines left out too.
	g := view.Gaps[0]
	left := complete[len(head) : len(complete)-len(tail)]
	if g.At != len(head) || got[g.At:g.At+g.Marker] != "\n[... "+count+" bytes left out ...]\n" ||
		g.Bytes != int64(len(left)) || g.Lines != int64(strings.Count(left, "\n")) {
		t.Fatalf("gap %+v; want at %d, %d bytes, %d lines", g, len(head), len(left), strings.Count(left, "\n"))
	}
}

// One line longer than the limit is final as written, and still bounded.
func TestTerminalTextBoundsAnEndlessLine(t *testing.T) {
	got, cut := terminalView(1000, strings.Repeat("x", 5000), "\ry")
	if !cut || len(got) > 1000 || !strings.HasPrefix(got, strings.Repeat("x", 333)+"\n[... ") || !strings.HasSuffix(got, "xy") {
		t.Fatalf("cut %v, %d bytes: %q", cut, len(got), got)
	}
}

// The server bounds stdout and stderr to their head and tail too: native output
// appended to a long stderr keeps the end of both visible.
func TestResultBoundKeepsHeadAndTail(t *testing.T) {
	stderr := strings.Repeat("p", StreamLimit-100) + "python's end\n" + strings.Repeat("n", 1000) + "native end\n"
	res := &Result{Stderr: stderr, Stdout: "short", BackgroundThreads: make([]string, 100)}
	res.BackgroundThreads[0] = strings.Repeat("é", 300)
	res.BackgroundOutput = &BackgroundOutput{Stdout: strings.Repeat("b", 2*backgroundLimit)}
	res.OutputArtifacts = &OutputArtifacts{Stdout: &artifactref.Ref{}, Stderr: &artifactref.Ref{ID: "a"}}
	res.bound(PreviewLimit)
	if !res.Truncated.Stderr || res.Truncated.Stdout || res.Stdout != "short" {
		t.Fatalf("truncated %+v", res.Truncated)
	}
	if len(res.Stderr) > StreamLimit || !strings.HasPrefix(res.Stderr, "ppp") || !strings.HasSuffix(res.Stderr, "native end\n") {
		t.Fatalf("stderr of %d bytes: %q...%q", len(res.Stderr), res.Stderr[:10], res.Stderr[len(res.Stderr)-20:])
	}
	if !strings.Contains(res.Stderr, "\n[... ") || !strings.Contains(res.Stderr, " bytes left out ...]\n") {
		t.Fatal("no marker between head and tail")
	}
	if len(res.BackgroundThreads) != maxBackgroundThreads+1 || len(res.BackgroundThreads[0]) > maxThreadNameBytes || !utf8.ValidString(res.BackgroundThreads[0]) {
		t.Fatalf("%d names, the first %d bytes", len(res.BackgroundThreads), len(res.BackgroundThreads[0]))
	}
	if b := res.BackgroundOutput; !b.Truncated || len(b.Stdout) > backgroundLimit {
		t.Fatalf("background output %d bytes, truncated %v", len(b.Stdout), b.Truncated)
	}
	if a := res.OutputArtifacts; a.Stdout != nil || a.Stderr == nil || a.Stderr.ID != "a" {
		t.Fatalf("output artifacts %+v / %+v", a.Stdout, a.Stderr)
	}
	empty := &Result{BackgroundOutput: &BackgroundOutput{}, OutputArtifacts: &OutputArtifacts{Stdout: &artifactref.Ref{}}}
	empty.bound(PreviewLimit)
	if empty.BackgroundOutput != nil || empty.OutputArtifacts != nil {
		t.Fatalf("empty fields kept: %+v", empty)
	}
}

func TestWithCommas(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 1234567: "1,234,567", -12345: "-12,345"} {
		if got := withCommas(n); got != want {
			t.Errorf("withCommas(%d) = %q, want %q", n, got, want)
		}
	}
}

// A run's native output from C code, os.write or a child process is kept as a terminal
// shows it, its head and its tail, in the run's stderr.
func TestNativeOutputKeepsHeadAndTail(t *testing.T) {
	m := newTestManager(t, realPython(t))
	code := "import os\nfor i in range(101):\n    os.write(2, b'\\r%3d%%' % i)\nos.write(2, b'\\n')\n" +
		"for i in range(20000):\n    os.write(1, b'native %d\\n' % i)\nprint('python')"
	res := m.Default().Execute(t.Context(), ExecRequest{Code: code})
	if !res.Success || res.Stdout != "python\n" || !res.Truncated.Stderr {
		t.Fatalf("%+v", res)
	}
	if !strings.HasPrefix(res.Stderr, "100%\nnative 0\nnative 1\n") || !strings.HasSuffix(res.Stderr, "native 19999\n") {
		t.Fatalf("stderr %q ... %q", res.Stderr[:40], res.Stderr[len(res.Stderr)-40:])
	}
	if !strings.Contains(res.Stderr, " bytes left out ...]\n") || len(res.Stderr) > StreamLimit {
		t.Fatalf("stderr of %d bytes without its marker", len(res.Stderr))
	}
}

// terminalCases is testdata/terminal_cases.json, the cases the worker's StreamText runs
// too (worker/test_unit_terminal_cases.py): the one definition of both twins.
type terminalCases struct {
	Cases []struct {
		Name        string
		Limit, Head int
		Writes      []json.RawMessage
		Want        []json.RawMessage
		Gap         *Gap
		// Server is what the server keeps where it differs from the worker.
		Server *struct {
			Want []json.RawMessage
			Gap  *Gap
		}
	}
}

// casePieces concatenates a case's pieces: strings, or [string, times].
func casePieces(t *testing.T, pieces []json.RawMessage) string {
	var b strings.Builder
	for _, raw := range pieces {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			b.WriteString(s)
			continue
		}
		var rep []json.RawMessage
		var times int
		if err := json.Unmarshal(raw, &rep); err != nil || len(rep) != 2 || json.Unmarshal(rep[0], &s) != nil || json.Unmarshal(rep[1], &times) != nil {
			t.Fatalf("piece %s is neither a string nor [string, times]", raw)
		}
		b.WriteString(strings.Repeat(s, times))
	}
	return b.String()
}

// caseWrites are a case's writes: strings, or {text, repeat, writes}.
func caseWrites(t *testing.T, writes []json.RawMessage) []string {
	var out []string
	for _, raw := range writes {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out = append(out, s)
			continue
		}
		var w struct {
			Text           string
			Repeat, Writes int
		}
		if err := json.Unmarshal(raw, &w); err != nil || w.Repeat < 1 || w.Writes < 1 {
			t.Fatalf("write %s is neither a string nor {text, repeat, writes}", raw)
		}
		for range w.Writes {
			out = append(out, strings.Repeat(w.Text, w.Repeat))
		}
	}
	return out
}

// Native output is kept as the worker keeps sys.stdout and sys.stderr: both pass the
// same cases, the server its own where they say it differs.
func TestTerminalTextSharedCases(t *testing.T) {
	data, err := os.ReadFile("testdata/terminal_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases terminalCases
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range cases.Cases {
		text := newTerminalText(c.Limit, c.Head)
		for _, w := range caseWrites(t, c.Writes) {
			text.write([]byte(w))
		}
		got := text.view().checked() // as take gives it: invalid UTF-8 as U+FFFD
		if c.Server != nil {
			c.Want, c.Gap = c.Server.Want, c.Server.Gap
		}
		if want := casePieces(t, c.Want); got.Text != want {
			t.Errorf("%s: text of %d bytes %q\nwant %d bytes %q", c.Name, len(got.Text), clipMiddle(got.Text), len(want), clipMiddle(want))
		}
		var gap *Gap
		if len(got.Gaps) > 1 {
			t.Errorf("%s: gaps %+v", c.Name, got.Gaps)
		} else if len(got.Gaps) == 1 {
			gap = &got.Gaps[0]
		}
		if (gap == nil) != (c.Gap == nil) || gap != nil && *gap != *c.Gap {
			t.Errorf("%s: gap %+v, want %+v", c.Name, gap, c.Gap)
		}
	}
}

func clipMiddle(s string) string {
	if len(s) <= 120 {
		return s
	}
	return s[:60] + "..." + s[len(s)-60:]
}
