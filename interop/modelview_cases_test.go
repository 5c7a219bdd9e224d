package interop

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// checker collects what a rule finds wrong, so that the rules can also be checked on
// made-up records (TestModelViewRules) and not only on a live run's.
type checker struct{ failures []string }

// stopCheck is the panic by which fatalf ends a rule.
type stopCheck struct{}

func (c *checker) errorf(format string, args ...any) {
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

// fatalf records a failure after which the rule cannot go on, and ends it.
func (c *checker) fatalf(format string, args ...any) {
	c.errorf(format, args...)
	panic(stopCheck{})
}

// runCheck runs a rule and returns its failures.
func runCheck(rule func(c *checker)) (failures []string) {
	c := &checker{}
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(stopCheck); !ok {
				panic(p)
			}
		}
		failures = c.failures
	}()
	rule(c)
	return c.failures
}

// reportCheck runs a rule as part of t.
func reportCheck(t *testing.T, rule func(c *checker)) {
	t.Helper()
	for _, f := range runCheck(rule) {
		t.Error(f)
	}
}

// The cells of the model-view script. Each is short: Codex cancels a tool call after
// 60 s, so every cell also gets a timeout well under that.
const (
	cellHello = `print("hello")`

	// No word of the traceback says error, fail or exception, so such a word in the
	// text is the server's marker, not the traceback's.
	cellError = `class Boom(ArithmeticError):
    pass

def explode():
    raise Boom("model view boom")

explode()
`

	// 2,000 numbered lines of 100 characters: 200,000 characters.
	cellLarge = `print("\n".join(f"line {i:05d} " + "x" * 88 for i in range(1, 2001)))`

	// Real tqdm, writing its bar to stderr with a carriage return before each state.
	// Its monitor thread is off: a thread that outlives the cell is another point
	// (the worker's thread policy), and this one is only about the carriage returns.
	cellProgress = `from tqdm import tqdm
tqdm.monitor_interval = 0
for _ in tqdm(range(100), desc="crunch", mininterval=0, miniters=1, ncols=72, ascii=True):
    pass
print("progress done")
`

	// No backend is chosen: the worker's own way of showing figures must catch show().
	cellFigure = `import matplotlib.pyplot as plt
plt.plot([1, 2, 3, 4], [1, 4, 9, 16])
plt.title("model view")
plt.show()
`

	cellDataFrame = `import pandas as pd
pd.DataFrame({"city": ["Oslo", "Lima"], "temp": [3.5, 19.25]})
`

	cellSyntax = "def f(:\n    return 1\n"

	// A cell past its timeout (timeoutLimit seconds): the failure line must say the
	// limit, that the variables survived, and how to give a cell more time.
	cellTimeoutPassed = "import time\nwhile True:\n    time.sleep(0.05)\n"

	// A library object with no table of its own: it reads as pandas' repr, not as an
	// omitted preview.
	cellCategorical = `import pandas as pd
pd.Categorical(["low", "high", "low"])
`

	// A printed JSON value, for code that parses the result's first text block.
	cellJSON = `import json
print(json.dumps({"n": 42}))
`

	// Values whose JSON differs from how Python shows them.
	cellValues = `(200000, 6), None, True, {'a': 1}`

	// Terminal control sequences: a title (OSC 0), a hyperlink (OSC 8), a colour (CSI),
	// the C1 CSI, BEL and BS, in stdout, in native output and in an exception's message.
	cellControl = `import os, sys
print("title \x1b]0;pwned\x07 link \x1b]8;;http://e.x\x1b\\t\x1b]8;;\x1b\\ red \x1b[31mX\x1b[0m c1 \x9b2J bell \x07 bs a\x08b")
sys.stdout.flush()
_ = os.write(2, b"native \x1b[2J\n")
raise ValueError("message \x1b[31m red")
`
)

