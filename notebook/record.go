package notebook

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/iota-uz/repl-mcp/internal/atomicfile"
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

// record is one session's cells on disk: a directory with one file per cell, named
// by its count, and the index of what it holds.
type record struct {
	dir     string
	limits  limits
	next    int     // the count of the next cell
	kept    []entry // oldest first
	bytes   int64
	dropped int
}

type entry struct {
	count   int
	size    int64
	helpers []string // the repl-mcp-only helpers its code uses
}

type limits struct {
	cells int
	bytes int64
}

func newRecord(dir string, lim limits) (*record, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &record{dir: dir, limits: lim, next: 1}, nil
}

func (r *record) path(count int) string {
	return filepath.Join(r.dir, fmt.Sprintf("%09d.json", count))
}

// add writes c as the next cell, then drops the oldest cells past the bounds.
func (r *record) add(c cell) error {
	c.Count = r.next
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(r.path(c.Count), data, 0o600); err != nil {
		return err
	}
	r.next++
	r.kept = append(r.kept, entry{count: c.Count, size: int64(len(data)), helpers: helpersIn(c.Code)})
	r.bytes += int64(len(data))
	for len(r.kept) > 1 && (len(r.kept) > r.limits.cells || r.bytes > r.limits.bytes) {
		oldest := r.kept[0]
		if err := os.Remove(r.path(oldest.count)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		r.kept = r.kept[1:]
		r.bytes -= oldest.size
		r.dropped++
	}
	return nil
}

// cell reads the i-th kept cell, oldest first.
func (r *record) cell(i int) (cell, error) {
	e := r.kept[i]
	data, err := os.ReadFile(r.path(e.count))
	if err != nil {
		return cell{}, err
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

// contents is what a notebook of the record is written from.
func (r *record) contents() keptCells {
	return keptCells{n: len(r.kept), cell: r.cell, used: r.used(), dropped: r.dropped}
}

func (r *record) remove() error { return os.RemoveAll(r.dir) }
