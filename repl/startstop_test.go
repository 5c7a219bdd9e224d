package repl

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Every worker process starts and stops through lifecycle.go (startWorker, reaper),
// the spare pool's too: outside it, no file of the package calls spawn, or halts or
// reaps a process, but process.go's own spawn, which undoes a start that failed.
func TestOneStartAndStopPath(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") || path == "lifecycle.go" {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				name := ""
				switch f := call.Fun.(type) {
				case *ast.Ident:
					name = f.Name
				case *ast.SelectorExpr:
					name = "." + f.Sel.Name
				}
				switch {
				case name == "spawn",
					(name == ".halt" || name == ".reap" || name == ".stop") && !(path == "process.go" && fn.Name.Name == "spawn"):
					if name == ".stop" && !isProcessStop(call) {
						return true
					}
					t.Errorf("%s: %s calls %s: a worker starts and stops only through lifecycle.go (startWorker, reaper)", fset.Position(call.Pos()), fn.Name.Name, strings.TrimPrefix(name, "."))
				}
				return true
			})
		}
	}
	if checked < 20 {
		t.Fatalf("only %d files checked", checked)
	}
}

// isProcessStop reports whether call is p.stop() on a process (a field or variable
// named p, or a spare's s.p, or waiting.p): main's stop of a process, which this
// package no longer has, as opposed to a lifecycle's or a reaper's stop.
func isProcessStop(call *ast.CallExpr) bool {
	sel := call.Fun.(*ast.SelectorExpr)
	switch x := sel.X.(type) {
	case *ast.Ident:
		return x.Name == "p"
	case *ast.SelectorExpr:
		return x.Sel.Name == "p"
	}
	return false
}