// The long cell (docs/contract.md §5.6): it outlives the client's tool timeout, yields
// before it, and the one python_run its result names (whose wait is the same yield,
// under the deadline) gives its result. The figures are a 75 s cell and Codex's
// tool_timeout_sec = 60, with the default yield_after of 50 s (and a python_run wait of
// 45 s); these are the same structure scaled down to keep the suite short: each
// ordering holds (yield < timeout < cell < yield + wait, and wait < timeout), on a
// server of its own (longrepl) so that its --yield-after and Codex's tool_timeout_sec
// touch no other step. Without the yield, Codex cancels the call at its timeout ("timed
// out awaiting tools/call after 10s"). Claude Code has no tool timeout by default: the
// call would block; with the yield it reads the same as in Codex.
const (
	longToolTimeout = 10 // Codex's tool_timeout_sec for longrepl (the 60)
	longYieldAfter  = 7  // longrepl's --yield-after, and so the wait its text proposes (50, and 45)
	longTaskAfter   = 1  // longrepl's --task-after (10): Claude Code -p and Codex declare no tasks, so they yield
	cellLong        = "import time\nprint('long started', flush=True)\ntime.sleep(11)\nprint('long done')\n'long value'"
)

// timeoutLimit is the timeout of cellTimeoutPassed, in seconds.
const timeoutLimit = 1

// cellTimeout is every cell's timeout in seconds: under Codex's 60 s tool timeout, so a
// stuck cell reads as repl-mcp's timeout, not as the agent's.
const cellTimeout = 45

// largeLines is how many lines cellLarge prints; largeLine is the text of line i.
const largeLines = 2000

func largeLine(i int) string { return fmt.Sprintf("line %05d %s", i, strings.Repeat("x", 88)) }

// largeLineNumber finds the numbers of cellLarge's lines in a text.
var largeLineNumber = regexp.MustCompile(`line (\d{5}) x{88}`)

// modelViewSteps is the fake model's script, the same for both agents. The first call
// is execute_python with no session_id and no python_health before it (point c); the
// later ones pass the session_id python_health showed, when it showed one. The last
// calls server-everything's get-tiny-image, which returns text and a PNG with no
// structuredContent on any server version: it proves the image path of the fakes on
// today's server.
func modelViewSteps() []step {
	exec := func(id, code string) step {
		return step{id: id, server: "repl", tool: "execute_python", session: id != "hello",
			args: map[string]any{"code": code, "timeout": cellTimeout}}
	}
	return []step{
		exec("hello", cellHello),
		{id: "health", server: "repl", tool: "python_health", args: map[string]any{}},
		exec("error", cellError),
		exec("large", cellLarge),
		{id: "large_artifact", server: "repl", tool: "artifact_read", session: true, derive: deriveLargeArtifactRead},
		exec("progress", cellProgress),
		exec("figure", cellFigure),
		exec("dataframe", cellDataFrame),
		exec("syntax", cellSyntax),
		{id: "long", server: "longrepl", tool: "execute_python", args: map[string]any{"code": cellLong, "timeout": cellTimeout}},
		{id: "long_wait", server: "longrepl", tool: "python_run", derive: deriveLongWait},
		{id: "timeout", server: "repl", tool: "execute_python", session: true,
			args: map[string]any{"code": cellTimeoutPassed, "timeout": timeoutLimit}},
		exec("categorical", cellCategorical),
		exec("json", cellJSON),
		exec("values", cellValues),
		exec("control", cellControl),
		{id: "start", server: "repl", tool: "python_start", session: true, args: map[string]any{"code": `print("started")`, "timeout": cellTimeout}},
		{id: "run", server: "repl", tool: "python_run", session: true, args: map[string]any{"stdout_offset": 0, "stderr_offset": 0}},
		{id: "tiny_image", server: "everything", tool: "get-tiny-image", args: map[string]any{}},
	}
}

// deriveLargeArtifactRead reads, from the artifact the large output's result names,
// a range in the middle of what was cut: at offset 80,000 of 200,000 characters, past
// any head a result under 40,000 characters can show.
func deriveLargeArtifactRead(given map[string]*given) (map[string]any, string) {
	g, ok := given["large"]
	if !ok || g.Skipped != "" {
		return nil, "the large output's step did not run"
	}
	m := artifactIDPattern.FindStringSubmatch(g.Text())
	if m == nil {
		return nil, "the large output's result names no artifact id (no UUID after the word artifact)"
	}
	return map[string]any{"id": m[1], "offset": 80000, "length": 4000}, ""
}

// backgroundEnv turns Claude Code's background tasks on, with a threshold under
// longrepl's --yield-after: the user who lowers CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS
// (120,000 by default) under the 50 s yield, scaled down as the long cell is.
var backgroundEnv = []string{"CLAUDE_AUTO_BACKGROUND_TASKS=1", "CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS=2000"}

