// Package packaging tests repl-mcp the way users get it: as a wheel installed into a
// virtual environment, and as a source distribution that pip builds with the Go
// toolchain. It has no code of its own; `go test ./packaging/` (and so `make test`)
// runs the tests, each bounded in time.
//
// installed_test.go builds the host binary with the pyproject version, wraps it with
// internal/wheel and verifies the wheel, installs it with the pinned uv (`uv venv` and
// `uv pip install`) on every CPython that internal/pythons finds, and once with plain
// `python -m venv` and pip, then drives the installed <venv>/bin/repl-mcp over stdio
// from a project outside the checkout (docs/contract.md §10.1): the version, a lazy
// python_health, a cell whose sys.prefix is the venv (the sibling interpreter was
// chosen, with no --python and no REPL_MCP_PYTHON) and which imports httpx and openpyxl
// at the pinned versions, and exit status 0 when stdin closes.
//
// sdist_test.go makes the source distribution with `go run ./packaging/sdist` (what
// `make sdist` runs) and checks its file list and its backend's hooks; then, in a fresh
// venv of python3, it checks that without Go on PATH `pip install` of the sdist fails
// with the backend's one line, builds a wheel from it with pip and the in-tree backend
// (packaging/backend) and compares that wheel with internal/wheel's, and installs it
// with `pip install --no-index --no-build-isolation --no-deps` (no index, so no
// dependencies: the installed repl-mcp is checked with --version only).
//
// The tests install nothing outside their temporary directories. uv is the pinned one
// in interop/.venv-uv that `make interop-deps` creates; its cache is interop/.cache/uv,
// so repeated runs reuse downloaded dependencies. Every process runs in its own process
// group, which is killed when the test is done with it.
//
// What a wheel and an sdist must be is docs/contract.md §10.1.
package packaging
