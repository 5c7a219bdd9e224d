package artifacts

import (
	"errors"

	"github.com/iota-uz/repl-mcp/internal/savefile"
)

// Errors a caller can branch on with errors.Is. The messages are the contract's
// (section 9); where an error carries detail it follows the sentinel's text after a
// colon and names a system error, never file contents.
var (
	// ErrUnknown is the one answer for an id that is unknown, deleted, evicted or
	// owned by another session, so that a foreign id is indistinguishable from a
	// missing one.
	ErrUnknown = errors.New("Artifact unknown, expired, evicted or belongs to another session")

	ErrTooLarge       = errors.New("Artifact exceeds 16 MiB")
	ErrIOBusy         = errors.New("Artifact I/O capacity exhausted; retry after active jobs complete")
	ErrTooManyUploads = errors.New("At most four unfinished artifact uploads are allowed")
	ErrClosed         = errors.New("Artifact store is closed")

	// Create and commit.
	ErrCreateArgs  = errors.New("Artifact needs absolute path and format json/text/binary")
	ErrNotRegular  = errors.New("Artifact input must be a regular file")
	ErrSourceOpen  = errors.New("Artifact input cannot be opened")
	ErrSourceRead  = errors.New("Artifact input cannot be read")
	ErrNotUTF8     = errors.New("Text/JSON artifact must be UTF-8")
	ErrInvalidJSON = errors.New("Artifact JSON invalid or exceeds parser nesting limit")
	ErrOwnerClosed = errors.New("Artifact owner session closed before import completed")
	ErrStorage     = errors.New("Artifact storage failed")

	// Read.
	ErrRange     = errors.New("Artifact range must fit file and length must be <= 65536 bytes")
	ErrRangeUTF8 = errors.New("Range is not complete UTF-8; adjust boundaries or request hex/base64")
	ErrEncoding  = errors.New("Artifact encoding must be text, base64 or hex")

	// Save and forward.
	ErrSHA256     = errors.New("Artifact content failed SHA256 verification")
	ErrSavePath   = errors.New("Artifact save needs an absolute destination path")
	ErrSaveDir    = errors.New("Artifact destination is a directory")
	ErrSaveParent = errors.New("Artifact destination directory does not exist or is not a directory")
	ErrSaveName   = errors.New("Artifact destination cannot be a file name")
	ErrSaveExists = errors.New("Artifact destination exists or cannot be linked; overwrite requires explicit true")
	ErrSaveWrite  = errors.New("Artifact destination cannot be written")
	// ErrSaveNotFile: overwrite replaces a regular file only.
	ErrSaveNotFile = errors.New("Artifact destination is not a regular file; overwrite replaces only a regular file")

	ErrForwardTooLarge = errors.New("Artifact forwarding limit is 512 KiB; save the file or explicitly create a smaller artifact")
	ErrForwardJSON     = errors.New("Artifact is not valid bounded JSON")
	ErrForwardText     = errors.New("Artifact is not UTF-8 text")
	ErrForwardFormat   = errors.New("Forward format must be json, text or explicit base64")

	// Owners, runs and uploads.
	ErrUnknownOwner   = errors.New("Artifact owner session is unknown or closed")
	ErrTooManyOwners  = errors.New("Artifact owner limit reached (256)")
	ErrTooManyRuns    = errors.New("Artifact active run limit reached (256)")
	ErrFormat         = errors.New("Artifact format must be json, text or binary")
	ErrNoActiveRun    = errors.New("Artifact upload needs an active originating run")
	ErrRunFinished    = errors.New("Artifact originating run is finished or cancelled")
	ErrUnknownUpload  = errors.New("Artifact upload unknown, committed or aborted")
	ErrOffsetMismatch = errors.New("Artifact upload offset mismatch; do not replay an append")
	ErrChunkTooLarge  = errors.New("Artifact upload chunk exceeds 262144 bytes")
)

// sysCause strips the path from an *os.PathError or *os.LinkError so that a message
// names the system error only (no temp names, no user paths echoed back).
func sysCause(err error) error { return savefile.SysCause(err) }