// backgroundSteps are the long cell's two calls, as in modelViewSteps.
func backgroundSteps() []step {
	var out []step
	for _, st := range modelViewSteps() {
		if st.server == "longrepl" {
			out = append(out, st)
		}
	}
	return out
}

// backgroundPoint: with Claude Code's background tasks on, the long cell's call is
// moved to the background and its task later delivers the text of the yield whole,
// with the python_run call to make; that call's result, background or not, is the
// whole rest of the run with its footer.
func backgroundPoint() point {
	return point{"BackgroundTaskDeliversTheWholeResult", []string{"long", "long_wait"}, func(c *checker, a agentKind, r records) {
		g := stepGiven(c, r, "long")
		if g.Background == "" {
			c.fatalf("Claude Code did not move the long call to the background (%v): the point is moot", backgroundEnv)
		}
		longCellPoint().check(c, a, r)
	}}
}

// pythonRunCall finds the python_run call a yielded execution's text says to make.
var pythonRunCall = regexp.MustCompile(`python_run (\{[^\n]*?\})\]`)

// deriveLongWait makes the call the long cell's result says to make, as a model that
// follows it would.
func deriveLongWait(given map[string]*given) (map[string]any, string) {
	g, ok := given["long"]
	if !ok || g.Skipped != "" {
		return nil, "the long cell's step did not run"
	}
	m := pythonRunCall.FindStringSubmatch(g.Text())
	if m == nil {
		return nil, "the long cell's result names no python_run call to wait with"
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(m[1]), &args); err != nil {
		return nil, "the python_run call in the long cell's result is not JSON: " + err.Error()
	}
	return args, ""
}

// agentKind says what an agent's model API can carry.
type agentKind struct {
	name      string
	errorFlag bool // the API has an error flag on tool results (Anthropic's is_error)
	// join is how the CLI joins a result's text blocks into the one string its
	// model reads ("\n\n" for opencode); empty when it passes them on one by one.
	join string
}

// blocks are the text blocks of g as the model can tell them apart: as the CLI
// passed them, or, from a CLI that joins them, the one string cut at its last join,
// which is where a result's last block (its footer) starts.
func (a agentKind) blocks(g *given) []string {
	if a.join == "" || len(g.Texts) != 1 {
		return g.Texts
	}
	t := g.Texts[0]
	i := strings.LastIndex(t, a.join)
	if i < 0 {
		return g.Texts
	}
	return []string{t[:i], t[i+len(a.join):]}
}

// A point is one rule of what the model is given, checked on an agent's records.
type point struct {
	name  string
	steps []string // the steps it reads
	check func(c *checker, a agentKind, r records)
}

// failureMarker is a word by which a result says it failed, outside the traceback: the
// error cell's traceback has none of these words.
var failureMarker = regexp.MustCompile(`(?i)\b(error|errors|errored|fail|failed|failure|exception)\b|"success"\s*:\s*false`)

// caretLine is a SyntaxError's caret line: only spaces and carets.
var caretLine = regexp.MustCompile(`^\s*\^+\s*$`)

