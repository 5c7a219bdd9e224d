package broker

import (
	"sync/atomic"
	"testing"

	"github.com/iota-uz/repl-mcp/broker/registry"
)

// TestRefreshOnAClosedBrokerLoadsNothing: after Close, Refresh reads no registry
// and says the broker is shut down.
func TestRefreshOnAClosedBrokerLoadsNothing(t *testing.T) {
	tb := newTestBroker(t, map[string]any{})
	var loads atomic.Int32
	tb.load = func(o registry.Options) (*registry.Registry, error) {
		loads.Add(1)
		return registry.Load(o)
	}
	tb.Close()
	_, err := tb.Refresh()
	wantErr(t, err, msgBrokerClosed)
	if n := loads.Load(); n != 0 {
		t.Fatalf("a refresh of the closed broker loaded the registry %d times", n)
	}
}
