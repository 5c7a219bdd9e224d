package broker

import "time"

// The broker's limits, in one table (docs/contract.md §8.5, §8.6 and §13.1). The
// exported ones are the contract's; the worker's twins of the timeouts are checked
// against them.
const (
	// MaxConcurrentRequests bounds the catalogue and call requests in flight per broker.
	MaxConcurrentRequests = 32
	// MaxTransports bounds the live downstream connections per broker.
	MaxTransports = 32
	// MaxResultBytes is the delivery budget of one call result.
	MaxResultBytes = 900_000

	// DefaultCallTimeout is a call's timeout when cell code gives none.
	DefaultCallTimeout = 120 * time.Second
	// DefaultListTimeout is a listing's timeout when cell code gives none.
	DefaultListTimeout = 30 * time.Second
	// MinTimeout and MaxTimeout bound every call and listing timeout.
	MinTimeout = 10 * time.Millisecond
	MaxTimeout = 3600 * time.Second

	failureCooldown   = 60 * time.Second
	catalogueTTL      = 15 * time.Second
	registryTTL       = 30 * time.Second
	registryJobBudget = 5 * time.Second
	maxCatalogueTools = 10_000
	maxCatalogueBytes = 1 << 20
	maxPages          = 128 // catalogue pagination

	// Peers.
	connectTimeout = 30 * time.Second
	peerLineLimit  = 1 << 20
	// peerMaxDepth is the deepest nesting of a message go-sdk decodes (its
	// internal json package's limit): a deeper response fails its own request only.
	peerMaxDepth  = 1000
	peerStopGrace = time.Second
	httpBodyLimit = 1 << 20 // a JSON body, and one SSE event
)