// modelViewPoints are the rules of this round, one subtest each (named so the lead can
// see which land as the branches merge). They say what must hold, not the format:
// the format is the server's.
func modelViewPoints() []point {
	return []point{
		longCellPoint(),
		{"TrivialPrintCostsAtMost80Characters", []string{"hello"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "hello")
			if !strings.Contains(g.Text(), "hello") {
				c.fatalf("the model does not read the cell's output hello")
			}
			if over := g.Chars() - len("hello\n"); over > 80 {
				c.errorf("print(\"hello\") costs %d characters beyond its 6 of output; at most 80", over)
			}
			notError(c, a, g)
		}},
		{"ErrorReadsAsFailure", []string{"error"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "error")
			text := g.Text()
			if !strings.Contains(text, "Traceback (most recent call last)") || !strings.Contains(text, "Boom: model view boom") {
				c.errorf("the model reads no traceback ending in the exception Boom: model view boom")
			}
			if !failureMarker.MatchString(text) {
				c.errorf("nothing in the text says the cell failed (error, failed, failure, exception, \"success\": false); a traceback alone is not a verdict")
			}
			if a.errorFlag && (g.IsError == nil || !*g.IsError) {
				c.errorf("%s does not set the error flag (is_error) on a Python error", a.name)
			}
		}},
		{"FirstExecuteNeedsNoHealthAndNoSessionID", []string{"hello"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "hello")
			if len(r.order) == 0 || r.order[0] != "hello" {
				c.fatalf("the first call recorded is %v, not execute_python", r.order)
			}
			if _, ok := g.Args["session_id"]; ok {
				c.fatalf("the script's first call carried a session_id: the point is moot")
			}
			notError(c, a, g)
			if !strings.Contains(g.Text(), "hello") {
				c.errorf("the first execute_python, without python_health or session_id, did not run the cell")
			}
		}},
		{"HealthUnder1500Characters", []string{"health"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "health")
			notError(c, a, g)
			if g.Chars() >= 1500 {
				c.errorf("python_health gives the model %d characters; the budget is under 1,500", g.Chars())
			}
		}},
		{"LargeOutputHeadTailAndArtifact", []string{"large", "large_artifact"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "large")
			notError(c, a, g)
			if g.Chars() >= 40000 {
				c.errorf("a 200,000-character output gives the model %d characters; the budget is under 40,000", g.Chars())
			}
			shown := map[string]bool{}
			for _, m := range largeLineNumber.FindAllStringSubmatch(g.Text(), -1) {
				shown[m[1]] = true
			}
			if !shown["00001"] {
				c.errorf("the head of the output (line 00001) is not in the text")
			}
			if !shown[fmt.Sprintf("%05d", largeLines)] {
				c.errorf("the tail of the output (line %05d) is not in the text", largeLines)
			}
			read, ok := r.given["large_artifact"]
			switch {
			case !ok:
				c.errorf("the artifact_read of the cut output was never recorded")
			case read.Skipped != "":
				c.errorf("no artifact holds the rest: %s", read.Skipped)
			default:
				var fromArtifact []string
				for _, m := range largeLineNumber.FindAllStringSubmatch(read.Text(), -1) {
					if !shown[m[1]] {
						fromArtifact = append(fromArtifact, m[1])
					}
				}
				if len(fromArtifact) == 0 {
					c.errorf("artifact_read %v of the named artifact shows no line of the output that the result cut:\n%s", read.Args, clip(read.Text(), 600))
				}
			}
		}},
		{"ProgressLineCollapsesToItsLastState", []string{"progress"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "progress")
			notError(c, a, g)
			text := g.Text()
			if !strings.Contains(text, "100/100") {
				c.errorf("the progress bar's last state (100/100) is not in the text")
			}
			if !strings.Contains(text, "progress done") {
				c.errorf("the cell's stdout (progress done) is not in the text")
			}
			var states []string
			for _, n := range []int{1, 25, 50, 75, 99} {
				if s := fmt.Sprintf(" %d/100", n); strings.Contains(text, s) {
					states = append(states, strings.TrimSpace(s))
				}
			}
			if len(states) > 0 {
				c.errorf("the text keeps states the carriage returns overwrote: %v", states)
			}
		}},
		{"FigureReachesTheModelAsAnImage", []string{"figure"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "figure")
			notError(c, a, g)
			if len(g.Images) == 0 {
				c.fatalf("plt.show() gives the model no image")
			}
			for _, im := range g.Images {
				if im.DecodeErr != "" || im.Width == 0 || im.Height == 0 || !strings.HasPrefix(im.MediaType, "image/") {
					c.errorf("an image the model cannot see: %+v", im)
				}
			}
		}},
		{"DataFrameReadsAsTable", []string{"dataframe"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "dataframe")
			notError(c, a, g)
			if strings.Contains(g.Text(), "safe preview omitted") {
				c.errorf("the DataFrame reads as its omitted preview, not as a table")
			}
			header, row := false, false
			for _, line := range g.Lines() {
				header = header || strings.Contains(line, "city") && strings.Contains(line, "temp")
				row = row || strings.Contains(line, "Lima") && strings.Contains(line, "19.25")
			}
			if !header || !row {
				c.errorf("no table: want a line with the columns city and temp and a line with Lima and 19.25")
			}
		}},
		{"SyntaxErrorKeepsItsCaret", []string{"syntax"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "syntax")
			if !strings.Contains(g.Text(), "SyntaxError") {
				c.errorf("the model does not read SyntaxError")
			}
			lines := g.Lines()
			caret := false
			for i := 1; i < len(lines); i++ {
				caret = caret || caretLine.MatchString(lines[i]) && strings.Contains(lines[i-1], "def f(:")
			}
			if !caret {
				c.errorf("no caret line under the source line def f(:")
			}
			if a.errorFlag && (g.IsError == nil || !*g.IsError) {
				c.errorf("%s does not set the error flag (is_error) on a SyntaxError", a.name)
			}
		}},
		{"TimeoutSaysLimitStateAndRemedy", []string{"timeout"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "timeout")
			text := g.Text()
			if !strings.Contains(text, fmt.Sprintf("timed out after %d s", timeoutLimit)) {
				c.errorf("the timeout's text does not say its limit (timed out after %d s):\n%s", timeoutLimit, clip(text, 600))
			}
			if !strings.Contains(text, "variables preserved") {
				c.errorf("the timeout's text does not say whether the variables survived (variables preserved)")
			}
			if !strings.Contains(text, "python_start") {
				c.errorf("the timeout's text does not say how to run a longer cell (python_start)")
			}
			if a.errorFlag && (g.IsError == nil || !*g.IsError) {
				c.errorf("%s does not set the error flag (is_error) on a timeout", a.name)
			}
		}},
		{"CategoricalReadsAsPandasRepr", []string{"categorical"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "categorical")
			notError(c, a, g)
			text := g.Text()
			if strings.Contains(text, "safe preview omitted") {
				c.errorf("the Categorical reads as its omitted preview")
			}
			if !strings.Contains(text, "['low', 'high', 'low']") || !strings.Contains(text, "Categories (2") {
				c.errorf("the Categorical does not read as pandas shows it (its values, then Categories (2, ...)):\n%s", clip(text, 600))
			}
		}},
	}
}

