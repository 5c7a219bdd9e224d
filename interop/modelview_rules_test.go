package interop

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestModelViewRules checks the rules of TestModelView on made-up records, without any
// CLI: each must accept a presentation that keeps it (a text form such as this
// round's) and refuse the one repl-mcp gave before it (the compact JSON of the
// structured value, as Claude Code and Codex pass it on), so that a rule which fails
// against a server is the server's doing, and one that passes is not vacuous.
func TestModelViewRules(t *testing.T) {
	const (
		artifact = "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
		session  = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
	)
	yes, no := true, false
	var head, tail, middle []string
	for i := 1; i <= largeLines; i++ {
		switch {
		case i <= 100:
			head = append(head, largeLine(i))
		case i > largeLines-100:
			tail = append(tail, largeLine(i))
		case i >= 800 && i < 840:
			middle = append(middle, largeLine(i))
		}
	}
	png := givenImage{MediaType: "image/png", Format: "png", Width: 640, Height: 480, Bytes: 20000}
	good := map[string]*given{
		"hello":  {Texts: []string{"hello\n\n[ok · gen 1 · run 3f2a]"}, IsError: &no},
		"health": {Texts: []string{"repl-mcp 0.1.0 · python 3.11.7 · session_id " + session + " · generation 1 · worker running"}},
		"error": {IsError: &yes, Texts: []string{"Traceback (most recent call last):\n  File \"<repl:3f2a>\", line 7, in <module>\n    explode()\n" +
			"  File \"<repl:3f2a>\", line 5, in explode\n    raise Boom(\"model view boom\")\nBoom: model view boom\n[failed · state preserved]"}},
		"large":          {Texts: []string{strings.Join(head, "\n") + "\n[... 180,000 characters cut; artifact " + artifact + " holds the whole output ...]\n" + strings.Join(tail, "\n")}},
		"large_artifact": {Texts: []string{strings.Join(middle, "\n")}, Args: map[string]any{"id": artifact}},
		"progress":       {Texts: []string{"progress done\ncrunch: 100%|######################| 100/100 [00:00<00:00, 18145.43it/s]"}},
		"figure":         {Texts: []string{"[figure 1]"}, Images: []givenImage{png}},
		"dataframe":      {Texts: []string{"   city   temp\n0  Oslo   3.50\n1  Lima  19.25"}},
		"syntax":         {IsError: &yes, Texts: []string{"  File \"<repl:3f2a>\", line 1\n    def f(:\n          ^\nSyntaxError: invalid syntax\n[failed]"}},
		"long": {Texts: []string{"long started\n[still running as run 3f2b; 6.0 s so far; generation 1; wait for more with " +
			`python_run {"run_id":"3f2b","wait":45,"stdout_offset":13,"stderr_offset":0}]`}},
		"long_wait": {Texts: []string{"long done\n\"long value\"\n[ok; generation 1; run 3f2b]"}},
		"timeout": {IsError: &yes, Texts: []string{"Execution timed out after 1 s; variables preserved; for a longer cell pass a larger timeout (up to 3600 s), " +
			"or start it with python_start and poll python_run\n[failed; generation 1]"}},
		"categorical": {Texts: []string{"['low', 'high', 'low']\nCategories (2, str): ['high', 'low']\n[ok; generation 1]"}},
	}
	// What the compact JSON of the structured value reads as (Claude Code passes an
	// isError result's text only: the traceback alone).
	jsonOf := func(fields map[string]any) string {
		base := map[string]any{"run_id": "3f2a", "success": true, "stdout": "", "stderr": "", "return_value": nil, "error": nil,
			"elapsed_ms": 12.5, "truncated": map[string]any{"stdout": false, "stderr": false, "return": false},
			"state": "preserved", "server_id": "aa", "session_id": session, "generation": 1}
		for k, v := range fields {
			base[k] = v
		}
		b, _ := json.Marshal(base)
		return string(b)
	}
	var states []string
	for i := 0; i <= 100; i++ {
		states = append(states, fmt.Sprintf("\rcrunch: %3d%%| %d/100", i, i))
	}
	var first500 []string
	for i := 1; i <= 500; i++ {
		first500 = append(first500, largeLine(i))
	}
	old := map[string]*given{
		"hello":     {Texts: []string{jsonOf(map[string]any{"stdout": "hello\n"})}},
		"health":    {Texts: []string{strings.Repeat(`{"server":{"session_id":"`+session+`","limits":{"code_bytes":262144}}}`, 30)}},
		"error":     {IsError: &yes, Texts: []string{"Traceback (most recent call last):\n  File \"<repl:3f2a>\", line 5, in explode\n    raise Boom(\"model view boom\")\nBoom: model view boom"}},
		"large":     {Texts: []string{jsonOf(map[string]any{"stdout": strings.Join(first500, "\n")})}},
		"progress":  {Texts: []string{jsonOf(map[string]any{"stdout": "progress done\n", "stderr": strings.Join(states, "") + "\n"})}},
		"figure":    {Texts: []string{jsonOf(nil)}},
		"dataframe": {Texts: []string{jsonOf(map[string]any{"return_value": "<DataFrame; safe preview omitted>"})}},
		"syntax":    {IsError: &yes, Texts: []string{"Traceback (most recent call last):\n  File \"<repl:3f2a>\", line 1\n    def f(:\nSyntaxError: invalid syntax"}},
		// Before yield_after the long call blocked (Claude Code) or was cancelled at
		// the tool timeout (Codex), and the model made no python_run.
		"long": {Texts: []string{jsonOf(map[string]any{"stdout": "long started\nlong done\n", "return_value": "'long value'"})}},
		// Before issue 21: the timeout said nothing more, the Categorical was omitted.
		"timeout":     {IsError: &yes, Texts: []string{"Execution timed out\n[failed; generation 1]"}},
		"categorical": {Texts: []string{"<Categorical; safe preview omitted>\n[ok; generation 1]"}},
	}
	recordsOf := func(m map[string]*given, flags bool) records {
		r := records{given: map[string]*given{}}
		for _, st := range modelViewSteps() {
			g, ok := m[st.id]
			if !ok {
				if st.id != "large_artifact" {
					continue
				}
				g = &given{Skipped: "the large output's result names no artifact id"}
			}
			c := *g
			c.Step, c.Tool = st.id, st.tool
			if !flags {
				c.IsError = nil // the Responses API has no error flag
			}
			if c.Args == nil {
				c.Args = map[string]any{}
			}
			r.given[st.id] = &c
			r.order = append(r.order, st.id)
		}
		return r
	}
	// Codex speaks 2025-06-18, where the old server needed no session_id either; the
	// old failure of that point is Claude Code's, under 2026-07-28.
	oldFirst := map[string]*given{}
	for k, v := range old {
		oldFirst[k] = v
	}
	oldFirst["hello"] = &given{IsError: &yes, Texts: []string{"Pass session_id from python_health or python_session_open to reference persistent state"}}
	for _, a := range []agentKind{claudeCode, codex} {
		goodRecs := recordsOf(good, a.errorFlag)
		for _, p := range modelViewPoints() {
			oldRecs := recordsOf(old, a.errorFlag)
			if p.name == "FirstExecuteNeedsNoHealthAndNoSessionID" {
				oldRecs = recordsOf(oldFirst, a.errorFlag)
			}
			t.Run(a.name+"/"+p.name, func(t *testing.T) {
				if f := runCheck(func(c *checker) { p.check(c, a, goodRecs) }); len(f) > 0 {
					t.Errorf("a presentation that keeps the rule is refused: %q", f)
				}
				if f := runCheck(func(c *checker) { p.check(c, a, oldRecs) }); len(f) == 0 {
					t.Errorf("the compact JSON presentation passes: the rule proves nothing")
				} else {
					t.Logf("the old presentation fails with %q", f)
				}
			})
		}
	}
	t.Run("ClaudeCodeBackground/"+backgroundPoint().name, func(t *testing.T) {
		recs := func(background string) records {
			long := *good["long"]
			long.Step, long.Background = "long", background
			wait := *good["long_wait"]
			wait.Step = "long_wait"
			return records{given: map[string]*given{"long": &long, "long_wait": &wait}, order: []string{"long", "long_wait"}}
		}
		notice := "MCP tool \"longrepl/execute_python\" is still running after 2s. It was moved to the background as task kabc123"
		if f := runCheck(func(c *checker) { backgroundPoint().check(c, claudeCode, recs(notice)) }); len(f) > 0 {
			t.Errorf("a delivered task's whole text is refused: %q", f)
		}
		if f := runCheck(func(c *checker) { backgroundPoint().check(c, claudeCode, recs("")) }); len(f) == 0 {
			t.Errorf("a call that was never moved to the background passes: the point proves nothing")
		}
	})
	t.Run("ClaudeCode/ErrorFlag", func(t *testing.T) {
		noFlag := recordsOf(good, false)
		for _, id := range []string{"error", "syntax"} {
			for _, p := range modelViewPoints() {
				if p.steps[0] != id {
					continue
				}
				if f := runCheck(func(c *checker) { p.check(c, claudeCode, noFlag) }); len(f) == 0 {
					t.Errorf("%s passes for Claude Code without is_error", p.name)
				}
			}
		}
	})
}

