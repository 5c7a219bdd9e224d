// Package atomicfile replaces files so that a reader sees the old content or the
// whole new content, never a part: the build tools (wheels, the sdist), the bench's
// report and the test fixture's markers write through it. The broker's journal and
// credential store keep their own writer, whose temp names and modes the contract
// fixes.
//
// docs/design.md ("Layout") places it among the packages.
package atomicfile