// longCellPoint: a cell longer than the client's tool timeout is not cancelled; the
// model reads that it is still running, and one python_run with wait gives it the
// rest, each byte once, and the whole result's footer.
func longCellPoint() point {
	return point{"LongCellYieldsAndOneWaitGivesItsResult", []string{"long", "long_wait"}, func(c *checker, a agentKind, r records) {
		g := stepGiven(c, r, "long")
		notError(c, a, g)
		text := g.Text()
		if !strings.Contains(text, "long started") {
			c.errorf("the yielded call does not show the output so far (long started):\n%s", clip(text, 600))
		}
		if !strings.Contains(text, "still running as run") {
			c.fatalf("the model does not read that the cell is still running:\n%s", clip(text, 600))
		}
		w := stepGiven(c, r, "long_wait")
		notError(c, a, w)
		rest := w.Text()
		if !strings.Contains(rest, "long done") || !strings.Contains(rest, "long value") {
			c.errorf("python_run with wait does not give the cell's end (long done, long value):\n%s", clip(rest, 600))
		}
		if strings.Contains(rest, "long started") {
			c.errorf("python_run with the offsets it was given repeats output the model read already:\n%s", clip(rest, 600))
		}
		if lines := w.Lines(); len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "[ok") {
			c.errorf("the result does not end with its footer saying ok:\n%s", clip(rest, 600))
		}
	}}
}