// TestModelViewRoundTwoRules checks the rules of issue 21's second round the same way:
// each accepts the text form of this round and refuses the one before it.
func TestModelViewRoundTwoRules(t *testing.T) {
	const run, session, artifact = "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b", "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
	foot := "[ok; generation 1; run " + run + "]"
	var head, tail []string
	for i := 1; i <= largeLines; i++ {
		switch {
		case i <= 100:
			head = append(head, largeLine(i))
		case i > largeLines-100:
			tail = append(tail, largeLine(i))
		}
	}
	tb := "Traceback (most recent call last):\n  File \"<repl:" + run + ">\", line 7, in <module>\nBoom: model view boom\n"
	good := map[string]*given{
		"hello":  {Texts: []string{"hello\n", foot}},
		"error":  {Texts: []string{tb, "[failed; generation 1; run " + run + "]"}},
		"health": {Texts: []string{"repl-mcp 0.1.0: trusted local Python.\nDefault session: session_id " + session + ", generation 1: worker running."}},
		"json":   {Texts: []string{"{\"n\": 42}\n", foot}},
		"values": {Texts: []string{"((200000, 6), None, True, {'a': 1})\n", foot}},
		"large": {Texts: []string{strings.Join(head, "\n") + "\n[... 1,800 lines, 180,000 bytes of stdout left out; all of it: artifact " + artifact + " ...]\n" +
			strings.Join(tail, "\n") + "\n", "[ok; generation 1; run " + run + "; complete stdout: artifact " + artifact + " (200,000 bytes); session " + session + "]"}},
		"control": {Texts: []string{`title \x1b]0;pwned\x07 link \x1b]8;;http://e.x\x1b\t\x1b]8;;\x1b\ red \x1b[31mX\x1b[0m c1 \x9b2J bell \x07 bs a\x08b` +
			"\n[stderr]\n" + `native \x1b[2J` + "\n" + `Traceback (most recent call last):` + "\n" + `ValueError: message \x1b[31m red` + "\n",
			"[failed; generation 1; run " + run + "]"}},
		"run": {Texts: []string{"started\n", "[ok; generation 1; run " + run + "; stdout_end 8; stderr_end 0]"}},
	}
	old := map[string]*given{
		"hello":  {Texts: []string{"hello\n[ok; generation 1]"}},
		"error":  {Texts: []string{tb + "[failed; generation 1]"}},
		"health": {Texts: []string{"repl-mcp 0.1.0: trusted local Python.\nDefault session " + session + ", generation 1: worker running."}},
		"json":   {Texts: []string{"{\"n\": 42}\n[ok; generation 1]"}},
		"values": {Texts: []string{"[[200000,6],null,true,{\"a\":1}]\n[ok; generation 1]"}},
		"large": {Texts: []string{strings.Join(head, "\n") + "\n[... 10,279 bytes of stdout left out ...]\n" + strings.Join(tail, "\n") +
			"\n[ok; generation 1; complete stdout: artifact " + artifact + " (200,000 bytes); session " + session + "]"}},
		"control": {Texts: []string{"title \x1b]0;pwned\x07 red \x1b[31mX c1 \u009b2J\n[stderr]\nnative \x1b[2J\nValueError: message \x1b[31m red\n[failed; generation 1]"}},
		"run":     {Texts: []string{"started\n[ok; generation 1; run " + run + "]"}},
	}
	recordsOf := madeUpRecords
	for _, a := range []agentKind{claudeCode, codex, gemini, opencode} {
		for _, p := range roundTwoPoints() {
			t.Run(a.name+"/"+p.name, func(t *testing.T) {
				if f := runCheck(func(c *checker) { p.check(c, a, recordsOf(good, a)) }); len(f) > 0 {
					t.Errorf("this round's text form is refused: %q", f)
				}
				if f := runCheck(func(c *checker) { p.check(c, a, recordsOf(old, a)) }); len(f) == 0 {
					t.Errorf("the text form before this round passes: the rule proves nothing")
				}
			})
		}
	}
}
