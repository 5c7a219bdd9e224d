// Package testproc runs the external programs of tests (npm tools, uv, pip, the
// built binary) bounded in time, each in a process group of its own that is killed
// when the test is done with it, so that no test leaves a process behind.
//
// docs/design.md ("Tests") says how the suite runs external programs.
package testproc
