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

import "testing"

// Full skips t under -short, saying why it belongs to the full tier: what it needs
// ("npm's packages (make interop-deps)") or what it costs.
func Full(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("make check (-short) skips this, make test runs it: %s", why)
	}
}

// Fast reports the fast tier, for a test that narrows what it covers there (one
// interpreter instead of each) rather than skipping.
func Fast() bool { return testing.Short() }
