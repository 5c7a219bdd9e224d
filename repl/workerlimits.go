package repl

import (
	"encoding/json"
	"time"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
)

// workerLimitsVar names the variable of a worker's environment that holds its shared
// limits (worker/PROTOCOL.md, The process).
const workerLimitsVar = "REPL_MCP_WORKER_LIMITS"

// The worker's own choices that the Go side bounds: what the worker sends, the store
// must take. Each const _ line fails to compile when the bound is broken.
const (
	artifactJSONDepth = 32                             // containers a JSON artifact value the worker sends may nest
	spoolHead         = artifacts.MaxArtifactBytes / 2 // bytes of a cut stream's complete output kept from its start past the artifact bound, leaving room for its tail
)

const _ = uint(artifacts.MaxJSONDepth - artifactJSONDepth)

// workerLimits are the limits the worker enforces that the Go side enforces or relies on
// too (the frame size, the stream and preview budgets, the artifact sizes, the bridge's
// timeouts), by the name replworker/limits.py gives each. They are declared here, once:
// every worker gets them in its environment ([WorkerLimitsEnv]) and has no values of its
// own for them, so the two sides cannot drift apart. The worker's other limits, which
// nothing on this side depends on, are its own (replworker/limits.py). Durations go as
// seconds.
func workerLimits() map[string]any {
	seconds := func(d time.Duration) float64 { return d.Seconds() }
	return map[string]any{
		"MAX_FRAME":               MaxFrameBytes,
		"STREAM_BUDGET":           StreamLimit,
		"STREAM_HEAD":             streamHead,
		"STREAM_MARKER":           streamMarker,
		"BACKGROUND_BUDGET":       backgroundLimit,
		"BACKGROUND_HEAD":         backgroundHead,
		"BACKGROUND_THREAD_NAMES": maxBackgroundThreads,
		"THREAD_NAME_BYTES":       maxThreadNameBytes,
		"PREVIEW_BYTES":           PreviewLimit,
		"SOURCE_RUNS":             HistoryRuns,
		"SOURCE_FILE_BYTES":       MaxCodeBytes, // a saved file has the code limit (docs/contract.md §6.4)
		"RPC_PENDING":             maxOutstandingRPCs,
		"ARTIFACT_ERROR_BYTES":    maxArtifactErrorBytes,
		"IMAGE_COUNT":             maxImages,
		"IMAGE_BYTES":             maxImageBytes,
		"IMAGE_CHUNK":             imageChunkBytes,
		"IMAGE_ARTIFACTS":         maxImageArtifacts,
		"HTML_BYTES":              maxHTMLBytes,
		"DISPLAY_COUNT":           maxDisplays,
		"DISPLAY_BYTES":           maxDisplayBytes,
		"SPOOL_HEAD":              spoolHead,

		"ARTIFACT_CHUNK":      artifacts.ChunkBytes,
		"ARTIFACT_MAX_BYTES":  artifacts.MaxArtifactBytes,
		"ARTIFACT_READ_MAX":   artifacts.MaxReadLength,
		"ARTIFACT_JSON_DEPTH": artifactJSONDepth,

		"MCP_TIMEOUT_MIN":       seconds(broker.MinTimeout),
		"MCP_TIMEOUT_MAX":       seconds(broker.MaxTimeout),
		"MCP_CALL_TIMEOUT":      seconds(broker.DefaultCallTimeout),
		"MCP_CATALOGUE_TIMEOUT": seconds(broker.DefaultListTimeout),
	}
}

// WorkerLimitsEnv is the environment entry that gives a worker its shared limits,
// REPL_MCP_WORKER_LIMITS=<JSON object>: the server adds it to every worker's environment,
// and whatever else starts a worker (the bench, the worker's own tests) adds it too.
func WorkerLimitsEnv() string {
	data, err := json.Marshal(workerLimits())
	if err != nil {
		panic("repl: the worker's limits do not encode: " + err.Error()) // numbers always do
	}
	return workerLimitsVar + "=" + string(data)
}
