package notebook

// This file owns the live notebooks of --notebook-dir: one goroutine (liveLoop)
// writes them, off every call's reply path, coalesced and bounded in time. A write
// appends what is new: the bytes of the cells the file already holds are copied by
// the kernel from the file itself (copy_file_range, a reflink where the filesystem
// has them), never rendered or read into the server again; the new cells and the
// metadata follow. The file is still replaced whole (a temp file beside it, fsynced,
// renamed), so a reader sees the old notebook or the new one, never a part. It is
// rendered whole only when its first cell must change (the helpers the cells use,
// the interpreter), when a person changed the file, or when the record has dropped a
// tenth of its bounds of the cells the file still shows.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The live notebook's timing: a session's file is written at once when it has been
// quiet, then no sooner than liveGap after the previous write ended, nor sooner than
// liveShare times that write's duration (at most a quarter of the time goes to it);
// after a failed write, no sooner than liveRetry (doubling up to liveRetryMax).
const (
	liveGap      = 100 * time.Millisecond
	liveShare    = 3
	liveRetry    = time.Second
	liveRetryMax = 30 * time.Second
)

// liveTemp is what a live notebook's temp file is named after the notebook's name:
// .NAME.ipynb.tmp-RANDOM, in the live directory. A writer holds an flock on it; a
// starting keeper removes those nobody holds (left by a server that was killed).
const liveTemp = ".tmp-"

// liveFile is a session's live notebook as this keeper last wrote it; only liveLoop
// touches it.
type liveFile struct {
	path string
	// What the file holds, valid while written is true.
	written  bool
	stat     os.FileInfo // the file as it was left: the same inode, size and time, or a person changed it
	about    string      // its first cell's text
	used     []string    // the repl-mcp-only helpers its cells use
	dropped  int         // the record's cells before its first
	last     int         // the count of its last record cell (dropped when none)
	cellsEnd int64       // where its last cell ends: the tail starts there
	sizes    []int64     // the rendered bytes of each record cell it holds, oldest first
	render   renderer    // the rendering state after its last cell (w unset)
	// Scheduling.
	dirty    bool
	due      time.Time // not before
	failures int       // writes failed in a row
}

// liveRequest asks liveLoop to write the session's file now (id "" for all) and
// close done once it has.
type liveRequest struct {
	id   string
	done chan struct{}
}

// liveChanged tells liveLoop that s has new cells; called by writeRecords.
func (k *Keeper) liveChanged(s *kept) {
	k.liveMu.Lock()
	k.liveDirty[s.info.id] = s
	k.liveMu.Unlock()
	select {
	case k.liveWake <- struct{}{}:
	default:
	}
}

// liveFlush returns once every cell recorded so far is in the live file of session
// id ("" for every session), or its write failed.
func (k *Keeper) liveFlush(id string) {
	if k.live == "" {
		return
	}
	done := make(chan struct{})
	select {
	case k.liveReqs <- liveRequest{id: id, done: done}:
		<-done
	case <-k.liveDone:
	}
}

