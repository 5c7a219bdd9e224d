package broker

import (
	"errors"
	"fmt"

	"github.com/iota-uz/repl-mcp/broker/registry"
)

// LoginEntry returns the server that --oauth-login names from b's registry, as b
// loaded it when it was made (docs/contract.md §1.6: the registry is read before the
// login runs). A registry with a configuration error refuses every login.
func (b *Broker) LoginEntry(server string) (registry.Entry, error) {
	b.mu.Lock()
	reg, configErr := b.reg, b.configErr
	b.mu.Unlock()
	switch {
	case configErr != nil:
		return registry.Entry{}, fmt.Errorf("MCP registry configuration error: %v; repair registry before OAuth login", configErr)
	case !registry.ValidName(server, registry.MaxServerNameBytes):
		return registry.Entry{}, errors.New(msgBadServerName)
	case reg == nil:
		return registry.Entry{}, errors.New("MCP broker has no registry; --oauth-login needs one")
	case reg.Disabled:
		return registry.Entry{}, fmt.Errorf("MCP broker is disabled (%s); --oauth-login needs a registry", reg.DisabledBy)
	}
	e, ok := reg.Lookup(server)
	if !ok {
		if x, excluded := reg.Excluded[server]; excluded {
			why := `is not granted to the broker ("brokerAllowed": true)`
			if x.Reason == registry.ExcludedDisabled {
				why = `is disabled ("disabled": true)`
			}
			return registry.Entry{}, fmt.Errorf("MCP server %q in %s %s; --oauth-login needs a configured server", server, x.Where(), why)
		}
		return registry.Entry{}, fmt.Errorf("unknown MCP server %q; --oauth-login needs a server of the registry (check --config and --mcp-scope)", server)
	}
	return e, nil
}
