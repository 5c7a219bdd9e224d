package notebook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// The bounds of one session's record (docs/contract.md §3, python_session_export).
const (
	// MaxCells is how many cells a session's record keeps; older ones are dropped.
	MaxCells = 1000
	// MaxBytes is how many bytes of cell files a session's record keeps; the oldest
	// cells are dropped first. One cell is at most about 1.5 MB (its code, its
	// streams, preview, HTML and images are bounded already), so the newest always
	// fits.
	MaxBytes = 64 << 20
)

// cell is one recorded run, as its file holds it.
type cell struct {
	Count      int       `json:"count"` // the execution_count: 1 for the session's first cell
	RunID      string    `json:"run_id"`
	Generation uint64    `json:"generation"`
	Started    time.Time `json:"started"`
	ElapsedMS  float64   `json:"elapsed_ms"`
	Code       string    `json:"code"`
	SourcePath string    `json:"source_path,omitempty"`
	Argv       []string  `json:"argv,omitempty"`
	Reset      bool      `json:"reset,omitempty"`
	// NewWorker says why the run's worker replaced one (repl.Result.StateResetReason).
	NewWorker string  `json:"new_worker,omitempty"`
	Fresh     bool    `json:"fresh,omitempty"`
	Success   bool    `json:"success"`
	Cleared   bool    `json:"cleared,omitempty"` // the namespace did not survive the run
	Stdout    string  `json:"stdout,omitempty"`
	Stderr    string  `json:"stderr,omitempty"`
	Preview   *string `json:"preview,omitempty"`
	HTML      string  `json:"html,omitempty"`
	Error     *string `json:"error,omitempty"`
	Images    []image `json:"images,omitempty"`
	// Displays are what display() printed of objects that are no image; Stdout
	// holds their text too.
	Displays []display `json:"displays,omitempty"`
	// ImagesNotShown counts the images past the run's inline bounds (artifacts).
	ImagesNotShown int `json:"images_not_shown,omitempty"`
	// Stopped says what stopped the run when it did not end on its own (repl.StopKind).
	Stopped string `json:"stopped,omitempty"`
	// Events are what happened to the session since the cell before it
	// (repl.SessionEvent): markdown cells before this one. They ride on the next cell
	// so that the record, and a live notebook's appends, stay one entry per cell.
	Events []event `json:"events,omitempty"`
}

// event is a session event as the record keeps it.
type event struct {
	Kind  string    `json:"kind"`
	At    time.Time `json:"at"`
	RunID string    `json:"run_id,omitempty"`
	Text  string    `json:"text"`
}

type display struct {
	Text string `json:"text"`
	HTML string `json:"html,omitempty"`
	Repr string `json:"repr,omitempty"`
}

