package notebook

import (
	"encoding/json"
	"errors"
	"fmt"
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
	Fresh      bool      `json:"fresh,omitempty"`
	Success    bool      `json:"success"`
	Cleared    bool      `json:"cleared,omitempty"` // the namespace did not survive the run
	Stdout     string    `json:"stdout,omitempty"`
	Stderr     string    `json:"stderr,omitempty"`
	Preview    *string   `json:"preview,omitempty"`
	HTML       string    `json:"html,omitempty"`
	Error      *string   `json:"error,omitempty"`
	Images     []image   `json:"images,omitempty"`
	// Displays are what display() printed of objects that are no image; Stdout
	// holds their text too.
	Displays []display `json:"displays,omitempty"`
	// ImagesNotShown counts the images past the run's inline bounds (artifacts).
	ImagesNotShown int `json:"images_not_shown,omitempty"`
	// Stopped says what stopped the run when it did not end on its own (repl.StopKind).
	Stopped string `json:"stopped,omitempty"`
	// Event, when set, makes this entry no cell the session ran but something that
	// happened to the session there (repl.SessionEvent): a markdown cell, with no
	// execution count of its own.
	Event *event `json:"event,omitempty"`
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
	event   bool     // a session event, no cell
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
// nothing is fsynced.
func (r *record) add(c cell) error {
	if c.Event == nil {
		c.Count = r.next
	}
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if r.segment == nil || r.segUsed >= segmentCells || r.segSize >= segmentBytes {
		if err := r.startSegment(c.Count); err != nil {
			return err
		}
	}
	if _, err := r.segment.Write(data); err != nil {
		return err
	}
	r.kept = append(r.kept, entry{count: c.Count, segment: r.segNo, offset: r.segSize, size: int64(len(data)), helpers: helpersIn(c.Code), event: c.Event != nil})
	if c.Event == nil {
		r.next++
	}
	r.segSize += int64(len(data))
	r.segUsed++
	r.live[r.segNo]++
	r.bytes += int64(len(data))
	for len(r.kept) > 1 && (len(r.kept) > r.limits.cells || r.bytes > r.limits.bytes) {
		if err := r.dropOldest(); err != nil {
			return err
		}
	}
	return nil
}

// startSegment closes the current segment and opens a new one, numbered by the
// count of its first cell.
func (r *record) startSegment(first int) error {
	if r.segment != nil {
		if err := r.segment.Close(); err != nil {
			return err
		}
		r.segment = nil
	}
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
	if !oldest.event {
		r.dropped++ // what the notebook counts is cells: an event goes unsaid
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

// cell reads the i-th kept cell, oldest first.
func (r *record) cell(i int) (cell, error) {
	e := r.kept[i]
	f, err := os.Open(r.path(e.segment))
	if err != nil {
		return cell{}, err
	}
	defer f.Close()
	data := make([]byte, e.size)
	if _, err := f.ReadAt(data, e.offset); err != nil {
		return cell{}, fmt.Errorf("cell %d of the record: %w", e.count, err)
	}
	var c cell
	if err := json.Unmarshal(data, &c); err != nil {
		return cell{}, fmt.Errorf("cell %d of the record: %w", e.count, err)
	}
	return c, nil
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

// cells counts the kept entries that are cells, not events.
func (r *record) cells() int {
	n := 0
	for _, e := range r.kept {
		if !e.event {
			n++
		}
	}
	return n
}

// contents is what a notebook of the record is written from.
func (r *record) contents() keptCells {
	return keptCells{n: len(r.kept), cell: r.cell, used: r.used(), dropped: r.dropped}
}

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