// liveLoop writes the live notebooks until liveStop closes, then writes each one
// that still waits for cells and returns.
func (k *Keeper) liveLoop() {
	defer close(k.liveDone)
	files := map[string]*liveFile{}
	sessions := map[string]*kept{}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	take := func() {
		k.liveMu.Lock()
		for id, s := range k.liveDirty {
			sessions[id] = s
			f := files[id]
			if f == nil {
				f = &liveFile{path: filepath.Join(k.live, LiveName(s.info.name, id))}
				files[id] = f
			}
			f.dirty = true
		}
		clear(k.liveDirty)
		k.liveMu.Unlock()
	}
	write := func(id string, force bool) {
		f, s := files[id], sessions[id]
		if f == nil || !f.dirty || (!force && k.now().Before(f.due)) {
			return
		}
		if k.liveHook != nil {
			k.liveHook()
		}
		start := k.now()
		err := k.writeLive(s, f)
		end := k.now()
		if err != nil {
			f.failures++
			f.due = end.Add(min(liveRetry<<min(f.failures-1, 5), liveRetryMax))
			k.log.Warn("notebook: cannot write the live notebook", "session", id, "dir", k.live, "err", err)
			return
		}
		f.dirty, f.failures = false, 0
		f.due = end.Add(max(liveGap, liveShare*end.Sub(start)))
	}
	for {
		var req *liveRequest
		select {
		case <-k.liveStop:
			take()
			for id := range files {
				write(id, true)
			}
			return
		case r := <-k.liveReqs:
			req = &r
		case <-k.liveWake:
		case <-timer.C:
		}
		take()
		for id := range files {
			force := req != nil && (req.id == "" || req.id == id)
			write(id, force)
			if force && req.id != "" {
				// The session's last cells are in: it is closing, and nothing more comes.
				delete(files, id)
				delete(sessions, id)
			}
		}
		if req != nil {
			close(req.done)
		}
		next := time.Duration(-1)
		for _, f := range files {
			if f.dirty {
				wait := max(f.due.Sub(k.now()), 0)
				if next < 0 || wait < next {
					next = wait
				}
			}
		}
		if next >= 0 {
			timer.Reset(next)
		}
	}
}

// writeLive brings f up to s's record: an append when it can, else a whole rendering.
// The session's lock is held only to take a snapshot of the record.
func (k *Keeper) writeLive(s *kept, f *liveFile) error {
	s.mu.Lock()
	info, rec := s.info, s.record
	if rec == nil {
		s.mu.Unlock()
		return nil
	}
	firstKept := rec.next
	if len(rec.kept) > 0 {
		firstKept = rec.kept[0].count
	}
	appending := f.written && k.appendable(f, firstKept)
	var sn *snapshot
	if appending {
		sn = rec.snapshot(f.last + 1)
	} else {
		sn = rec.snapshot(0)
	}
	s.mu.Unlock()
	defer func() { sn.close() }()
	if appending {
		used := slices.Clone(f.used)
		for _, e := range sn.entries {
			used = union(used, e.helpers)
		}
		if aboutText(info, used, f.dropped) != f.about {
			appending = false // its first cell must change: render it whole
			sn.close()
			s.mu.Lock()
			sn = &snapshot{}
			if s.record != nil {
				sn = s.record.snapshot(0)
			}
			s.mu.Unlock()
		}
	}
	if appending {
		return k.appendLive(info, f, sn)
	}
	return k.renderLive(info, f, sn)
}

// appendable says whether f's file can take the record's new cells at its end: it is
// as this keeper left it, the record still has the cells that follow its last, and
// the cells it shows that the record no longer keeps are within a tenth of the bounds.
func (k *Keeper) appendable(f *liveFile, firstKept int) bool {
	st, err := os.Lstat(f.path)
	if err != nil || !os.SameFile(st, f.stat) || st.Size() != f.stat.Size() || !st.ModTime().Equal(f.stat.ModTime()) {
		return false
	}
	if firstKept > f.last+1 {
		return false // cells that never reached the file are gone from the record
	}
	stale := min(firstKept-(f.dropped+1), len(f.sizes))
	var staleBytes int64
	for _, n := range f.sizes[:max(stale, 0)] {
		staleBytes += n
	}
	return stale <= max(k.limits.cells/10, 1) && staleBytes <= k.limits.bytes/10
}

// renderLive writes f's file whole from sn, a snapshot of the whole record.
func (k *Keeper) renderLive(info session, f *liveFile, sn *snapshot) error {
	next := liveFile{path: f.path, used: sn.used, dropped: sn.dropped, about: aboutText(info, sn.used, sn.dropped)}
	err := replaceLive(f.path, func(tmp *os.File) error {
		r := renderer{w: newBufWriter(tmp)}
		if err := r.head(info, sn.used, sn.dropped); err != nil {
			return err
		}
		next.last = sn.dropped
		if err := appendCells(&r, &next, sn); err != nil {
			return err
		}
		next.cellsEnd = r.n
		if err := r.tail(info, sn.dropped, k.now()); err != nil {
			return err
		}
		next.render, next.render.w = r, nil
		return r.w.Flush()
	}, &next)
	if err != nil {
		f.written = false
		return err
	}
	next.dirty, next.due, next.failures = f.dirty, f.due, f.failures
	*f = next
	return nil
}

