package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// The artifacts figure: a 16 MiB bytes value uploaded from a cell with artifact(data),
// timed with time.perf_counter around that one call (the value is built before, not
// timed), and the whole artifact read back by the bench client with artifact_read in
// 65,536-byte base64 ranges, timed in Go from the first request to the last range
// decoded and hashed. Both are against the same server and session, one stdio
// connection. The baseline is the same bytes through a plain file in the same cell,
// on the same file system as the store (both under the temporary directory): os.write
// in 256 KiB chunks (the upload's append size), then os.read in 64 KiB chunks (the
// read's range size), each timed with time.perf_counter.
const (
	// artifactBytes stays under the store's 16 MiB per-artifact limit.
	artifactBytes = 16<<20 - 1024
	artifactRange = 65536  // artifact_read's largest range
	artifactChunk = 262144 // the worker's append size
	artifactRuns  = 3
	// artifactBudget: no further run once this much is spent; each run deletes its
	// artifact, so the store (64 MiB) never holds more than one of them.
	artifactBudget      = 10 * time.Second
	artifactCellTimeout = 30 * time.Second
)

// targetArtifact: "16 MiB artifact upload and full ranged read: each under 0.5 s".
const targetArtifact = 500 * time.Millisecond

// artifactCell builds the value, times the upload, checks the reference against
// hashlib, then times the file baseline. It prints one JSON object and has no
// trailing value. %[1]d is the size, %[2]d the append size, %[3]d the range size,
// %[4]s the baseline's directory as a JSON (so Python) string literal.
const artifactCell = `import hashlib as _hl, json as _js, os as _os, tempfile as _tf, time as _t
_pc = _t.perf_counter
_d = _os.urandom(%[1]d)
_want = _hl.sha256(_d).hexdigest()
_s = _pc()
_ref = artifact(_d)
_up = _pc() - _s
if (_ref.get("size"), _ref.get("sha256"), _ref.get("format")) != (len(_d), _want, "binary"):
    raise RuntimeError("artifact(data) returned %%r, want size %%d, sha256 %%s, format binary" %% (_ref, len(_d), _want))
_mv = memoryview(_d)
_fd, _p = _tf.mkstemp(prefix="baseline-", dir=%[4]s)
try:
    _s = _pc()
    try:
        for _i in range(0, len(_d), %[2]d):
            _c = _mv[_i:_i + %[2]d]
            if _os.write(_fd, _c) != len(_c):
                raise RuntimeError("short write")
    finally:
        _os.close(_fd)
    _wr = _pc() - _s
    _n = 0
    _s = _pc()
    _fd = _os.open(_p, _os.O_RDONLY)
    try:
        while True:
            _c = _os.read(_fd, %[3]d)
            if not _c:
                break
            _n += len(_c)
    finally:
        _os.close(_fd)
    _rd = _pc() - _s
finally:
    _os.unlink(_p)
if _n != len(_d):
    raise RuntimeError("read back %%d bytes of %%d" %% (_n, len(_d)))
print(_js.dumps({"upload_s": _up, "write_s": _wr, "read_s": _rd, "id": _ref["id"], "size": _ref["size"], "sha256": _ref["sha256"]}))
del _hl, _js, _os, _tf, _t, _pc, _d, _want, _s, _ref, _up, _mv, _fd, _p, _i, _c, _wr, _n, _rd
`

// artifactRun is one upload and full read.
type artifactRun struct {
	upload    time.Duration // artifact(data), timed in the cell
	read      time.Duration // every artifact_read range, timed by the client
	readWire  time.Duration // of which from each request's write to its reply's line read
	fileWrite time.Duration // the baseline, in the same cell
	fileRead  time.Duration
	cellRound time.Duration // the cell's execute_python round trip
	cellMs    float64       // and its server-reported elapsed_ms
	ranges    int
	size      int
}

// artifactFigure is what the artifacts figure measured.
type artifactFigure struct {
	runs     []artifactRun
	err      error
	shutdown string
}

