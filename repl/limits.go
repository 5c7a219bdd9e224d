package repl

import "time"

// The limits of the contract (reference section 13.1). They are constants because
// clients rely on them; health reports them.
const (
	MaxCodeBytes      = 262144
	MaxFrameBytes     = 1 << 20
	MinTimeout        = 10 * time.Millisecond
	MaxTimeout        = 3600 * time.Second
	DefaultTimeout    = 120 * time.Second
	HistoryRuns       = 64
	StreamLimit       = 50000 // final stdout/stderr bytes
	PreviewLimit      = 20000 // return_value and error bytes
	LiveLimit         = 65536 // live stream and native output bytes per run
	DefaultMaxRSSMiB  = 2048
	handshakeTimeout  = 10 * time.Second
	interruptGrace    = 2 * time.Second
	busyWait          = 3500 * time.Millisecond
	cancelPropagation = 150 * time.Millisecond
	frameWriteTimeout = 5 * time.Second
	barrierWait       = time.Second
	workerStopGrace   = 3 * time.Second
	abandonWait       = 5 * time.Second
	rssInterval       = 250 * time.Millisecond
)
