package repl

import (
	"context"
	"errors"
	"sync"

	"github.com/iota-uz/repl-mcp/internal/artifactref"
)

// A text-form client reads a result as one text within a budget (docs/contract.md
// §3.4). When that text cuts a part no artifact holds, the complete text is kept as
// an artifact of the session, once per run: the result carries what was kept, and
// so do the copies of it python_run reads (Result.From), so that every read of the
// run names the same artifact. The presentation decides what the text is; the
// session keeps it, through its Services.

// keptText is what was kept of one result's complete text: shared by the result and
// its copies, and filled in by the first KeepText.
type keptText struct {
	mu  sync.Mutex
	ref *artifactref.Ref
}

// errNoTextStore: a session without Services has no store to keep a text in.
var errNoTextStore = errors.New(msgNoTextStore)

// KeepText keeps text, the complete text of res as the text form shows it, as a
// text artifact of the session and returns its reference. For a result the session
// made (or a copy of one), a later call returns the artifact kept the first time
// while the store still holds it. res may be nil: the text, another tool's, is then
// kept afresh.
func (s *Session) KeepText(ctx context.Context, res *Result, text string) (artifactref.Ref, error) {
	svc := s.cfg.Services
	if svc == nil {
		return artifactref.Ref{}, errNoTextStore
	}
	if res == nil || res.kept == nil {
		return svc.KeepText(ctx, s.id, text, nil)
	}
	k := res.kept
	k.mu.Lock()
	defer k.mu.Unlock()
	ref, err := svc.KeepText(ctx, s.id, text, k.ref)
	if err == nil {
		k.ref = &ref
	}
	return ref, err
}