type image struct {
	MIME   string `json:"mime"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Data   []byte `json:"data"`
}

// record is one session's cells on disk: segment files, each holding the JSON of
// up to segmentCells cells one after the other (about segmentBytes at most, past
// which the next cell starts a new segment), and the index of the cells kept. A cell
// is one write to the open segment: creating a file per cell cost this machine's
// filesystem about 0.3 ms a cell. A segment goes once none of its cells is kept, so
// the files hold at most one segment more than the kept cells.
type record struct {
	dir     string
	limits  limits
	next    int     // the count of the next cell
	kept    []entry // oldest first
	bytes   int64   // of the kept cells' JSON
	dropped int

	segment *os.File    // the segment cells are appended to, nil before the first
	segNo   int         // its number
	segSize int64       // its bytes so far
	segUsed int         // its cells so far
	live    map[int]int // kept cells per segment number
}

// The size of a segment: a new one starts after segmentCells cells, or once it
// holds segmentBytes.
const (
	segmentCells = 64
	segmentBytes = 4 << 20
)

type entry struct {
	count   int
	segment int   // the segment file that holds it
	offset  int64 // where its JSON starts there
	size    int64
	helpers []string // the repl-mcp-only helpers its code uses
	// lost, when set, says why the cell is not in the segment: writing it failed (a
	// full disk). The notebook says so where the cell would be.
	lost string
}

type limits struct {
	cells int
	bytes int64
}

func newRecord(dir string, lim limits) (*record, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &record{dir: dir, limits: lim, next: 1, live: map[int]int{}}, nil
}

func (r *record) path(segment int) string {
	return filepath.Join(r.dir, fmt.Sprintf("%09d.cells", segment))
}

// add writes c as the next cell, then drops the oldest cells past the bounds. The
// record is a private cache of this server's life (removed with its session, swept
// once its server died), read only under the session's lock once add has returned:
// nothing is fsynced. A cell that cannot be written (a full disk) takes its count
// all the same, as a lost entry that says why, and leaves the segment as it was:
// bytes of a torn write are cut off again, or, if even that fails, the segment is
// closed and the next cell starts another. The cells before and after it stay
// readable, and the error is returned for the caller to log.
func (r *record) add(c cell) error {
	c.Count = r.next
	r.next++
	err := r.write(c)
	if err != nil {
		r.kept = append(r.kept, entry{count: c.Count, lost: err.Error()})
	}
	for len(r.kept) > 1 && (len(r.kept) > r.limits.cells || r.bytes > r.limits.bytes) {
		if derr := r.dropOldest(); derr != nil && err == nil {
			err = derr
		}
	}
	return err
}

// write appends c to the open segment (a new one when it is full) and keeps its entry.
func (r *record) write(c cell) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if r.segment == nil || r.segUsed >= segmentCells || r.segSize >= segmentBytes {
		if err := r.startSegment(c.Count); err != nil {
			return err
		}
	}
	// Where the cell lands (the segment is opened to append): the end as the file
	// has it, not as this record counted it, in case anything cut it short.
	end, err := r.segment.Seek(0, io.SeekEnd)
	if err != nil {
		r.closeSegment()
		return err
	}
	r.segSize = end
	if n, err := r.segment.Write(data); err != nil {
		if n > 0 && r.segment.Truncate(r.segSize) != nil {
			r.closeSegment() // its end is unknown: the next cell starts a segment of its own
		}
		return err
	}
	r.kept = append(r.kept, entry{count: c.Count, segment: r.segNo, offset: r.segSize, size: int64(len(data)), helpers: helpersIn(c.Code)})
	r.segSize += int64(len(data))
	r.segUsed++
	r.live[r.segNo]++
	r.bytes += int64(len(data))
	return nil
}

// startSegment closes the current segment and opens a new one, numbered by the
// count of its first cell.
func (r *record) startSegment(first int) error {
	r.closeSegment()
	f, err := os.OpenFile(r.path(first), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	r.segment, r.segNo, r.segSize, r.segUsed = f, first, 0, 0
	return nil
}

// dropOldest forgets the oldest kept cell, and removes its segment when that held
// the last of its kept cells and is not the one being written.
func (r *record) dropOldest() error {
	oldest := r.kept[0]
	r.kept = r.kept[1:]
	r.bytes -= oldest.size
	r.dropped++
	if oldest.lost != "" {
		return nil
	}
	r.live[oldest.segment]--
	if r.live[oldest.segment] > 0 || oldest.segment == r.segNo {
		return nil
	}
	delete(r.live, oldest.segment)
	if err := os.Remove(r.path(oldest.segment)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// used is the repl-mcp-only helpers the kept cells use, in replOnlyHelpers' order.
func (r *record) used() []string {
	seen := map[string]bool{}
	for _, e := range r.kept {
		for _, h := range e.helpers {
			seen[h] = true
		}
	}
	var used []string
	for _, name := range replOnlyHelpers {
		if seen[name] {
			used = append(used, name)
		}
	}
	return used
}

// snapshot is the record's kept cells from count `from` on, as they are now, to be
// read without the session's lock: the segments they are in are opened, so that a
// segment the record drops meanwhile is still there to read.
func (r *record) snapshot(from int) *snapshot {
	sn := &snapshot{files: map[int]*os.File{}, errs: map[int]error{}, used: r.used(), dropped: r.dropped}
	for _, e := range r.kept {
		if e.count < from {
			continue
		}
		sn.entries = append(sn.entries, e)
		if _, open := sn.files[e.segment]; e.lost != "" || open || sn.errs[e.segment] != nil {
			continue
		}
		f, err := os.Open(r.path(e.segment))
		if err != nil {
			sn.errs[e.segment] = err
			continue
		}
		sn.files[e.segment] = f
	}
	return sn
}

// snapshot is a moment of a record (record.snapshot); close it once read.
type snapshot struct {
	entries []entry
	files   map[int]*os.File // by segment number
	errs    map[int]error    // segments that could not be opened
	used    []string
	dropped int
}

// cell reads the i-th cell of the snapshot. One the record lost, or whose bytes
// cannot be read back, is a *missingCell saying why.
func (sn *snapshot) cell(i int) (cell, error) {
	e := sn.entries[i]
	if e.lost != "" {
		return cell{}, &missingCell{count: e.count, why: "it could not be recorded: " + e.lost}
	}
	unreadable := func(err error) (cell, error) {
		return cell{}, &missingCell{count: e.count, why: "the session's record of it cannot be read: " + err.Error()}
	}
	f := sn.files[e.segment]
	if f == nil {
		return unreadable(sn.errs[e.segment])
	}
	data := make([]byte, e.size)
	if _, err := f.ReadAt(data, e.offset); err != nil {
		return unreadable(err)
	}
	var c cell
	if err := json.Unmarshal(data, &c); err != nil {
		return unreadable(err)
	}
	return c, nil
}

func (sn *snapshot) close() {
	for _, f := range sn.files {
		f.Close()
	}
}

// contents is what a notebook of the snapshot is written from.
func (sn *snapshot) contents() keptCells {
	return keptCells{n: len(sn.entries), cell: sn.cell, used: sn.used, dropped: sn.dropped}
}

// missingCell is a kept cell the notebook cannot show: it says so in its place.
type missingCell struct {
	count int
	why   string
}

func (m *missingCell) Error() string { return fmt.Sprintf("cell %d: %s", m.count, m.why) }

func (r *record) remove() error {
	r.closeSegment()
	return os.RemoveAll(r.dir)
}

// closeSegment lets go of the segment being written (a later cell starts another).
func (r *record) closeSegment() {
	if r.segment != nil {
		r.segment.Close()
		r.segment = nil
	}
}