// appendLive writes f's file anew from its own bytes up to its last cell, then the
// cells of sn (those after it) and the tail.
func (k *Keeper) appendLive(info session, f *liveFile, sn *snapshot) error {
	next := *f
	next.sizes = slices.Clone(f.sizes)
	for _, e := range sn.entries {
		next.used = union(next.used, e.helpers)
	}
	err := replaceLive(f.path, func(tmp *os.File) error {
		old, err := os.Open(f.path)
		if err != nil {
			return err
		}
		defer old.Close()
		// *os.File to *os.File: copy_file_range, in the kernel.
		if n, err := io.CopyN(tmp, old, f.cellsEnd); err != nil {
			return fmt.Errorf("copying the notebook's first %d bytes (%d copied): %w", f.cellsEnd, n, err)
		}
		r := f.render
		r.w, r.n = newBufWriter(tmp), f.cellsEnd
		if err := appendCells(&r, &next, sn); err != nil {
			return err
		}
		next.cellsEnd = r.n
		if err := r.tail(info, f.dropped, k.now()); err != nil {
			return err
		}
		next.render, next.render.w = r, nil
		return r.w.Flush()
	}, &next)
	if err != nil {
		return err
	}
	*f = next
	return nil
}

// appendCells renders the cells of sn after f.last, keeping their sizes in f.
func appendCells(r *renderer, f *liveFile, sn *snapshot) error {
	for i, e := range sn.entries {
		if e.count <= f.last {
			continue
		}
		before := r.n
		if err := r.next(sn.cell(i)); err != nil {
			return err
		}
		f.sizes = append(f.sizes, r.n-before)
		f.last = e.count
	}
	return nil
}

// replaceLive replaces path with what fill writes to a temp file beside it, held
// under an flock while it is written, fsynced, made 0600 and renamed; the directory
// is fsynced. f.stat is set to the new file's. On any error path is untouched and
// the temp file is gone.
func replaceLive(path string, fill func(tmp *os.File) error, f *liveFile) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+liveTemp+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
		tmp.Close()
	}()
	if err := syscall.Flock(int(tmp.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	if err := fill(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	st, err := tmp.Stat()
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	f.stat, f.written = st, true
	d, err := os.Open(dir)
	if err != nil {
		return nil // in place; only its durability is in doubt
	}
	defer d.Close()
	d.Sync()
	return nil
}

// sweepLiveTemps removes, from the live directory, the temp files of live notebooks
// that no writer holds: a server killed while it wrote one left it (up to tens of
// MB). One younger than a second is left alone: its writer may not hold it yet.
func sweepLiveTemps(dir string, now time.Time) (removed []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, ".") || !strings.Contains(name, ".ipynb"+liveTemp) {
			continue
		}
		path := filepath.Join(dir, name)
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		f := os.NewFile(uintptr(fd), path)
		held := true
		if info, err := f.Stat(); err == nil {
			st, ok := info.Sys().(*syscall.Stat_t)
			held = !ok || int(st.Uid) != os.Geteuid() || now.Sub(info.ModTime()) < time.Second ||
				syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) != nil
		}
		if !held && os.Remove(path) == nil {
			removed = append(removed, name)
		}
		f.Close()
	}
	return removed
}

// union is a with the names of b it lacks, in replOnlyHelpers' order.
func union(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	var out []string
	for _, name := range replOnlyHelpers {
		if slices.Contains(a, name) || slices.Contains(b, name) {
			out = append(out, name)
		}
	}
	return out
}

// newBufWriter buffers a live notebook's writes to its temp file.
func newBufWriter(f *os.File) *bufio.Writer { return bufio.NewWriterSize(f, 64<<10) }
