package repl

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
)

// testOps are the ops' bounds this package's tests give their workers: the store's
// and the broker's, as main gives them (cellops.Limits, which a test of this package
// cannot import; TestTestOpsAreTheServers keeps the two equal).
var testOps = OpLimits{
	ArtifactChunk:     artifacts.ChunkBytes,
	ArtifactBytes:     artifacts.MaxArtifactBytes,
	ArtifactRead:      artifacts.MaxReadLength,
	ArtifactJSONDepth: artifacts.MaxJSONDepth,
	CallTimeoutMin:    broker.MinTimeout,
	CallTimeoutMax:    broker.MaxTimeout,
	CallTimeout:       broker.DefaultCallTimeout,
	ListTimeout:       broker.DefaultListTimeout,
}

// Every worker gets the shared limits once, the server's own values: a stale
// REPL_MCP_WORKER_LIMITS inherited from the server's environment (a repl-mcp started
// from a cell) never reaches it.
func TestWorkerEnvGivesTheLimits(t *testing.T) {
	env := workerEnv([]string{"KEEP=1", workerLimitsVar + `={"MAX_FRAME":1}`}, "", WorkerLimitsEnv(testOps))
	var given []string
	for _, kv := range env {
		if strings.HasPrefix(kv, workerLimitsVar+"=") {
			given = append(given, kv)
		}
	}
	if len(given) != 1 || given[0] != WorkerLimitsEnv(testOps) || env[0] != "KEEP=1" {
		t.Fatalf("environment %q", env)
	}
	var limits map[string]json.Number
	if err := json.Unmarshal([]byte(strings.TrimPrefix(given[0], workerLimitsVar+"=")), &limits); err != nil {
		t.Fatal(err)
	}
	// Sizes as decimal ints, durations as seconds, as the worker reads them.
	want := map[string]string{"MAX_FRAME": strconv.Itoa(MaxFrameBytes), "STREAM_BUDGET": strconv.Itoa(StreamLimit),
		"SPOOL_HEAD": strconv.Itoa(artifacts.MaxArtifactBytes / 2), "MCP_TIMEOUT_MIN": "0.01", "MCP_TIMEOUT_MAX": "3600",
		"ARTIFACT_JSON_DEPTH": strconv.Itoa(artifactJSONDepth)}
	for name, value := range want {
		if got := limits[name].String(); got != value {
			t.Errorf("%s = %s, want %s", name, got, value)
		}
	}
	if len(limits) != len(workerLimits(testOps)) {
		t.Errorf("%d limits sent, %d declared", len(limits), len(workerLimits(testOps)))
	}
}

// The worker's own JSON depth gives way to a store that takes less: what the worker
// sends, the store must take.
func TestWorkerJSONDepthWithinTheStore(t *testing.T) {
	ops := testOps
	ops.ArtifactJSONDepth = artifactJSONDepth - 10
	if got := workerLimits(ops)["ARTIFACT_JSON_DEPTH"]; got != artifactJSONDepth-10 {
		t.Fatalf("ARTIFACT_JSON_DEPTH = %v with a store that takes %d", got, artifactJSONDepth-10)
	}
}

// A Config without OpLimits starts no worker, and says why, instead of a worker that
// refuses its limits.
func TestNoOpLimitsStartsNoWorker(t *testing.T) {
	m := NewManager(t.Context(), Config{Python: realPython(t), Project: t.TempDir(), Env: nil})
	t.Cleanup(func() { m.Close(0) })
	res := m.Default().Execute(t.Context(), ExecRequest{Code: "1", Timeout: DefaultTimeout})
	if res.Success || res.Error == nil || !strings.Contains(*res.Error, msgNoOpLimits) {
		t.Fatalf("result without OpLimits: %+v", res)
	}
	if kids := children(t); len(kids) != 0 {
		t.Fatalf("processes started without limits: %v", kids)
	}
}
