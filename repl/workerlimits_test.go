package repl

import (
	"sort"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/repl/worker"
)

// A twin is what one limit of the worker's table is on the Go side.
type twin struct {
	rule  twinRule
	value float64 // for equal and atMost
}

type twinRule int

const (
	workerOnlyRule twinRule = iota // no twin: nothing on the Go side depends on the value
	equalRule                      // the worker's value is the Go value
	atMostRule                     // the worker's value does not exceed the Go value
)

func equals[T ~int | ~int64](v T) twin { return twin{rule: equalRule, value: float64(v)} }
func atMost[T ~int | ~int64](v T) twin { return twin{rule: atMostRule, value: float64(v)} }

// seconds is a duration's twin: the worker counts it in seconds.
func seconds(d time.Duration) twin { return twin{rule: equalRule, value: d.Seconds()} }

var workerOnly = twin{rule: workerOnlyRule}

// workerLimitTwins classifies every limit of repl/worker/replworker/limits.py. A limit
// added there fails TestWorkerLimitsMatchTheirTwins until it is classified here.
var workerLimitTwins = map[string]twin{
	"MAX_FRAME":               equals(MaxFrameBytes),
	"STREAM_BUDGET":           equals(StreamLimit),
	"STREAM_HEAD":             equals(streamHead),
	"STREAM_MARKER":           equals(streamMarker),
	"BACKGROUND_BUDGET":       equals(backgroundLimit),
	"BACKGROUND_HEAD":         equals(backgroundHead),
	"BACKGROUND_THREAD_NAMES": equals(maxBackgroundThreads),
	"THREAD_NAME_BYTES":       equals(maxThreadNameBytes),
	"PREVIEW_BYTES":           equals(PreviewLimit),
	"SOURCE_RUNS":             equals(HistoryRuns),
	"SOURCE_FILE_BYTES":       equals(MaxCodeBytes), // a saved file has the code limit (docs/contract.md §6.4)
	"RPC_PENDING":             equals(maxOutstandingRPCs),
	"ARTIFACT_ERROR_BYTES":    equals(maxArtifactErrorBytes),
	"IMAGE_COUNT":             equals(maxImages),
	"IMAGE_BYTES":             equals(maxImageBytes),
	"IMAGE_CHUNK":             equals(imageChunkBytes),
	"IMAGE_ARTIFACTS":         equals(maxImageArtifacts),
	"HTML_BYTES":              equals(maxHTMLBytes),
	"DISPLAY_COUNT":           equals(maxDisplays),
	"DISPLAY_BYTES":           equals(maxDisplayBytes),

	"ARTIFACT_CHUNK":      equals(artifacts.ChunkBytes),
	"ARTIFACT_MAX_BYTES":  equals(artifacts.MaxArtifactBytes),
	"ARTIFACT_READ_MAX":   equals(artifacts.MaxReadLength),
	"ARTIFACT_JSON_DEPTH": atMost(artifacts.MaxJSONDepth), // what the worker sends, the store must take

	"MCP_TIMEOUT_MIN":       seconds(broker.MinTimeout),
	"MCP_TIMEOUT_MAX":       seconds(broker.MaxTimeout),
	"MCP_CALL_TIMEOUT":      seconds(broker.DefaultCallTimeout),
	"MCP_CATALOGUE_TIMEOUT": seconds(broker.DefaultListTimeout),

	"INBOX_SLOTS": workerOnly, "READ_CHUNK": workerOnly, "FLUSH_INTERVAL": workerOnly, "PUMP_LINGER": workerOnly,
	"PREVIEW_NODES": workerOnly, "PREVIEW_DEPTH": workerOnly, "PREVIEW_ITEMS": workerOnly,
	"PREVIEW_STR_CHARS": workerOnly, "PREVIEW_INT_BITS": workerOnly,
	"PREVIEW_NESTING": workerOnly, "PREVIEW_SORT_ITEMS": workerOnly, "FRAME_ROWS": workerOnly,
	"FRAME_ROWS_SHORT": workerOnly, "FRAME_COLUMNS": workerOnly, "FRAME_COLWIDTH": workerOnly,
	"FRAME_ROWS_MAX": workerOnly, "FRAME_COLUMNS_MAX": workerOnly,
	"INDEX_ITEMS": workerOnly, "ARRAY_THRESHOLD": workerOnly, "ARRAY_EDGE_ITEMS": workerOnly,
	"ARRAY_SHOWN_ITEMS": workerOnly, "ARRAY_ITEM_CHARS": workerOnly, "TRACEBACK_CHAIN": workerOnly,
	"TRACEBACK_FRAMES": workerOnly, "TRACEBACK_SOURCE_CHARS": workerOnly, "TRACEBACK_MESSAGE_CHARS": workerOnly,
	"TRACEBACK_CAUSE_CHARS": workerOnly, "TRACEBACK_CHARS": workerOnly, "TYPE_NAME_CHARS": workerOnly,
	"SOURCE_BYTES": workerOnly, "ARGV_ITEMS": workerOnly, "ARGV_BYTES": workerOnly,
	"EXIT_STATUS_BITS": workerOnly, "EXIT_MESSAGE_CHARS": workerOnly,
	"INVENTORY_SCANNED": workerOnly, "INVENTORY_LISTED": workerOnly, "INVENTORY_BYTES": workerOnly,
	"INVENTORY_ENVELOPE": workerOnly, "NAME_CHARS": workerOnly, "INVENTORY_TYPE_CHARS": workerOnly,
	"CHECKPOINT_BYTES": workerOnly, "CHECKPOINT_RESERVE": workerOnly, "CHECKPOINT_VARIABLES": workerOnly,
	"SHELL_CAPTURE": workerOnly, "SHELL_PROCESSES": workerOnly, "SHELL_TIMEOUT": workerOnly,
	"SHELL_EXIT_CHECK": workerOnly, "SHELL_DRAIN": workerOnly, "REAP_INTERVAL": workerOnly,
	"CHILD_EXIT_WAIT": workerOnly, "TASK_CANCEL_GRACE": workerOnly, "BACKGROUND_EXIT_GRACE": workerOnly,
	"INTERRUPT_RETRY": workerOnly, "STRAY_SIGINT_WAIT": workerOnly, "EXECUTOR_PENDING_JOBS": workerOnly, "MCP_REPLY_SLACK": workerOnly,
	"MCP_OP_WAIT": workerOnly, "TOOL_ERROR_CHARS": workerOnly, "ARTIFACT_JSON_NODES": workerOnly,
	"ARTIFACT_STRING_BUDGET": workerOnly, "ARTIFACT_TEXT_SLICE": workerOnly, "ARTIFACT_ABORT_WAIT": workerOnly,
	"LINE_CHARS": workerOnly, "LIVE_PENDING_CHARS": workerOnly, "SPOOL_BUFFER": workerOnly,
	"SHELL_ERROR_TAIL": workerOnly, "RPC_QUEUED": workerOnly,
	"SEARCH_LIMIT_MAX": workerOnly, "SEARCH_LINE_CHARS": workerOnly, "SEARCH_SENTENCE_CHARS": workerOnly,
	"DOC_WIDTH": workerOnly, "ENUM_LITERALS": workerOnly, "TOOL_DOC_PARAM_CHARS": workerOnly,
	// The spool keeps a cut stream's complete output; its head past the artifact bound
	// must leave room for a tail in the same artifact.
	"SPOOL_HEAD": atMost(artifacts.MaxArtifactBytes / 2),
}

// The worker enforces some limits the Go side enforces or relies on too (the frame size,
// the stream and preview budgets, the artifact sizes): they must not drift apart.
func TestWorkerLimitsMatchTheirTwins(t *testing.T) {
	limits, err := worker.Limits()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range limits {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		l := limits[name]
		tw, ok := workerLimitTwins[name]
		switch {
		case !ok:
			t.Errorf("%s (%v, %s) is not classified in workerLimitTwins: name its Go twin, or mark it workerOnly", name, l.Value, l.Comment)
		case tw.rule == equalRule && l.Value != tw.value:
			t.Errorf("%s is %v in the worker, its Go twin %v", name, l.Value, tw.value)
		case tw.rule == atMostRule && l.Value > tw.value:
			t.Errorf("%s is %v in the worker, more than the Go side's %v", name, l.Value, tw.value)
		}
	}
	for name := range workerLimitTwins {
		if _, ok := limits[name]; !ok {
			t.Errorf("workerLimitTwins names %s, which limits.py does not have", name)
		}
	}
}
