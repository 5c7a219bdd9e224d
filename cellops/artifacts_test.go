package cellops

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/repl"
)

// TestUploadChunksAreTheFramesData: artifact.append takes its chunk from the rpc
// frame's data (repl.RPC.Data), at most 256 KiB of it, and the committed artifact
// is those bytes, in order.
func TestUploadChunksAreTheFramesData(t *testing.T) {
	store := artifacts.New(artifacts.Config{Dir: t.TempDir()})
	t.Cleanup(store.Close)
	ops := New(Config{Store: store})
	ops.SessionOpened("s", t.TempDir())
	ops.RunStarted("s", "r")
	serve := func(op string, params any, data []byte) (map[string]any, error) {
		raw, _ := json.Marshal(params)
		out, err := ops.Serve(t.Context(), repl.RPC{SessionID: "s", RunID: "r", Op: op, Params: raw, Data: data})
		if err != nil {
			return nil, err
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s: %s is not an object", op, out)
		}
		return v, nil
	}
	begun, err := serve("artifact.begin", map[string]any{"format": "binary"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := begun["upload_id"].(string)
	data := bytes.Repeat([]byte{0, 1, 0xfe, 0xff, '"', '\\'}, 100000)
	for off := 0; off < len(data); off += artifacts.ChunkBytes {
		chunk := data[off:min(off+artifacts.ChunkBytes, len(data))]
		got, err := serve("artifact.append", map[string]any{"upload_id": id, "offset": off}, chunk)
		if err != nil || got["size"] != float64(off+len(chunk)) {
			t.Fatalf("append at %d: %v, %v", off, got, err)
		}
	}
	_, err = serve("artifact.append", map[string]any{"upload_id": id, "offset": len(data)}, make([]byte, artifacts.ChunkBytes+1))
	if err == nil || err.Error() != msgChunkTooLong {
		t.Errorf("an append of 256 KiB and a byte: %v, want %q", err, msgChunkTooLong)
	}
	ref, err := serve("artifact.commit", map[string]any{"upload_id": id}, nil)
	sum := sha256.Sum256(data)
	if err != nil || ref["size"] != float64(len(data)) || ref["sha256"] != hex.EncodeToString(sum[:]) {
		t.Fatalf("commit: %v, %v; want %d bytes, sha256 %x", ref, err, len(data), sum)
	}
}