// measureArtifacts starts repl-mcp in a project of its own and runs up to
// artifactRuns uploads and reads, each artifact deleted after its read.
func (b *bench) measureArtifacts(ctx context.Context) (f artifactFigure) {
	dir, err := os.MkdirTemp(b.dir, "artifacts-project-")
	if err != nil {
		f.err = err
		return f
	}
	s, err := startServer(ctx, dir, b.cfg.Binary, b.cfg.Python)
	if err != nil {
		f.err = err
		return f
	}
	defer func() { f.shutdown = b.stopServer(s, "artifacts session") }()
	if _, err := s.initialize(ctx); err != nil {
		f.err = err
		return f
	}
	// A first cell starts the worker, so that no run waits for it.
	r, _, err := s.execute(ctx, trivialCode, cellTimeout)
	if err == nil {
		err = checkTrivial(r)
	}
	if err != nil {
		f.err = fmt.Errorf("warm-up cell: %w", err)
		return f
	}
	sessionID, err := s.sessionID(ctx)
	if err != nil {
		f.err = err
		return f
	}
	quoted, err := json.Marshal(dir)
	if err != nil {
		f.err = err
		return f
	}
	code := fmt.Sprintf(artifactCell, artifactBytes, artifactChunk, artifactRange, quoted)
	start := time.Now()
	for i := 0; i < artifactRuns && (i == 0 || time.Since(start) < artifactBudget); i++ {
		run, err := b.artifactOnce(ctx, s, sessionID, code)
		if err != nil {
			f.err = fmt.Errorf("run %d: %w", i+1, err)
			return f
		}
		f.runs = append(f.runs, run)
	}
	return f
}

