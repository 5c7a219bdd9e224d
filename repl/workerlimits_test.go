package repl

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/artifacts"
)

// Every worker gets the shared limits once, the server's own values: a stale
// REPL_MCP_WORKER_LIMITS inherited from the server's environment (a repl-mcp started
// from a cell) never reaches it.
func TestWorkerEnvGivesTheLimits(t *testing.T) {
	env := workerEnv([]string{"KEEP=1", workerLimitsVar + `={"MAX_FRAME":1}`}, "")
	var given []string
	for _, kv := range env {
		if strings.HasPrefix(kv, workerLimitsVar+"=") {
			given = append(given, kv)
		}
	}
	if len(given) != 1 || given[0] != WorkerLimitsEnv() || env[0] != "KEEP=1" {
		t.Fatalf("environment %q", env)
	}
	var limits map[string]json.Number
	if err := json.Unmarshal([]byte(strings.TrimPrefix(given[0], workerLimitsVar+"=")), &limits); err != nil {
		t.Fatal(err)
	}
	// Sizes as decimal ints, durations as seconds, as the worker reads them.
	want := map[string]string{"MAX_FRAME": strconv.Itoa(MaxFrameBytes), "STREAM_BUDGET": strconv.Itoa(StreamLimit),
		"SPOOL_HEAD": strconv.Itoa(artifacts.MaxArtifactBytes / 2), "MCP_TIMEOUT_MIN": "0.01", "MCP_TIMEOUT_MAX": "3600"}
	for name, value := range want {
		if got := limits[name].String(); got != value {
			t.Errorf("%s = %s, want %s", name, got, value)
		}
	}
	if len(limits) != len(workerLimits()) {
		t.Errorf("%d limits sent, %d declared", len(limits), len(workerLimits()))
	}
}
