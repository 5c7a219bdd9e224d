package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/repl"
)

// comparers are the functions of strings and bytes that compare or search a text.
var comparers = map[string]bool{
	"Contains": true, "ContainsAny": true, "ContainsFunc": true, "HasPrefix": true, "HasSuffix": true,
	"Index": true, "LastIndex": true, "Cut": true, "CutPrefix": true, "CutSuffix": true, "TrimPrefix": true,
	"TrimSuffix": true, "EqualFold": true, "Count": true, "Split": true, "SplitN": true, "Compare": true,
}

// TestSwitchesOnReasonsNotWords fails when the server's code, or repl's,
// compares the words of an execution result's error, or compares anything with the
// words of repl's reasons: what a result's failure means is its repl.Reason
// (reasons.go), and the words are for people. It reads every non-test Go file of the
// two packages and looks at each comparison (==, !=, a switch, a strings or bytes
// search): none may read a field named Error (a result's error; the Error() method is
// a Go error's text, and comparing with nil or "" asks only whether there is one) or
// a message table's entry (msgX), and no string of words in one (a single word is too
// common to tell) may be words of a reason's text. That an interrupt stopped a cell the worker says
// with its result frame's "interrupted", not in words either.
func TestSwitchesOnReasonsNotWords(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../repl/*.go")
	files = append(files, more...)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range wordComparisons(f) {
			t.Errorf("%s: compares %s; switch on the result's Reason instead", fset.Position(bad.Pos()), bad.what)
		}
	}
}

// TestWordComparisonsFound: the scan finds what today's server no longer does, the
// footer's old test of whether an error names the cleared variables, and passes the
// comparisons it must leave alone.
func TestWordComparisonsFound(t *testing.T) {
	for _, c := range []struct {
		src  string
		want int
	}{
		{`e.State == repl.StateCleared && (e.Error == nil || !strings.Contains(*e.Error, "variables cleared"))`, 1},
		{`strings.Contains(text, "variables cleared")`, 1},
		{`h.Environment.RuntimeStatus == "running"`, 0},
		{`strings.HasPrefix(*res.Error, x)`, 1},
		{`*res.Error == msg`, 1},
		{`strings.Contains(first, msgVariablesCleared)`, 1},
		{`msg == "Python worker crashed"`, 1},
		{`res.Error != nil && res.Reason == repl.ReasonCrashed`, 0},
		{`reply.Error != "" || len(reply.Result) == 0`, 0},
		{`strings.HasPrefix(rpcErr.Message, "unknown tool") && err.Error() == ""`, 0},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\nvar _ = "+c.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(wordComparisons(f)); got != c.want {
			t.Errorf("%s: %d found, want %d", c.src, got, c.want)
		}
	}
}

type wordComparison struct {
	ast.Node
	what string
}

// wordComparisons are f's comparisons that read a result's error or a reason's words.
func wordComparisons(f *ast.File) []wordComparison {
	var found []wordComparison
	check := func(at ast.Node, operands ...ast.Expr) {
		for _, op := range operands {
			if what := wordsIn(op); what != "" {
				found = append(found, wordComparison{at, what})
				return
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && !isNone(n.X) && !isNone(n.Y) {
				check(n, n.X, n.Y)
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && comparers[sel.Sel.Name] {
				if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "strings" || pkg.Name == "bytes") {
					check(n, n.Args...)
				}
			}
		case *ast.SwitchStmt:
			if n.Tag != nil {
				check(n, n.Tag)
			}
			for _, s := range n.Body.List {
				check(s, s.(*ast.CaseClause).List...)
			}
		}
		return true
	})
	return found
}

// wordsIn says what of a result's error, or of a reason's words, e reads; "" for none.
func wordsIn(e ast.Expr) string {
	var what string
	ast.Inspect(e, func(n ast.Node) bool {
		if what != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			// x.Error() is a Go error's text: look at its receiver only.
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Error" && len(n.Args) == 0 {
				return false
			}
		case *ast.SelectorExpr:
			if n.Sel.Name == "Error" {
				what = "a result's error"
			}
		case *ast.Ident:
			if len(n.Name) > 3 && strings.HasPrefix(n.Name, "msg") && n.Name[3] >= 'A' && n.Name[3] <= 'Z' {
				what = "the message " + n.Name // an entry of a message table
			}
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && strings.Contains(strings.TrimSpace(s), " ") {
				for _, r := range repl.Reasons() {
					if strings.Contains(r.Text(), s) || r.Text() != "" && strings.Contains(s, r.Text()) {
						what = "the words " + strconv.Quote(s) + " of reason " + string(r)
					}
				}
			}
		}
		return true
	})
	return what
}

// isNone says whether e is nil or "": comparing with either asks whether there is
// an error, not what it says.
func isNone(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "nil"
	case *ast.BasicLit:
		return e.Value == `""`
	}
	return false
}