// artifactOnce uploads from a cell, reads the artifact back, and deletes it.
func (b *bench) artifactOnce(ctx context.Context, s *mcpServer, sessionID, code string) (artifactRun, error) {
	var run artifactRun
	r, took, err := s.execute(ctx, code, artifactCellTimeout)
	if err != nil {
		return run, fmt.Errorf("upload cell: %w", err)
	}
	run.cellRound, run.cellMs = took, r.Structured.ElapsedMs
	var out struct {
		UploadS float64 `json:"upload_s"`
		WriteS  float64 `json:"write_s"`
		ReadS   float64 `json:"read_s"`
		ID      string  `json:"id"`
		Size    int     `json:"size"`
		SHA256  string  `json:"sha256"`
	}
	if r.Structured.Truncated.Stdout || json.Unmarshal([]byte(r.Structured.Stdout), &out) != nil {
		return run, fmt.Errorf("upload cell: its stdout is not one JSON object: %.200q", r.Structured.Stdout)
	}
	if out.ID == "" || out.Size != artifactBytes || out.UploadS <= 0 || out.WriteS <= 0 || out.ReadS <= 0 {
		return run, fmt.Errorf("upload cell: unexpected report %.300s", r.Structured.Stdout)
	}
	run.upload, run.fileWrite, run.fileRead = seconds(out.UploadS), seconds(out.WriteS), seconds(out.ReadS)
	run.size = out.Size
	run.read, run.readWire, run.ranges, err = s.readArtifact(ctx, sessionID, out.ID, out.Size, out.SHA256)
	if derr := s.deleteArtifact(ctx, sessionID, out.ID); err == nil {
		err = derr
	}
	return run, err
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// artifactResult is the part of an artifact tool's result the bench reads.
type artifactResult struct {
	IsError    bool `json:"isError"`
	Structured struct {
		Error    *string `json:"error"`
		Offset   int     `json:"offset"`
		Length   int     `json:"length"`
		Encoding string  `json:"encoding"`
		Content  string  `json:"content"`
		HasMore  bool    `json:"has_more"`
		Deleted  bool    `json:"deleted"`
	} `json:"structuredContent"`
}

// artifactTool calls an artifact tool; a result with an error is an error. It also
// returns the request's round trip, to the reply's line read.
func (s *mcpServer) artifactTool(ctx context.Context, name string, args map[string]any) (artifactResult, time.Duration, error) {
	var r artifactResult
	took, err := s.requestInto(ctx, requestTimeout, "tools/call", map[string]any{"name": name, "arguments": args}, &r)
	if err != nil {
		return r, 0, err
	}
	if r.IsError || r.Structured.Error != nil {
		msg := "no error text"
		if r.Structured.Error != nil {
			msg = *r.Structured.Error
		}
		return r, took, fmt.Errorf("%s: %s", name, msg)
	}
	return r, took, nil
}

// readArtifact reads the whole artifact in artifactRange base64 ranges, decoding
// each and hashing them all, and returns the time from the first request to the
// last range hashed (the checks inside the loop are part of it), and how much of it
// went from each request's write to its reply's line read.
func (s *mcpServer) readArtifact(ctx context.Context, sessionID, id string, size int, sum string) (total, wire time.Duration, ranges int, err error) {
	h := sha256.New()
	maxContent := base64.StdEncoding.EncodedLen(artifactRange)
	buf := make([]byte, base64.StdEncoding.DecodedLen(maxContent))
	start := time.Now()
	for off := 0; off < size; off += artifactRange {
		r, took, err := s.artifactTool(ctx, "artifact_read", map[string]any{
			"session_id": sessionID, "id": id, "offset": off, "length": artifactRange, "encoding": "base64"})
		if err != nil {
			return 0, 0, ranges, fmt.Errorf("range at %d: %w", off, err)
		}
		ranges++
		wire += took
		want := min(artifactRange, size-off)
		if len(r.Structured.Content) > maxContent {
			return 0, 0, ranges, fmt.Errorf("artifact_read at %d: %d characters of content, more than %d bytes in base64",
				off, len(r.Structured.Content), artifactRange)
		}
		n, err := base64.StdEncoding.Decode(buf, []byte(r.Structured.Content))
		switch {
		case err != nil:
			return 0, 0, ranges, fmt.Errorf("artifact_read at %d: content is not base64: %w", off, err)
		case n != want || r.Structured.Offset != off || r.Structured.Length != want || r.Structured.Encoding != "base64":
			return 0, 0, ranges, fmt.Errorf("artifact_read at %d: got offset %d, length %d, encoding %q, %d bytes; want %d bytes",
				off, r.Structured.Offset, r.Structured.Length, r.Structured.Encoding, n, want)
		case r.Structured.HasMore != (off+n < size):
			return 0, 0, ranges, fmt.Errorf("artifact_read at %d: has_more %v with %d of %d bytes read", off, r.Structured.HasMore, off+n, size)
		}
		h.Write(buf[:n])
	}
	got := hex.EncodeToString(h.Sum(nil))
	total = time.Since(start)
	if got != sum {
		return 0, 0, ranges, fmt.Errorf("the ranges read hash to sha256 %s, the reference says %s", got, sum)
	}
	return total, wire, ranges, nil
}

func (s *mcpServer) deleteArtifact(ctx context.Context, sessionID, id string) error {
	r, _, err := s.artifactTool(ctx, "artifact_delete", map[string]any{"session_id": sessionID, "id": id})
	if err == nil && !r.Structured.Deleted {
		err = errors.New("artifact_delete: the result does not say deleted")
	}
	return err
}

// sessionID is the default session's id, from python_health.
func (s *mcpServer) sessionID(ctx context.Context) (string, error) {
	res, _, err := s.request(ctx, requestTimeout, "tools/call",
		map[string]any{"name": "python_health", "arguments": map[string]any{}})
	if err != nil {
		return "", err
	}
	var r struct {
		Structured struct {
			Server struct {
				SessionID string `json:"session_id"`
			} `json:"server"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", fmt.Errorf("python_health: %w", err)
	}
	if r.Structured.Server.SessionID == "" {
		return "", fmt.Errorf("python_health: no server.session_id: %.300s", res)
	}
	return r.Structured.Server.SessionID, nil
}

// failure is why the figure has no value: its error, or no run at all.
func (f artifactFigure) failure() error {
	if f.err == nil && len(f.runs) == 0 {
		return errors.New("no run")
	}
	return f.err
}

// medians are the medians of the runs: upload, read, file write, file read.
func (f artifactFigure) medians() (upload, read, fileWrite, fileRead time.Duration) {
	var u, r, w, fr []time.Duration
	for _, run := range f.runs {
		u, r = append(u, run.upload), append(r, run.read)
		w, fr = append(w, run.fileWrite), append(fr, run.fileRead)
	}
	return median(u), median(r), median(w), median(fr)
}
