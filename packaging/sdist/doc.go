// Command sdist writes repl-mcp's source distribution, dist/repl_mcp-<version>.tar.gz,
// for `make sdist`: go run ./packaging/sdist -out dist. <version> is the checkout's,
// as `make build` stamps it (internal/buildversion): the release on a clean release
// tag, a development version anywhere else, written into the sdist's pyproject.toml
// and PKG-INFO too.
//
// The archive holds what `go build .` needs on the installing machine and nothing
// else: go.mod, go.sum, every non-test Go file (for any OS) and every embedded file of
// the module's packages that the command imports on a release platform, the in-tree
// PEP 517 backend (packaging/backend/repl_mcp_build.py), README, LICENSE when there is
// one, PKG-INFO, and pyproject.toml with its [build-system] replaced by one that names
// that backend. PKG-INFO is the METADATA that internal/wheel writes into a release
// wheel, byte for byte, and the backend copies it into the wheel it builds. Tests,
// testscripts, the interop suite and node_modules stay out.
//
// It reads the checkout and runs `go env` and `go list`; it builds nothing. The
// archive is written to a temporary file in the output directory and renamed into
// place, so a reader never sees half of one.
//
// What the sdist must hold is docs/contract.md §10.1.
package main
