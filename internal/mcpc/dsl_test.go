package mcpc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPCAssertions pins the assertion language of mcpc (see doc.go).
func TestMCPCAssertions(t *testing.T) {
	var msg map[string]any
	reply := `{"jsonrpc":"2.0","id":3,"result":{"isError":false,
		"content":[{"type":"text","text":"\n4"}],
		"structuredContent":{"success":true,"value":4,"return_value":"4","python":null,
			"stdout":"héllo","tools":[{"a":false},{"a":false}],"empty":[],
			"weird":{"a.b/c~d":1}}}}`
	if err := json.Unmarshal([]byte(reply), &msg); err != nil {
		t.Fatal(err)
	}
	pass := []string{
		`sc.success == true`,
		`sc.value == 4`,
		`sc.value == 4.0`,
		`sc.value >= 4`,
		`sc.value < 4.5`,
		`sc.value != 5`,
		`sc.return_value == "4"`,
		`sc.python == null`,
		`sc.python exists`,
		`sc.nothing absent`,
		`sc.tools.5 absent`,
		`text == "\n4"`,
		`text ~ ^\n4$`,
		`text contains "4"`,
		`sc.stdout.# == 6`,
		`sc.tools.# == 2`,
		`sc.tools.*.a == false`,
		`sc.tools.*.a !~ true`,
		`result.content.0.type == "text"`,
		`/result/structuredContent/weird/a.b~1c~0d == 1`,
		`sc == {"success":true,"value":4,"return_value":"4","python":null,"stdout":"héllo","tools":[{"a":false},{"a":false}],"empty":[],"weird":{"a.b/c~d":1}}`,
		`error absent`,
		`sc.nothing != 1`,
		`result.isError != true`,
	}
	for _, a := range pass {
		if err := checkAssertion(msg, a); err != nil {
			t.Errorf("%s: unexpected failure: %v", a, err)
		}
	}
	fail := []string{
		`sc.success == false`,
		`sc.value > 4`,
		`sc.value == "4"`,
		`sc.nothing exists`,
		`sc.python absent`,
		`sc.nothing == null`,
		`sc.empty.*.a == 1`, // a wildcard must match something
		`sc.tools.*.a == true`,
		`text contains "5"`,
		`sc.return_value < 5`, // not a number
		`sc.value ~ [`,        // bad regexp
		`sc.value == bare`,    // values are JSON
		`sc.value`,            // no operator
		`sc.value === 4`,
	}
	for _, a := range fail {
		if err := checkAssertion(msg, a); err == nil {
			t.Errorf("%s: passed, want failure", a)
		}
	}
}

func TestMCPCSubstitution(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cell.py")
	if err := os.WriteFile(file, []byte("print(\"hi\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPC_TEST_ENV", "from-env")
	c := newMCPClient("test.mcpc")
	c.vars["gen"] = "7"
	c.vars["sid"] = "abc"
	for in, want := range map[string]string{
		`{"session_id":"{{sid}}"}`:             `{"session_id":"abc"}`,
		`expect sc.generation == {{gen+1}}`:    `expect sc.generation == 8`,
		`expect sc.generation == {{gen-7}}`:    `expect sc.generation == 0`,
		`{{MCPC_TEST_ENV}}`:                    `from-env`,
		`{"code": {{@` + file + `}}}`:          `{"code": "print(\"hi\")\n"}`,
		`{"code":"d = {'a': {'b': 1}}"}`:       `{"code":"d = {'a': {'b': 1}}"}`,
		`no substitution {{ spaced }} or {{}}`: `no substitution {{ spaced }} or {{}}`,
	} {
		got, err := c.substitute(in)
		if err != nil || got != want {
			t.Errorf("substitute(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{`{{nope}}`, `{{sid+1}}`, `{{@/nonexistent/file}}`} {
		if _, err := c.substitute(in); err == nil {
			t.Errorf("substitute(%s): no error", in)
		}
	}
}

func TestMCPCSplitWords(t *testing.T) {
	w, rest := splitWords(`  send  slow execute_python {"code": "a b"} `, 3)
	if strings.Join(w, "|") != `send|slow|execute_python` || rest != `{"code": "a b"}` {
		t.Errorf("splitWords = %q, %q", w, rest)
	}
	w, rest = splitWords(`list`, 2)
	if len(w) != 1 || rest != "" {
		t.Errorf("splitWords(list) = %q, %q", w, rest)
	}
}

// TestMCPCStableReply pins save-reply's stable form: sorted, indented, numbers as
// written, and every volatile value a placeholder (doc.go, Goldens).
func TestMCPCStableReply(t *testing.T) {
	sc := `{"session_id":"0b7e2c1a-5d1f-4c3e-9a2b-6f8e1d2c3b4a","run_id":"11111111-2222-4333-8444-555555555555",` +
		`"other":"0b7e2c1a-5d1f-4c3e-9a2b-6f8e1d2c3b4a","python":{"pid":4242,"python_version":"3.11.7"},` +
		`"elapsed_ms":12.5,"version":"0.1.0","major":3,"minor":11,"max":18446744073709551615,"ratio":0.10,` +
		`"project":"/work/dir/sub","exe":"/py/bin/python","html":"<&>","gone":null,"pid_list":[1,2]}`
	reply := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":` + strconvQuote(sc) + `}],"structuredContent":` + sc + `,"isError":false}}`
	got, err := stableReply([]byte(reply), []goldenPath{{"/work/dir", "$WORK"}, {"/py/bin/python", "$PYTHON"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "id": 7,
  "jsonrpc": "2.0",
  "result": {
    "content": [
      {
        "text": "<structuredContent as JSON>",
        "type": "text"
      }
    ],
    "isError": false,
    "structuredContent": {
      "elapsed_ms": "<elapsed_ms>",
      "exe": "$PYTHON",
      "gone": null,
      "html": "<&>",
      "major": "<major>",
      "max": 18446744073709551615,
      "minor": "<minor>",
      "other": "<uuid-1>",
      "pid_list": [
        1,
        2
      ],
      "project": "$WORK/sub",
      "python": {
        "pid": "<pid>",
        "python_version": "<python_version>"
      },
      "ratio": 0.10,
      "run_id": "<uuid-2>",
      "session_id": "<uuid-1>",
      "version": "<version>"
    }
  }
}
`
	if string(got) != want {
		t.Errorf("stable reply:\n%s\nwant:\n%s", got, want)
	}
	// A text that is not the value stays, with its ids and paths replaced.
	got, err = stableReply([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"run 0b7e2c1a-5d1f-4c3e-9a2b-6f8e1d2c3b4a in /work/dir"}],"structuredContent":{"a":1}}}`), []goldenPath{{"/work/dir", "$WORK"}})
	if err != nil || !strings.Contains(string(got), `"text": "run <uuid-1> in $WORK"`) {
		t.Errorf("a plain text: %s, %v", got, err)
	}
	if _, err := stableReply([]byte(`not json`), nil); err == nil {
		t.Error("a reply that is not JSON was accepted")
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
