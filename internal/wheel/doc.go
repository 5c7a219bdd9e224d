// Package wheel turns a repl-mcp binary into a binary-only Python wheel and checks such a
// wheel the way an installer should but pip does not.
//
// It owns the wheel format: the file name (repl_mcp-<pep440>-py3-none-<platform>.whl),
// the layout (the binary as the repl-mcp script under repl_mcp-<v>.data/scripts/, zip
// mode 0755, and a dist-info with METADATA, WHEEL and RECORD; its version normalized by
// internal/pep440), the platform tag for each GOOS/GOARCH, and reading the [project] table
// of pyproject.toml for METADATA (parsed by github.com/BurntSushi/toml; an unknown
// [project] key is an error, never dropped metadata). It does not build the binary (goreleaser or go build
// does) and it starts nothing: Build and Verify are plain functions over files.
//
// Build is deterministic: entries are sorted (RECORD last), timestamps and modes fixed,
// so two builds of the same binary with the same inputs are byte-identical. Verify
// rechecks every RECORD hash and size, the WHEEL tags against the file name, the
// script's mode, and, when the script is an ELF or Mach-O file, that its OS,
// architecture, linking and minimum macOS agree with the platform tags.
//
// The wheel's contract is docs/contract.md §10.1; docs/design.md ("Packaging") says
// how releases are built.
package wheel
