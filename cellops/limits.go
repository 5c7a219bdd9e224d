package cellops

import (
	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/repl"
)

// Limits are the bounds of the ops this package answers, as the store and the broker
// that answer them declare them: what every worker is given (repl.Config.OpLimits,
// repl.WorkerLimitsEnv) and keeps to before it sends an op. main passes them in the
// Config; the bench and the worker's tests, which start workers themselves, take them
// from here too, so a worker has the same bounds however it starts.
func Limits() repl.OpLimits {
	return repl.OpLimits{
		ArtifactChunk:     artifacts.ChunkBytes,
		ArtifactBytes:     artifacts.MaxArtifactBytes,
		ArtifactRead:      artifacts.MaxReadLength,
		ArtifactJSONDepth: artifacts.MaxJSONDepth,
		CallTimeoutMin:    broker.MinTimeout,
		CallTimeoutMax:    broker.MaxTimeout,
		CallTimeout:       broker.DefaultCallTimeout,
		ListTimeout:       broker.DefaultListTimeout,
	}
}
