package server

// The benchmark of presenting a tool's value (`make bench-micro`): what a tools/call
// spends between the handler's value and the CallToolResult, in each form, for a
// trivial cell, a cell at the contract's bounds (50,000 bytes of stdout and of
// stderr, a 20,000-byte error) and a tool value whose JSON passes the 8 KiB text.

import (
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/repl"
)

func BenchmarkPresent(b *testing.B) {
	line := strings.Repeat("0123456789 ", 9) + "\n"
	bounded := strings.Repeat(line, 50000/len(line))
	big := executed(&repl.Result{RunID: "R", Success: false, Stdout: bounded, Stderr: bounded,
		Error: ptr(strings.Repeat("Traceback line <x> & \"y\"\n", 800)), State: repl.StatePreserved,
		Truncated: repl.Truncated{Stdout: true, Stderr: true}, SessionID: "S", Generation: 3})
	small := executed(&repl.Result{RunID: "R", Success: true, Stdout: "hello\n", ReturnValue: ptr("4"),
		State: repl.StatePreserved, SessionID: "S", Generation: 1})
	tool := map[string]any{"names": strings.Repeat("variable_name, ", 2000), "count": 2000}
	for _, c := range []struct {
		name  string
		value any
	}{{"cell", small}, {"bounded", big}, {"tool", tool}} {
		for _, f := range []struct {
			name string
			form form
		}{{"structured", formStructured}, {"text", formText}, {"code", formCode}} {
			b.Run(c.name+"/"+f.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var kept *keptText
					if f.form.text() {
						kept = keepText(b.Context(), nil, c.value)
					}
					if res := present(f.form, c.value, kept); len(res.Content) == 0 {
						b.Fatal("no content")
					}
				}
			})
		}
	}
}
