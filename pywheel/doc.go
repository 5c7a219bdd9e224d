// Command pywheel wraps repl-mcp binaries into Python wheels, verifies wheels and names
// a checkout's version; it is a thin command line over internal/wheel and
// internal/buildversion, run by `make build`, `make wheel` and `make wheelhouse`:
//
//	go run ./pywheel build --binary dist/repl-mcp_linux_amd64_v1/repl-mcp [--platform TAG|GOOS/GOARCH] [--version V] [--out DIR] [--pyproject FILE]
//	go run ./pywheel verify WHEEL...
//	go run ./pywheel pep440 VERSION
//	go run ./pywheel version [--dir DIR] [--pyproject FILE]
//	go run ./pywheel deps [--pyproject FILE]
//
// build prints the wheel's path and size; without --platform it reads the platform from
// the binary's ELF or Mach-O header, and without --version it names the wheel by the
// version the binary itself reports (stamped with -X main.version, else derived from
// its Go build information as `repl-mcp --version` does), read without running it.
// verify prints one line per wheel and fails if any wheel has a problem; pep440 prints a
// version in normalized PEP 440 form (3.2.0-rc.1 becomes 3.2.0rc1). version prints the
// version a build of the git checkout reports (internal/buildversion: the release on a
// clean release tag, else <version>.dev<commit time>+g<commit>), which the Makefile
// stamps into every binary and wheel; deps prints the pinned dependencies without their
// markers, one a line, for `make wheelhouse`.
//
// The wheel's contract is docs/contract.md §10.1.
package main
