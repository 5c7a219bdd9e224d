package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func testImage(size int, fill byte) repl.Image {
	data := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{fill}, size-8)...)
	return repl.Image{MIME: "image/png", Bytes: size, Width: 2, Height: 3, Data: data}
}

type presentedImage struct {
	Mime    string `json:"mime"`
	Bytes   int    `json:"bytes"`
	Omitted string `json:"omitted"`
}

func structuredImages(t *testing.T, res *mcp.CallToolResult) []presentedImage {
	t.Helper()
	var v struct{ Images []presentedImage }
	if err := json.Unmarshal(res.StructuredContent.(json.RawMessage), &v); err != nil {
		t.Fatal(err)
	}
	return v.Images
}

func TestPresentAddsImageBlocksAfterTheText(t *testing.T) {
	first, second := testImage(100, 1), testImage(2000, 2)
	res := presentStructured(t, executed(&repl.Result{Success: true, Stdout: "plotted", State: repl.StatePreserved, Images: []repl.Image{first, second}}))
	if len(res.Content) != 3 {
		t.Fatalf("want the text and two images, got %d blocks", len(res.Content))
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "plotted" {
		t.Fatalf("first block: %#v", res.Content[0])
	}
	for i, want := range []repl.Image{first, second} {
		img, ok := res.Content[i+1].(*mcp.ImageContent)
		if !ok || img.MIMEType != "image/png" || !bytes.Equal(img.Data, want.Data) {
			t.Fatalf("block %d: %#v", i+1, res.Content[i+1])
		}
	}
	encoded, _ := json.Marshal(res)
	if !strings.Contains(string(encoded), `{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo`) {
		t.Fatalf("image block on the wire: %.300s", encoded)
	}
	images := structuredImages(t, res)
	if len(images) != 2 || images[1].Bytes != 2000 || images[0].Omitted != "" {
		t.Fatalf("structured images: %+v", images)
	}
	if strings.Count(string(encoded), "iVBORw0KGgo") != 2 {
		t.Fatal("image bytes in structuredContent too")
	}
	// Values other than execution results, and results without images, are untouched.
	if res := presentStructured(t, map[string]any{"ok": true}); len(res.Content) != 1 {
		t.Fatalf("a plain value got %d blocks", len(res.Content))
	}
	if res := presentStructured(t, executed(&repl.Result{Success: true})); len(res.Content) != 1 {
		t.Fatalf("a result without images got %d blocks", len(res.Content))
	}
}

// TestPresentKeepsImagesWithinTheResultLimit: output that escapes six-fold leaves too
// little room for every image; those that do not fit are left out, and their entries in
// structuredContent say so, while the reply stays within 1,000,000 bytes.
func TestPresentKeepsImagesWithinTheResultLimit(t *testing.T) {
	nul := strings.Repeat("\x00", 50000)
	images := []repl.Image{testImage(300000, 3), testImage(200000, 4), testImage(1000, 5)}
	res := presentStructured(t, executed(&repl.Result{Success: true, Stdout: nul, Stderr: nul[:20000], State: repl.StatePreserved, Images: images}))
	encoded, _ := json.Marshal(res)
	if len(encoded)+envelopeOverhead > resultLimit {
		t.Fatalf("reply is %d bytes", len(encoded))
	}
	if len(res.Content) != 3 {
		t.Fatalf("want the text and the two images that fit, got %d blocks", len(res.Content))
	}
	if got := res.Content[2].(*mcp.ImageContent).Data; !bytes.Equal(got, images[2].Data) {
		t.Fatal("the small image after the left-out one is missing")
	}
	notes := structuredImages(t, res)
	if len(notes) != 3 || notes[0].Omitted != "" || notes[1].Omitted != msgImageLeftOut || notes[2].Omitted != "" {
		t.Fatalf("structured images: %+v", notes)
	}
	var v map[string]any
	json.Unmarshal(res.StructuredContent.(json.RawMessage), &v)
	if v["stdout"] != nul || v["success"] != true {
		t.Fatal("patching the notes lost other fields")
	}
}

func TestPresentSkipsImagesTheHistoryNoLongerKeeps(t *testing.T) {
	gone := repl.Image{MIME: "image/png", Bytes: 500, Width: 1, Height: 1, Omitted: "Image no longer retained"}
	res := presentStructured(t, executed(&repl.Result{Success: true, State: repl.StatePreserved, Images: []repl.Image{gone, testImage(50, 1)}}))
	if len(res.Content) != 2 {
		t.Fatalf("want the text and the retained image, got %d blocks", len(res.Content))
	}
	if notes := structuredImages(t, res); notes[0].Omitted != gone.Omitted || notes[1].Omitted != "" {
		t.Fatalf("structured images: %+v", notes)
	}
}

// TestTextFormCarriesImages: Claude Code and Codex read the text form, and a figure
// must reach their models there too, after the text; one left out says so in the text.
func TestTextFormCarriesImages(t *testing.T) {
	presentText := func(r *repl.Result) *mcp.CallToolResult {
		return presentAs(t, formText, executed(r))
	}
	img := testImage(100, 1)
	res := presentText(&repl.Result{Success: true, Stdout: "plotted", State: repl.StatePreserved, Images: []repl.Image{img}})
	if len(res.Content) != 3 || res.StructuredContent != nil {
		t.Fatalf("want the output, the footer and one image, no structuredContent; got %d blocks, %v", len(res.Content), res.StructuredContent)
	}
	if got, ok := res.Content[2].(*mcp.ImageContent); !ok || !bytes.Equal(got.Data, img.Data) {
		t.Fatalf("third block: %#v", res.Content[2])
	}
	if out, foot := res.Content[0].(*mcp.TextContent).Text, res.Content[1].(*mcp.TextContent).Text; out != "plotted\n" || !strings.Contains(foot, "image: png 2x3") {
		t.Fatalf("texts: %q, %q", out, foot)
	}
	big := []repl.Image{testImage(600000, 3), testImage(600000, 4)}
	res = presentText(&repl.Result{Success: true, State: repl.StatePreserved, Images: big})
	if len(res.Content) != 2 {
		t.Fatalf("want the footer and the one image that fits, got %d blocks", len(res.Content))
	}
	if tc := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(tc, msgImageLeftOut) {
		t.Fatalf("the text does not say an image was left out: %q", tc)
	}
}
