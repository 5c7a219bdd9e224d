package repl

import (
	"bufio"
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
	Protocol         int    `json:"protocol"`
	Pid              int    `json:"pid"`
	PythonVersion    string `json:"python_version"`
	PythonExecutable string `json:"python_executable"`

	// output
	Stream string `json:"stream"`
	Text   string `json:"text"`

	// result
	Result *workerResult `json:"result"`

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
}

var errFrameTooLarge = errors.New("frame exceeds 1 MiB")

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
	var f inFrame
	if err := json.Unmarshal(line, &f); err != nil {
		return inFrame{}, fmt.Errorf("worker sent a frame that is not JSON: %w", err)
	}
	if f.Type == "" {
		return inFrame{}, errors.New("worker sent a frame without a type")
	}
	return f, nil
}
