package repl

import (
	"bytes"
	"fmt"

	"github.com/iota-uz/repl-mcp/internal/artifactref"
)

// Image is one image a run showed (display(), matplotlib; docs/contract.md §4.1,
// §7.9). Its metadata is the result's `images` entry; its bytes travel beside the
// result, never in its JSON, and become an MCP image block when it is presented.
type Image struct {
	MIME   string `json:"mime"`
	Bytes  int    `json:"bytes"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	// Omitted says why the image's bytes are not in this reply (the session's history
	// no longer keeps them, say); they are then nil.
	Omitted string `json:"omitted,omitempty"`
	Data    []byte `json:"-"`
}

// ImageArtifact is an image past a run's bounds, which became an artifact
// (docs/contract.md §7.9): its reference, with the image's type and size and why it
// was not shown.
type ImageArtifact struct {
	artifactref.Ref
	MIME   string `json:"mime"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Reason string `json:"reason"`
}

// signed reports whether data starts with a magic number of mime, one of the image
// types a worker may send; any other mime is no image.
func signed(mime string, data []byte) bool {
	switch mime {
	case "image/png":
		return bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n"))
	case "image/jpeg":
		return bytes.HasPrefix(data, []byte("\xff\xd8\xff"))
	case "image/gif":
		return bytes.HasPrefix(data, []byte("GIF87a")) || bytes.HasPrefix(data, []byte("GIF89a"))
	case "image/webp":
		return len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP"
	}
	return false
}

// imageMIME reports the image types a worker may send.
func imageMIME(mime string) bool {
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// imageCollector assembles the images of the run the worker is executing from its
// image frames (worker/PROTOCOL.md, Images), within the worker's bounds, checked
// again: at most maxImages, maxImageBytes together, frames of at most
// imageChunkBytes, in order. Only the frame reader uses it. A frame of another run
// starts over: what an earlier run left unclaimed (it never sent its result) is
// dropped with it.
type imageCollector struct {
	runID   string
	done    []Image
	total   int
	partial *Image // the image whose frames are arriving
}

// add takes one image frame; an error is a protocol violation.
func (c *imageCollector) add(f inFrame) error {
	if f.ID != c.runID {
		*c = imageCollector{runID: f.ID}
	}
	if f.Index != len(c.done) {
		return fmt.Errorf("worker sent image %d of run %s while image %d was due", f.Index, f.ID, len(c.done))
	}
	if len(f.Data) == 0 || len(f.Data) > imageChunkBytes {
		return fmt.Errorf("worker sent an image frame of %d bytes (1..%d)", len(f.Data), imageChunkBytes)
	}
	img := c.partial
	if img == nil {
		switch {
		case f.Offset != 0:
			return fmt.Errorf("worker started image %d at offset %d", f.Index, f.Offset)
		case !imageMIME(f.MIME):
			return fmt.Errorf("worker sent an image of type %q", f.MIME)
		case f.Width <= 0 || f.Height <= 0:
			return fmt.Errorf("worker sent an image of %dx%d pixels", f.Width, f.Height)
		case len(c.done) >= maxImages:
			return fmt.Errorf("worker sent more than %d images in one run", maxImages)
		case f.Bytes <= 0 || c.total+f.Bytes > maxImageBytes:
			return fmt.Errorf("worker sent an image of %d bytes after %d (at most %d in one run)", f.Bytes, c.total, maxImageBytes)
		}
		img = &Image{MIME: f.MIME, Bytes: f.Bytes, Width: f.Width, Height: f.Height, Data: make([]byte, 0, f.Bytes)}
		c.partial = img
	} else if f.MIME != img.MIME || f.Bytes != img.Bytes || f.Width != img.Width || f.Height != img.Height || f.Offset != len(img.Data) {
		return fmt.Errorf("worker sent a frame of image %d that does not continue it", f.Index)
	}
	if len(img.Data)+len(f.Data) > img.Bytes {
		return fmt.Errorf("worker sent more than the %d bytes of image %d", img.Bytes, f.Index)
	}
	img.Data = append(img.Data, f.Data...)
	if len(img.Data) == img.Bytes {
		if !signed(img.MIME, img.Data) {
			return fmt.Errorf("worker sent image %d as %s without its magic number", f.Index, img.MIME)
		}
		c.done = append(c.done, *img)
		c.total += img.Bytes
		c.partial = nil
	}
	return nil
}

// take hands the images of run runID to its result, whose own `images` metadata must
// list exactly them; an error is a protocol violation. The collector is empty after.
func (c *imageCollector) take(runID string, listed []Image) ([]Image, error) {
	var done []Image
	partial := false
	if c.runID == runID {
		done, partial = c.done, c.partial != nil
	}
	*c = imageCollector{}
	if partial {
		return nil, fmt.Errorf("worker sent the result of run %s before its image %d was complete", runID, len(done))
	}
	if len(listed) != len(done) {
		return nil, fmt.Errorf("worker's result lists %d images, its frames carried %d", len(listed), len(done))
	}
	for i, img := range listed {
		got := done[i]
		if img.MIME != got.MIME || img.Bytes != got.Bytes || img.Width != got.Width || img.Height != got.Height || img.Omitted != "" {
			return nil, fmt.Errorf("worker's result describes image %d unlike its frames", i)
		}
	}
	return done, nil
}

// imageBytes is how many image bytes r holds.
func (r *Result) imageBytes() int {
	n := 0
	for _, img := range r.Images {
		n += len(img.Data)
	}
	return n
}

// retainImages keeps the image bytes of the newest results in history, oldest first,
// within historyImageBytes; an older result is replaced by a copy whose images are
// metadata, each saying why. A result already handed out is never changed: a caller
// may be presenting it.
func retainImages(history []*Result) {
	kept := 0
	for i := len(history) - 1; i >= 0; i-- {
		n := history[i].imageBytes()
		if n == 0 {
			continue
		}
		if kept+n <= historyImageBytes {
			kept += n
			continue
		}
		stripped := *history[i]
		stripped.Images = make([]Image, len(history[i].Images))
		for j, img := range history[i].Images {
			if img.Data != nil {
				img.Data, img.Omitted = nil, msgImageNotRetained
			}
			stripped.Images[j] = img
		}
		history[i] = &stripped
	}
}
