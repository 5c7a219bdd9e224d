// Package buildversion says which version a build of repl-mcp is, one way for every
// way of building it: `make build`, `make wheel` and `make wheelhouse` (which stamp the
// version of the checkout with the linker), and `go install` or `go build` without a
// stamp (which read Go's build information).
//
// A release is built from a tag vX.Y.Z (or a prerelease tag such as v3.2.0-rc.1) on a
// clean tree and reports the tag in PEP 440 form: 0.1.0, 3.2.0rc1. Anything else is a
// development build of the next release, pyproject.toml's version, named after its
// commit: <version>.dev<commit time, UTC, YYYYMMDDhhmmss>+g<12 hex digits of the
// commit>, with .dirty appended when the tree had changes. PEP 440 sorts it before the
// release and later commits after earlier ones; the same string names the wheel, and
// is what `repl-mcp --version` prints. The commit time and the 12 digits are exactly what
// a Go pseudo-version carries, so a binary `go install`ed from the module proxy at a
// commit reports what `make build` at that commit does. A build that knows neither a
// tag nor a commit (a source tree without .git, or -buildvcs=false) is <version>.dev0.
//
// It owns no state and starts nothing but git (Checkout).
//
// docs/design.md ("Packaging") says how each build gets its version; the version a
// wheel and --version show is docs/contract.md §10.1.
package buildversion
