package repl

import "time"

// The limits of the supervisor, in one table (docs/contract.md §13.1). The exported
// ones are the contract's: clients rely on them and health reports them. Limits the
// worker enforces on its side have twins in the worker's limits table
// (worker/replworker/limits.py), and a test fails when the two differ.
const (
	// Cells and results.
	MaxCodeBytes   = 262144
	MaxFrameBytes  = 1 << 20
	MinTimeout     = 10 * time.Millisecond
	MaxTimeout     = 3600 * time.Second
	DefaultTimeout = 120 * time.Second
	HistoryRuns    = 64
	StreamLimit    = 50000 // final stdout/stderr bytes
	PreviewLimit   = 20000 // return_value and error bytes
	LiveLimit      = 65536 // live stream and native output bytes per run
	// A stream past its limit keeps its first streamHead bytes, a marker of at most
	// streamMarker bytes and its last bytes (docs/contract.md §5.5).
	streamHead   = 20000
	streamMarker = 256
	// What threads of earlier cells printed, per stream, and its head when cut;
	// background_threads lists at most maxBackgroundThreads names (then "+N more"),
	// each at most maxThreadNameBytes (docs/contract.md §5.10).
	backgroundLimit = 16384
	backgroundHead  = 4096
	// backgroundFlushBytes bounds what a result reads at once out of the native pipes
	// of earlier cells' processes before it is built (native.go, takeBackground).
	backgroundFlushBytes = 1 << 20
	maxBackgroundThreads = 64
	maxThreadNameBytes   = 200
	// maxArtifactRefBytes bounds a result's artifact reference (a few small keys);
	// maxArtifactErrorBytes its artifact_error.
	maxArtifactRefBytes   = 1024
	maxArtifactErrorBytes = 1000

	// The worker's life.
	// MinDefaultMaxRSSMiB: the default worker RSS budget is half the machine's
	// memory (DefaultMaxRSSMiB), never less than this.
	MinDefaultMaxRSSMiB = 2048
	handshakeTimeout    = 10 * time.Second
	interruptGrace      = 2 * time.Second
	busyWait            = 3500 * time.Millisecond
	busyCodeChars       = 80 // of the active run\'s first code line in the busy refusal
	cancelPropagation   = 150 * time.Millisecond
	frameWriteTimeout   = 5 * time.Second
	barrierWait         = time.Second
	workerStopGrace     = 3 * time.Second
	abandonWait         = 5 * time.Second
	rssInterval         = 250 * time.Millisecond
	// An interrupt's scope (docs/contract.md §5.6): how long an interrupted run's
	// result waits for the processes it signalled to end, how often it looks, the
	// processes of a session it follows and names, and the children whose run it keeps.
	scopeWait         = 500 * time.Millisecond
	scopePollInterval = 10 * time.Millisecond
	maxScopeProcs     = 4096
	maxScopeNamed     = 8
	maxOrigins        = 4096

	// Cell code's rpcs in flight per run.
	maxOutstandingRPCs = 64

	// Sessions (docs/contract.md §6.6).
	MaxSessions    = 32
	maxOpening     = 4
	maxNameBytes   = 128
	prepareTimeout = 10 * time.Second
	closeGrace     = abandonWait

	// Interpreter probes (docs/contract.md §6.2).
	probeTimeout     = 10 * time.Second
	probeOutputLimit = 4096

	// Namespace inventories: time, and the size of their JSON.
	inventoryTimeout = 5 * time.Second
	inventoryLimit   = 65536
)

// The images a run shows beside its result (docs/contract.md §4.1, §7.9): the worker's
// bounds, checked again on this side, and what a session's history keeps of their bytes.
const (
	maxImages         = 8
	maxImageBytes     = 524288 // a run's inline images together: 699,052 bytes of base64
	imageChunkBytes   = 262144 // raw bytes of one image frame
	maxImageArtifacts = 8      // references in image_artifacts
	historyImageBytes = 2 << 20
)

// maxHTMLBytes bounds the text/html of a trailing value (pandas' own rendering of a
// DataFrame or Styler), which only the session's notebook shows.
const maxHTMLBytes = 131072

// maxDisplays and maxDisplayBytes bound what a run keeps of display() calls of
// objects that are no image (their text, HTML and repr together), for the notebook.
const (
	maxDisplays     = 16
	maxDisplayBytes = 196608
)

// Snapshots and restores (docs/contract.md §6.7, §13.1).
const (
	// DefaultSnapshotMaxMiB bounds a session's snapshot, and a project's snapshots
	// together, unless --snapshot-max-mib says otherwise.
	DefaultSnapshotMaxMiB = 2048
	// snapshotDelay is how long a session is idle after a run before a pass.
	snapshotDelay = 2 * time.Second
	// finalSnapshotWait bounds the last pass of an idle worker at shutdown.
	finalSnapshotWait = 1500 * time.Millisecond
	// restoreTimeout bounds the restore before a released worker's next run.
	restoreTimeout = 10 * time.Minute
	// listingTTL is how long a listing of a project's snapshots is reused.
	listingTTL = 2 * time.Second
)
