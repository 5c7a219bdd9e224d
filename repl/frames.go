package repl

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// protocolVersion is the worker protocol this server speaks (worker/PROTOCOL.md).
const protocolVersion = 1

// inFrame is any frame from the worker; which fields are set depends on Type.
type inFrame struct {
	Type string `json:"type"`
	ID   string `json:"id"`

	// ready
	Protocol         int      `json:"protocol"`
	Pid              int      `json:"pid"`
	PythonVersion    string   `json:"python_version"`
	PythonExecutable string   `json:"python_executable"`
	SiteDirs         []string `json:"site_dirs"`
	SiteAbsent       []string `json:"site_absent"`
	PathHead         string   `json:"path_head"`
	VirtualEnv       string   `json:"virtual_env"`

	// output
	Stream string `json:"stream"`
	Text   string `json:"text"`

	// result; Barrier is false when the worker wrote no barrier before it (absent: it did)
	Result  *workerResult `json:"result"`
	Barrier *bool         `json:"barrier"`
	// NativePipe: the worker put a new pipe at its fd 1 and 2 with this result and sent
	// its read end on the native socket first (worker/PROTOCOL.md, Native pipes).
	NativePipe bool `json:"native_pipe"`

	// job: a detached process group (pid is its leader) "started" or "finished"
	Action string `json:"action"`

	// image: ID is the run id; one chunk (Data, at Offset) of the run's image Index
	Index  int    `json:"index"`
	MIME   string `json:"mime"`
	Bytes  int    `json:"bytes"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Offset int    `json:"offset"`
	Data   []byte `json:"data"` // also an rpc's payload (RPC.Data)

	// rpc and rpc_cancel: ID is the rpc id
	RunID  string          `json:"run_id"`
	Op     string          `json:"op"`
	Params json.RawMessage `json:"params"`

	// snapshot: ID is the request's token; how the pass ended, and what it saved
	Status  string           `json:"status"`
	Summary *SnapshotSummary `json:"summary"`
	Error   string           `json:"error"`
}

// executeFrame asks the worker to run one cell.
type executeFrame struct {
	Type    string  `json:"type"`
	ID      string  `json:"id"`
	Code    string  `json:"code"`
	Timeout float64 `json:"timeout"`
	Barrier string  `json:"barrier"`
	// SourcePath runs a saved file (absolute path) instead of Code, with Argv.
	SourcePath string   `json:"source_path,omitempty"`
	Argv       []string `json:"argv,omitempty"`
	// Inventory asks for namespace metadata instead of running anything.
	Inventory bool `json:"inventory,omitempty"`
	// Bindings asks the worker to note which variables the run bound, for snapshots.
	Bindings bool `json:"bindings,omitempty"`
	// Restore loads a snapshot instead of running code (worker/PROTOCOL.md, Snapshots).
	Restore *restoreSpec `json:"restore,omitempty"`
}

// snapshotPlace is where a snapshot is: its directory, id, the key that
// authenticates it and the project it belongs to.
type snapshotPlace struct {
	Dir      string `json:"dir"`
	Snapshot string `json:"snapshot"`
	Key      string `json:"key"`
	Project  string `json:"project"`
}

// restoreSpec is an execute's restore: the snapshot, and whether the worker goes on
// writing its later snapshots there.
type restoreSpec struct {
	snapshotPlace
	Adopt bool `json:"adopt"`
}

// snapshotFrame asks the worker for a pass over its namespace into a snapshot.
type snapshotFrame struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	snapshotPlace
	SessionID   string `json:"session_id"`
	SessionName string `json:"session_name"`
	ServerID    string `json:"server_id"`
	Generation  uint64 `json:"generation"`
	Budget      int64  `json:"budget"`
}

// snapshotReport is the worker's answer to a snapshotFrame.
type snapshotReport struct {
	id      string
	status  string // saved, unchanged, stopped, failed, busy
	summary *SnapshotSummary
	err     string
}

var errFrameTooLarge = errors.New("frame exceeds 1 MiB")

// errNotJSON is a frame of the worker's that does not decode.
var errNotJSON = errors.New("worker sent a frame that is not JSON")

// errCommandTooLarge is a frame to the worker past MaxFrameBytes, which is not sent.
var errCommandTooLarge = errors.New(msgFrameTooLarge)

// frameReader reads newline-delimited frames, refusing any line over MaxFrameBytes
// before it is parsed.
type frameReader struct {
	r *bufio.Reader
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10)}
}

func (fr *frameReader) next() (inFrame, error) {
	var line []byte
	for {
		chunk, err := fr.r.ReadSlice('\n')
		if len(line)+len(chunk) > MaxFrameBytes {
			return inFrame{}, errFrameTooLarge
		}
		line = append(line, chunk...)
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			if err == io.EOF && len(line) > 0 {
				return inFrame{}, io.ErrUnexpectedEOF
			}
			return inFrame{}, err
		}
	}
	f, err := decodeFrame(line)
	if err != nil {
		return inFrame{}, fmt.Errorf("%w: %w", errNotJSON, err)
	}
	if f.Type == "" {
		return inFrame{}, errors.New("worker sent a frame without a type")
	}
	return f, nil
}

// decodeFrame decodes one frame, as json.Unmarshal would.
func decodeFrame(line []byte) (inFrame, error) {
	if f, ok := decodeDataFrame(line); ok {
		return f, nil
	}
	var f inFrame
	err := json.Unmarshal(line, &f)
	return f, err
}

// dataMember starts the data member as the worker writes it, last in its frame.
var dataMember = []byte(`,"data":"`)

// minDataScan is the base64 below which decodeDataFrame leaves a frame to
// json.Unmarshal: scanning a short string costs less than looking for it.
const minDataScan = 4096

// decodeDataFrame decodes a frame that ends with a long data member (the base64 of
// an image or upload chunk: `{...,"data":"<base64>"}`) without scanning the base64
// as JSON, which would be three passes over it (validate, find its end, unquote)
// before it is decoded. Let the line be H + `,"data":"` + D + `"}`. When H + "}" is
// a JSON object with at least one member and D is standard padded base64 with no
// line breaks (no byte of it is a quote, a backslash or a control character), the
// line is that object with one member more, "data": D, the last, which wins over an
// earlier one as in json.Unmarshal; so decoding H + "}" and then D gives what
// decoding the line does, wherever the split was made. Any other line is left to
// json.Unmarshal (ok false), which also gives the error of a line that is not a
// frame.
func decodeDataFrame(line []byte) (f inFrame, ok bool) {
	body := bytes.TrimSuffix(line, []byte("\n"))
	at := bytes.Index(body, dataMember) // the first: if it is not the last member, D holds a quote
	if at < 1 || !bytes.HasSuffix(body, []byte(`"}`)) || len(body)-2-(at+len(dataMember)) < minDataScan {
		return inFrame{}, false
	}
	encoded := body[at+len(dataMember) : len(body)-2]
	if body[0] != '{' || len(bytes.TrimSpace(body[1:at])) == 0 || bytes.IndexByte(encoded, '\r') >= 0 || bytes.IndexByte(encoded, '\n') >= 0 {
		return inFrame{}, false
	}
	head := append(body[:at:at], '}') // a copy: the line stays as it was for json.Unmarshal
	if json.Unmarshal(head, &f) != nil {
		return inFrame{}, false
	}
	data := make([]byte, base64.StdEncoding.DecodedLen(len(encoded)))
	n, err := base64.StdEncoding.Decode(data, encoded)
	if err != nil {
		return inFrame{}, false
	}
	f.Data = data[:n]
	return f, true
}
