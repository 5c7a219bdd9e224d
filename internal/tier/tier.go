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
