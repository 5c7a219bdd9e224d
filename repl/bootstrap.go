package repl

// bootstrap is the -c program that starts a worker. It refuses old interpreters
// before the worker's own source is compiled (which could fail with a confusing
// SyntaxError there), then runs the worker source passed as the next argument.
const bootstrap = `import sys
if sys.version_info < (3, 10):
    sys.stderr.write("repl-mcp needs Python 3.10 or newer; this is Python %s\n" % sys.version.split()[0])
    sys.exit(3)
_repl_source = sys.argv.pop(1)
sys.argv[0] = ""
exec(compile(_repl_source, "<repl-mcp worker>", "exec"))
`
