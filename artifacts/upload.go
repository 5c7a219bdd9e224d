package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"sync"

	"github.com/iota-uz/repl-mcp/internal/ids"
)

// Upload is the answer to [Store.Begin] (the artifact.begin RPC op).
type Upload struct {
	UploadID   string `json:"upload_id"`
	ChunkBytes int    `json:"chunk_bytes"`
	MaxBytes   int64  `json:"max_bytes"`
}

// upload is an unfinished artifact being received in chunks. mu serialises the
// writes to f and its release; the store lock is never taken while mu is held
// except by Commit's publish, and never the other way round.
type upload struct {
	id     string
	owner  *ownerState
	run    string
	format Format

	mu   sync.Mutex
	f    *os.File
	size int64
	h    hash.Hash
	done bool // f closed or handed to a commit
}

// discard closes the upload's file unless a commit took it.
func (u *upload) discard() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.done {
		u.done = true
		u.f.Close()
	}
}

// Begin starts an upload for run of owner, which must be active. At most
// [MaxUploads] uploads may be unfinished in the whole store.
func (s *Store) Begin(owner, run string, format Format) (Upload, error) {
	if !format.Valid() {
		return Upload{}, ErrFormat
	}
	o, err := s.activeRun(owner, run)
	if err != nil {
		return Upload{}, err
	}
	s.mu.Lock()
	if len(s.uploads)+s.beginning >= MaxUploads {
		s.mu.Unlock()
		return Upload{}, ErrTooManyUploads
	}
	s.beginning++
	s.mu.Unlock()

	f, ferr := s.tempFile()

	s.mu.Lock()
	s.beginning--
	if ferr != nil {
		s.mu.Unlock()
		return Upload{}, ferr
	}
	err = s.activeRunLocked(o, run)
	if err != nil {
		s.mu.Unlock()
		f.Close()
		return Upload{}, err
	}
	u := &upload{id: ids.UUID(), owner: o, run: run, format: format, f: f, h: sha256.New()}
	s.uploads[u.id] = u
	s.mu.Unlock()
	return Upload{UploadID: u.id, ChunkBytes: ChunkBytes, MaxBytes: s.lim.artifact}, nil
}

// activeRun returns owner after checking that run is active.
func (s *Store) activeRun(owner, run string) (*ownerState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	o := s.owners[owner]
	if o == nil {
		return nil, ErrNoActiveRun
	}
	return o, s.activeRunLocked(o, run)
}

func (s *Store) activeRunLocked(o *ownerState, run string) error {
	if s.closed {
		return ErrClosed
	}
	if s.owners[o.name] != o {
		return ErrNoActiveRun
	}
	if _, ok := o.runs[run]; !ok {
		return ErrNoActiveRun
	}
	return nil
}

// uploadOf returns owner's unfinished upload id; with take it also removes it.
func (s *Store) uploadOf(owner, id string, take bool) (*upload, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	u := s.uploads[id]
	if u == nil || u.owner.name != owner {
		return nil, ErrUnknownUpload
	}
	if take {
		delete(s.uploads, id)
	}
	return u, nil
}

// Append adds data, at most [ChunkBytes], at offset, which must equal the bytes
// received so far, and returns the new size. A refused append changes nothing.
func (s *Store) Append(owner, uploadID string, offset int64, data []byte) (int64, error) {
	u, err := s.uploadOf(owner, uploadID, false)
	if err != nil {
		return 0, err
	}
	if len(data) > ChunkBytes {
		return 0, ErrChunkTooLarge
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return 0, ErrUnknownUpload
	}
	if offset != u.size {
		return 0, ErrOffsetMismatch
	}
	if u.size+int64(len(data)) > s.lim.artifact {
		return 0, ErrTooLarge
	}
	if _, err := u.f.WriteAt(data, u.size); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrStorage, sysCause(err))
	}
	u.h.Write(data)
	u.size += int64(len(data))
	return u.size, nil
}

// Commit checks the upload like [Store.Create] checks a file and publishes it,
// evicting oldest-first as needed. The upload is gone afterwards whether or not the
// commit succeeded; a failed commit evicts nothing.
func (s *Store) Commit(ctx context.Context, owner, uploadID string) (Ref, error) {
	u, err := s.uploadOf(owner, uploadID, true)
	if err != nil {
		return Ref{}, err
	}
	done, err := s.tryIO()
	if err != nil {
		u.discard()
		return Ref{}, err
	}
	defer done()

	u.mu.Lock()
	if u.done {
		u.mu.Unlock()
		return Ref{}, ErrUnknownUpload
	}
	u.done = true // the file is ours now
	f, size, sum := u.f, u.size, hex.EncodeToString(u.h.Sum(nil))
	u.mu.Unlock()

	err = checkFile(ctx, f, size, u.format)
	if err == nil {
		var ref Ref
		if ref, err = s.publish(u.owner, u.run, f, size, u.format, sum); err == nil {
			return ref, nil
		}
	}
	f.Close()
	return Ref{}, err
}

// Abort discards owner's unfinished upload.
func (s *Store) Abort(owner, uploadID string) error {
	u, err := s.uploadOf(owner, uploadID, true)
	if err != nil {
		return err
	}
	u.discard()
	return nil
}
