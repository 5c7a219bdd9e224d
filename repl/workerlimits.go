package repl

import (
	"encoding/json"
	"errors"
	"time"
)

// workerLimitsVar names the variable of a worker's environment that holds its shared
// limits (worker/PROTOCOL.md, The process).
const workerLimitsVar = "REPL_MCP_WORKER_LIMITS"

// artifactJSONDepth is the worker's own choice of how deeply a JSON artifact value it
// sends may nest; the worker gets the store's bound instead when that is lower
// (OpLimits.ArtifactJSONDepth), so what it sends the store always takes.
const artifactJSONDepth = 32

// OpLimits are the bounds of the ops cell code calls through the Services (the mcp
// bridge, the artifact helpers), which the worker keeps to before it calls one. The
// packages that answer the ops declare them (the artifact store, the broker); whoever
// builds the Config passes them in (main, through cellops.Limits), so that repl says
// what it needs and not where it comes from. Every worker needs them: a Config
// without them starts none (errNoOpLimits).
type OpLimits struct {
	ArtifactChunk     int // raw bytes of one upload append
	ArtifactBytes     int // bytes of one artifact
	ArtifactRead      int // bytes of one range read
	ArtifactJSONDepth int // nesting of arrays and objects a JSON artifact may have
	// CallTimeoutMin and CallTimeoutMax bound every call's and listing's timeout;
	// CallTimeout and ListTimeout are the timeouts of a call and a listing whose cell
	// code gives none.
	CallTimeoutMin, CallTimeoutMax time.Duration
	CallTimeout, ListTimeout       time.Duration
}

// errNoOpLimits is a start asked of a Manager whose Config has no OpLimits: a
// wiring bug, since the worker refuses to start without every limit.
var errNoOpLimits = errors.New(msgNoOpLimits)

// workerLimits are the limits the worker enforces that the Go side enforces or relies on
// too (the frame size, the stream and preview budgets, the artifact sizes, the bridge's
// timeouts), by the name replworker/limits.py gives each. They are declared here, once
// (ops' from the OpLimits the Config brings): every worker gets them in its environment
// ([WorkerLimitsEnv]) and has no values of its own for them, so the two sides cannot
// drift apart. The worker's other limits, which nothing on this side depends on, are
// its own (replworker/limits.py). Durations go as seconds.
func workerLimits(ops OpLimits) map[string]any {
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
		// Bytes of a cut stream's complete output kept from its start past the
		// artifact bound, leaving room for its tail.
		"SPOOL_HEAD": ops.ArtifactBytes / 2,

		"ARTIFACT_CHUNK":      ops.ArtifactChunk,
		"ARTIFACT_MAX_BYTES":  ops.ArtifactBytes,
		"ARTIFACT_READ_MAX":   ops.ArtifactRead,
		"ARTIFACT_JSON_DEPTH": min(artifactJSONDepth, ops.ArtifactJSONDepth),

		"MCP_TIMEOUT_MIN":       seconds(ops.CallTimeoutMin),
		"MCP_TIMEOUT_MAX":       seconds(ops.CallTimeoutMax),
		"MCP_CALL_TIMEOUT":      seconds(ops.CallTimeout),
		"MCP_CATALOGUE_TIMEOUT": seconds(ops.ListTimeout),
	}
}

// WorkerLimitsEnv is the environment entry that gives a worker its shared limits,
// REPL_MCP_WORKER_LIMITS=<JSON object>, with ops the bounds of its ops: the server
// adds it to every worker's environment, and whatever else starts a worker (the
// bench, the worker's own tests) adds it too, with the same ops (cellops.Limits).
func WorkerLimitsEnv(ops OpLimits) string {
	data, err := json.Marshal(workerLimits(ops))
	if err != nil {
		panic("repl: the worker's limits do not encode: " + err.Error()) // numbers always do
	}
	return workerLimitsVar + "=" + string(data)
}
