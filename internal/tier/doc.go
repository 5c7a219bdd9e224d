// Package tier names the two test tiers (docs/design.md, "Tests"). `make check` runs
// `go test -short`: the fast offline tier, for every edit. `make test` runs everything.
//
// A test that needs what only the package registries bring (npm's packages, the venvs
// that uv builds from PyPI, the pinned uv itself, the dependency wheels), or that takes
// minutes, calls [Full] first: under -short it skips and says why; in the full tier it
// runs, and fails, naming the setup step, when what it needs is missing. A test that
// covers less in the fast tier instead (one interpreter, not each) asks [Fast].
// Nothing else in the project reads testing.Short.
package tier