// roundTwoPoints are the rules of issue 21's second round that do not need code mode:
// what the text says must be true of the complete stream, read as Python, name its run,
// never carry a raw control character.
func roundTwoPoints() []point {
	return []point{
		{"EveryFooterNamesItsRun", []string{"hello", "error"}, func(c *checker, a agentKind, r records) {
			for _, id := range []string{"hello", "error"} {
				if g := stepGiven(c, r, id); !footerRun.MatchString(g.Text()) {
					c.errorf("%s: no line ends in a footer naming run <uuid>:\n%s", id, clip(g.Text(), 400))
				}
			}
		}},
		{"HealthPrintsSessionID", []string{"health"}, func(c *checker, a agentKind, r records) {
			if g := stepGiven(c, r, "health"); !regexp.MustCompile(`session_id [0-9a-f-]{36}`).MatchString(g.Text()) {
				c.errorf("python_health does not print session_id <uuid>:\n%s", clip(g.Text(), 600))
			}
		}},
		{"PrintedJSONIsTheFirstBlock", []string{"json"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "json")
			blocks := a.blocks(g)
			var v struct{ N int }
			if len(blocks) == 0 || json.Unmarshal([]byte(blocks[0]), &v) != nil || v.N != 42 {
				c.errorf("the first text block is not the printed JSON {\"n\": 42}: %q", blocks)
			}
			if n := len(blocks); n < 2 || !footerRun.MatchString(blocks[n-1]) {
				c.errorf("the footer is not a text block of its own, the last: %q", blocks)
			}
		}},
		{"ValuesReadAsPython", []string{"values"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "values")
			if !strings.Contains(g.Text(), "((200000, 6), None, True, {'a': 1})") {
				c.errorf("the value does not read as Python shows it, ((200000, 6), None, True, {'a': 1}):\n%s", clip(g.Text(), 400))
			}
		}},
		{"CutMarkerCountsTheWholeStream", []string{"large"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "large")
			// The output: every block but the footer, or every line but the last.
			var body string
			if blocks := a.blocks(g); len(blocks) >= 2 && strings.HasPrefix(blocks[len(blocks)-1], "[ok") {
				body = strings.Join(blocks[:len(blocks)-1], "\n")
			} else {
				text := g.Text()
				body = text[:strings.LastIndex(text, "\n[ok")+1]
			}
			ms := cutMarker.FindAllStringSubmatchIndex(body, -1)
			if len(ms) != 1 {
				c.fatalf("%d markers of stdout left out in the large output, want one:\n%s", len(ms), clip(g.Text(), 600))
			}
			m := ms[0]
			lines, bytes := atoi(body[m[2]:m[3]]), atoi(body[m[4]:m[5]])
			// The marker's first newline ends the line shown before it.
			shown := body[:m[0]] + "\n" + body[m[1]:]
			if !strings.HasSuffix(shown, "\n") {
				shown += "\n"
			}
			if len(shown)+bytes != largeLines*100 || strings.Count(shown, "\n")+lines != largeLines {
				c.errorf("the text shows %d bytes in %d lines and says %d lines, %d bytes left out; the output is %d lines, %d bytes",
					len(shown), strings.Count(shown, "\n"), lines, bytes, largeLines, largeLines*100)
			}
		}},
		{"ControlCharactersReadVisibly", []string{"control"}, func(c *checker, a agentKind, r records) {
			g := stepGiven(c, r, "control")
			if loc := rawControl.FindStringIndex(g.Text()); loc != nil {
				c.errorf("a raw control character %q reaches the model: %q", g.Text()[loc[0]:loc[1]], clip(g.Text(), 400))
			}
			for _, want := range []string{`\x1b]0;pwned\x07`, `\x9b2J`, `native \x1b[2J`, `ValueError: message \x1b[31m red`} {
				if !strings.Contains(g.Text(), want) && !strings.Contains(strings.ReplaceAll(g.Text(), `\\`, `\`), want) {
					c.errorf("the text does not show %s visibly:\n%s", want, clip(g.Text(), 600))
				}
			}
		}},
		{"RunShowsStdoutEnd", []string{"run"}, func(c *checker, a agentKind, r records) {
			if g := stepGiven(c, r, "run"); !regexp.MustCompile(`stdout_end \d+; stderr_end \d+`).MatchString(g.Text()) {
				c.errorf("python_run read from offsets does not say stdout_end and stderr_end:\n%s", clip(g.Text(), 400))
			}
		}},
	}
}

// footerRun is an execution footer that names its run.
var footerRun = regexp.MustCompile(`(?m)^\[(ok|failed); [^\n]*\brun [0-9a-f-]{36}\b[^\n]*\]$`)

// cutMarker is the text form's marker of what a cut left out of stdout.
var cutMarker = regexp.MustCompile(`\n\[\.\.\. ([\d,]+) lines?, ([\d,]+) bytes of stdout left out[^\]\n]*\]\n`)

// rawControl is a control character other than newline and tab, C1 included.
var rawControl = regexp.MustCompile(`[\x00-\x08\x0b-\x1f\x7f\x{80}-\x{9f}]`)

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	return n
}

// stepGiven is the record of a step that ran; the test stops when there is none.
func stepGiven(c *checker, r records, id string) *given {
	g, ok := r.given[id]
	if !ok {
		c.fatalf("step %s was never recorded (the run's checks say why)", id)
	}
	if g.Skipped != "" {
		c.fatalf("step %s did not run: %s", id, g.Skipped)
	}
	return g
}

// notError fails when the API's error flag says the call failed.
func notError(c *checker, a agentKind, g *given) {
	if a.errorFlag && g.IsError != nil && *g.IsError {
		c.errorf("%s flags %s as an error:\n%s", a.name, g.Step, clip(g.Text(), 600))
	}
}
