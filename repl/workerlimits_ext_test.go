package repl_test

import (
	"testing"

	"github.com/iota-uz/repl-mcp/cellops"
	"github.com/iota-uz/repl-mcp/repl"
)

// The package's tests run their workers with the bounds main gives the server's:
// cellops.Limits, which only a test outside the package can import.
func TestTestOpsAreTheServers(t *testing.T) {
	if got := cellops.Limits(); got != repl.TestOps {
		t.Fatalf("cellops.Limits() = %+v, the package's tests use %+v", got, repl.TestOps)
	}
}
