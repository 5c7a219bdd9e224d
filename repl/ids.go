package repl

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/iota-uz/repl-mcp/internal/ids"
)

// newUUID returns a random (version 4) UUID.
func newUUID() string { return ids.UUID() }

// newToken returns a short random hex token, for barriers.
func newToken() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
