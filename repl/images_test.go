package repl

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// imageFrames are the frames a worker sends for data as image index of run.
func imageFrames(run string, index int, data []byte, chunk int) []inFrame {
	var frames []inFrame
	for off := 0; off < len(data); off += chunk {
		end := min(off+chunk, len(data))
		frames = append(frames, inFrame{Type: "image", ID: run, Index: index, MIME: "image/png", Bytes: len(data),
			Width: 3, Height: 2, Offset: off, Data: data[off:end]})
	}
	return frames
}

func fakePNG(size int) []byte {
	return append(append([]byte{}, pngSignature...), bytes.Repeat([]byte{7}, size-len(pngSignature))...)
}

func listed(images ...[]byte) []Image {
	var meta []Image
	for _, data := range images {
		meta = append(meta, Image{MIME: "image/png", Bytes: len(data), Width: 3, Height: 2})
	}
	return meta
}

func TestImageCollectorAssemblesChunkedImages(t *testing.T) {
	var c imageCollector
	first, second := fakePNG(imageChunkBytes+100), fakePNG(40)
	for _, f := range append(imageFrames("r1", 0, first, imageChunkBytes), imageFrames("r1", 1, second, imageChunkBytes)...) {
		if err := c.add(f); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.take("r1", listed(first, second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !bytes.Equal(got[0].Data, first) || !bytes.Equal(got[1].Data, second) || got[0].Width != 3 {
		t.Fatalf("assembled %d images", len(got))
	}
	// The collector starts over: the next run's result has none of them.
	if got, err := c.take("r2", nil); err != nil || len(got) != 0 {
		t.Fatalf("next run: %v, %v", got, err)
	}
	// Images of a run that sent no result are dropped when another run's frames come.
	c.add(imageFrames("lost", 0, fakePNG(20), 64)[0])
	c.add(imageFrames("r3", 0, fakePNG(30), 64)[0])
	if got, err := c.take("r3", listed(fakePNG(30))); err != nil || len(got) != 1 || got[0].Bytes != 30 {
		t.Fatalf("after a lost run: %v, %v", got, err)
	}
}

func TestImageCollectorRefusesWhatBreaksTheProtocol(t *testing.T) {
	png := fakePNG(100)
	frame := func(change func(*inFrame)) inFrame {
		f := imageFrames("r", 0, png, 1000)[0]
		change(&f)
		return f
	}
	for name, f := range map[string]inFrame{
		"out of order":     frame(func(f *inFrame) { f.Index = 1 }),
		"empty":            frame(func(f *inFrame) { f.Data = nil }),
		"chunk too large":  frame(func(f *inFrame) { f.Data = make([]byte, imageChunkBytes+1) }),
		"starts mid-image": frame(func(f *inFrame) { f.Offset = 10 }),
		"unknown type":     frame(func(f *inFrame) { f.MIME = "image/svg+xml" }),
		"no size":          frame(func(f *inFrame) { f.Width = 0 }),
		"too many bytes":   frame(func(f *inFrame) { f.Bytes = maxImageBytes + 1 }),
		"past its size":    frame(func(f *inFrame) { f.Bytes = 50; f.Data = png[:60] }),
		"no signature":     frame(func(f *inFrame) { f.Data = bytes.Repeat([]byte{1}, 100) }),
		"wrong signature":  frame(func(f *inFrame) { f.MIME = "image/gif" }),
	} {
		var c imageCollector
		if err := c.add(f); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A frame that does not continue the image in progress.
	var c imageCollector
	frames := imageFrames("r", 0, png, 40)
	c.add(frames[0])
	frames[1].Offset = 0
	if err := c.add(frames[1]); err == nil {
		t.Error("a frame at the wrong offset was accepted")
	}
	// More than maxImages, and more than maxImageBytes together.
	c = imageCollector{}
	for i := range maxImages {
		if err := c.add(imageFrames("r", i, fakePNG(16), 64)[0]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.add(imageFrames("r", maxImages, fakePNG(16), 64)[0]); err == nil || !strings.Contains(err.Error(), "more than 8 images") {
		t.Errorf("ninth image: %v", err)
	}
	c = imageCollector{}
	big := fakePNG(maxImageBytes - 10)
	for _, f := range imageFrames("r", 0, big, imageChunkBytes) {
		c.add(f)
	}
	if err := c.add(imageFrames("r", 1, fakePNG(11), 64)[0]); err == nil {
		t.Error("images past maxImageBytes accepted")
	}
	// A result must list exactly the images its frames carried, all of them complete.
	for name, tc := range map[string]struct {
		frames []inFrame
		listed []Image
	}{
		"incomplete":    {imageFrames("r", 0, png, 40)[:1], listed(png)},
		"not listed":    {imageFrames("r", 0, png, 1000), nil},
		"listed unsent": {nil, listed(png)},
		"unlike frames": {imageFrames("r", 0, png, 1000), []Image{{MIME: "image/png", Bytes: 100, Width: 4, Height: 2}}},
		"omitted":       {imageFrames("r", 0, png, 1000), []Image{{MIME: "image/png", Bytes: 100, Width: 3, Height: 2, Omitted: "x"}}},
	} {
		var c imageCollector
		for _, f := range tc.frames {
			if err := c.add(f); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.take("r", tc.listed); err == nil {
			t.Errorf("%s: result accepted", name)
		}
	}
}

func TestHistoryKeepsTheImagesOfTheNewestResults(t *testing.T) {
	var history []*Result
	image := fakePNG(maxImageBytes)
	for i := range 6 {
		history = append(history, &Result{RunID: string(rune('a' + i)), Images: []Image{{MIME: "image/png", Bytes: len(image), Width: 1, Height: 1, Data: image}}})
	}
	handedOut := history[0]
	retainImages(history)
	kept := historyImageBytes / maxImageBytes
	for i, r := range history {
		evicted := i < len(history)-kept
		if (r.Images[0].Data == nil) != evicted || (r.Images[0].Omitted == msgImageNotRetained) != evicted {
			t.Errorf("result %d: evicted=%v, data %d bytes, omitted %q", i, evicted, len(r.Images[0].Data), r.Images[0].Omitted)
		}
		if r.Images[0].Bytes != len(image) {
			t.Errorf("result %d lost its metadata", i)
		}
	}
	if handedOut.Images[0].Data == nil || history[0] == handedOut {
		t.Fatal("a result already handed out was changed instead of replaced")
	}
	encoded, _ := json.Marshal(history[0])
	if !strings.Contains(string(encoded), `"images":[{"mime":"image/png","bytes":524288,"width":1,"height":1,"omitted":"Image no longer retained`) {
		t.Fatalf("evicted result's JSON: %s", encoded)
	}
}

// TestRunImagesBesideTheResult: a real worker's images reach Result.Images, bytes and
// all, outside the JSON, which lists their metadata; a run whose worker dies before its
// result drops what it had sent.
func TestRunImagesBesideTheResult(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	code := `import struct, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 5, 4, 8, 0, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(bytes(25 * 4))) + chunk(b"IEND", b"")
display(png, png)
len(png)`
	res := s.Execute(t.Context(), ExecRequest{Code: code})
	if !res.Success || len(res.Images) != 2 {
		t.Fatalf("result: success=%v images=%+v error=%v", res.Success, res.Images, res.Error)
	}
	img := res.Images[0]
	var size int
	json.Unmarshal(res.Value, &size)
	if !bytes.HasPrefix(img.Data, pngSignature) || len(img.Data) != size || img.Bytes != size || img.Width != 5 || img.Height != 4 || img.MIME != "image/png" {
		t.Fatalf("image: %s %dx%d, %d bytes of %d", img.MIME, img.Width, img.Height, len(img.Data), size)
	}
	encoded, _ := json.Marshal(res)
	if !strings.Contains(string(encoded), `"images":[{"mime":"image/png","bytes":`) || strings.Contains(string(encoded), "iVBOR") {
		t.Fatalf("JSON: %s", encoded)
	}
	if _, kept, _ := s.Lookup(res.RunID, Offsets{}); len(kept.Images) != 2 || !bytes.Equal(kept.Images[1].Data, img.Data) {
		t.Fatal("history lost the images")
	}
	res = s.Execute(t.Context(), ExecRequest{Code: code + "\nimport os\nos._exit(3)"})
	mustFail(t, res, msgCrashed, StateCleared)
	if len(res.Images) != 0 {
		t.Fatalf("a crashed run kept %d images", len(res.Images))
	}
	if res = s.Execute(t.Context(), ExecRequest{Code: "1"}); !res.Success || len(res.Images) != 0 {
		t.Fatalf("the next run: success=%v, %d images", res.Success, len(res.Images))
	}
}

// TestBadImageFrameKillsWorker: an image frame that breaks the protocol is a crash
// that says why.
func TestBadImageFrameKillsWorker(t *testing.T) {
	script := `read n digest <&3; head -c $n <&3 >/dev/null
echo '{"type":"ready","protocol":1,"pid":'$$'}' >&4; read line <&3
echo '{"type":"image","id":"x","index":1,"mime":"image/png","bytes":9,"width":1,"height":1,"offset":0,"data":"iVBORw0KGgoA"}' >&4; sleep 30`
	m := newTestManager(t, fakePython(t, script))
	res := m.Default().Execute(t.Context(), ExecRequest{Code: "1"})
	mustFail(t, res, msgCrashed, StateCleared)
	if !strings.Contains(*res.Error, "image 1") {
		t.Fatalf("error does not say which frame was bad: %q", *res.Error)
	}
}
