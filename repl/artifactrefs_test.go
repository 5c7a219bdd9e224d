package repl

import (
	"encoding/json"
	"strings"
	"testing"
)

// The worker's artifact references are decoded once, where its result frame enters
// the server, and a result encoded again carries them byte for byte as the worker
// sent them (the store's members, in its order; an image's own after them): typing
// them changes nothing a client sees.
func TestArtifactRefsKeepTheirBytes(t *testing.T) {
	ref := func(id string) string {
		return `{"id":"` + id + `","size":1048576,"format":"text","sha256":"` + strings.Repeat("ab", 32) +
			`","lifetime":"server","eviction":"oldest-first"}`
	}
	image := strings.TrimSuffix(ref("i"), "}") + `,"mime":"image/png","width":640,"height":480,"reason":"more than 8 images in one run"}`
	frame := `{"type":"result","id":"r","result":{"success":true,"stdout":"","stderr":"","return_value":null,"error":null,` +
		`"artifact":` + ref("v") + `,"output_artifacts":{"stdout":` + ref("o") + `},"image_artifacts":[` + image + `]}}`
	f, err := newFrameReader(strings.NewReader(frame + "\n")).next()
	if err != nil {
		t.Fatal(err)
	}
	res := f.Result.result()
	res.bound(PreviewLimit)
	if res.Artifact == nil || res.Artifact.ID != "v" || res.OutputArtifacts.Stdout.Size != 1048576 || res.ImageArtifacts[0].Width != 640 {
		t.Fatalf("references not decoded: %+v %+v %+v", res.Artifact, res.OutputArtifacts, res.ImageArtifacts)
	}
	encoded, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"artifact":` + ref("v"), `"output_artifacts":{"stdout":` + ref("o") + `}`, `"image_artifacts":[` + image + `]`} {
		if !strings.Contains(string(encoded), want) {
			t.Errorf("the encoded result lacks %s:\n%s", want, encoded)
		}
	}
}

// What is not a reference (no id, or more text than a reference holds) is dropped
// as the result is bounded, never handed on for the text form to misname.
func TestResultDropsWhatIsNoRef(t *testing.T) {
	long := strings.Repeat("x", maxArtifactRefBytes+1)
	frame := `{"type":"result","id":"r","result":{"success":true,"artifact":{},` +
		`"output_artifacts":{"stdout":{"id":"` + long + `"},"stderr":null},` +
		`"image_artifacts":[{"size":3},{"id":"i","reason":"` + long + `"},{"id":"kept","mime":"image/png"}]}}`
	f, err := newFrameReader(strings.NewReader(frame + "\n")).next()
	if err != nil {
		t.Fatal(err)
	}
	res := f.Result.result()
	res.bound(PreviewLimit)
	if res.Artifact != nil || res.OutputArtifacts != nil || len(res.ImageArtifacts) != 1 || res.ImageArtifacts[0].ID != "kept" {
		t.Fatalf("kept %+v, %+v, %+v", res.Artifact, res.OutputArtifacts, res.ImageArtifacts)
	}
}
