// Package pythons finds the CPython interpreters the tests run on: every pyenv
// version from 3.10 up and python3 on PATH, each once. It is for tests and tools; the
// server picks its interpreter in package repl.
//
// docs/design.md ("Tests") says which interpreters the suite runs on.
package pythons
