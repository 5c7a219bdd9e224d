package artifacts

import "os"

// NewWithLimits is New with lower bounds, so that eviction can be tested with small
// files: entries artifacts and total bytes in the store, artifact bytes each.
func NewWithLimits(cfg Config, entries int, total, artifact int64) *Store {
	return newStore(cfg, limits{entries: entries, total: total, artifact: artifact})
}

// HoldIOSlots takes n I/O job slots, as n running jobs would; release gives them
// back. It fails if fewer than n are free.
func (s *Store) HoldIOSlots(n int) (release func(), err error) {
	var held []func()
	release = func() {
		for _, r := range held {
			r()
		}
	}
	for range n {
		r, err := s.tryIO()
		if err != nil {
			release()
			return nil, err
		}
		held = append(held, r)
	}
	return release, nil
}

// EntryFile returns the open content file of artifact id, to tamper with.
func (s *Store) EntryFile(id string) *os.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[id]; e != nil {
		return e.f
	}
	return nil
}

// SetHook makes the store call fn at named points of its jobs: "save-copied" once
// Save's temp file is complete and before the destination is touched, "publish" just
// before a create or commit publishes. Set it before the store is used.
func (s *Store) SetHook(fn func(stage string)) { s.hook = fn }
