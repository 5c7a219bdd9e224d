package artifacts_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/artifacts"
)

func TestForwardValue(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	doc := createBytes(t, s, ownerA, []byte("{ \"a\" : [1, 2.50, 1e3, \"x<y&z\", {\"é\": null}] ,\n \"b\": true }\n"), artifacts.FormatJSON)
	text := "line \"one\"\n<tag> & ж\x01"
	txt := createBytes(t, s, ownerA, []byte(text), artifacts.FormatText)
	bin := []byte{0, 1, 2, 0xff, 0xfe, 'a'}
	binRef := createBytes(t, s, ownerA, bin, artifacts.FormatBinary)

	v, err := s.ForwardValue(ctx, ownerA, doc.ID, "json")
	if err != nil || string(v) != `{"a":[1,2.50,1e3,"x<y&z",{"é":null}],"b":true}` {
		t.Errorf("json = %s, %v", v, err)
	}
	if v2, err := s.ForwardValue(ctx, ownerA, doc.ID, ""); err != nil || !bytes.Equal(v, v2) {
		t.Errorf("default format = %s, %v", v2, err)
	}

	v, err = s.ForwardValue(ctx, ownerA, txt.ID, "text")
	var got string
	if err != nil || json.Unmarshal(v, &got) != nil || got != text {
		t.Errorf("text = %s, %v", v, err)
	}
	if !json.Valid(v) || !strings.Contains(string(v), "<tag> &") {
		t.Errorf("text not compact JSON without HTML escapes: %s", v)
	}
	// A JSON artifact forwarded as text is its text.
	v, err = s.ForwardValue(ctx, ownerA, doc.ID, "text")
	if err != nil || json.Unmarshal(v, &got) != nil || !strings.HasPrefix(got, "{ \"a\"") {
		t.Errorf("json as text = %s, %v", v, err)
	}

	v, err = s.ForwardValue(ctx, ownerA, binRef.ID, "base64")
	if err != nil || string(v) != `"`+base64.StdEncoding.EncodeToString(bin)+`"` {
		t.Errorf("base64 = %s, %v", v, err)
	}

	_, err = s.ForwardValue(ctx, ownerA, binRef.ID, "text")
	wantErr(t, err, artifacts.ErrForwardText)
	if err.Error() != "Artifact is not UTF-8 text" {
		t.Errorf("message = %q", err)
	}
	_, err = s.ForwardValue(ctx, ownerA, binRef.ID, "json")
	wantErr(t, err, artifacts.ErrForwardJSON)
	_, err = s.ForwardValue(ctx, ownerA, txt.ID, "json")
	wantErr(t, err, artifacts.ErrForwardJSON)
	if err.Error() != "Artifact is not valid bounded JSON" {
		t.Errorf("message = %q", err)
	}
	deep := strings.Repeat("[", artifacts.MaxJSONDepth+1) + strings.Repeat("]", artifacts.MaxJSONDepth+1)
	deepRef := createBytes(t, s, ownerA, []byte(deep), artifacts.FormatText)
	_, err = s.ForwardValue(ctx, ownerA, deepRef.ID, "json")
	wantErr(t, err, artifacts.ErrForwardJSON)
	for _, f := range []string{"binary", "hex", "JSON"} {
		_, err = s.ForwardValue(ctx, ownerA, doc.ID, f)
		wantErr(t, err, artifacts.ErrForwardFormat)
		if err.Error() != "Forward format must be json, text or explicit base64" {
			t.Errorf("message = %q", err)
		}
	}
}

func TestForwardLimit(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	at := createBytes(t, s, ownerA, bytes.Repeat([]byte("a"), artifacts.MaxForwardBytes), artifacts.FormatText)
	over := createBytes(t, s, ownerA, bytes.Repeat([]byte("a"), artifacts.MaxForwardBytes+1), artifacts.FormatText)
	v, err := s.ForwardValue(ctx, ownerA, at.ID, "text")
	if err != nil || len(v) != artifacts.MaxForwardBytes+2 {
		t.Errorf("512 KiB: %d bytes, %v", len(v), err)
	}
	for _, f := range []string{"json", "text", "base64"} {
		_, err = s.ForwardValue(ctx, ownerA, over.ID, f)
		wantErr(t, err, artifacts.ErrForwardTooLarge)
		if err.Error() != "Artifact forwarding limit is 512 KiB; save the file or explicitly create a smaller artifact" {
			t.Errorf("message = %q", err)
		}
	}
}

// TestForwardPlacesTheArtifactAmongTheArguments: the call receives the other
// arguments and the artifact under its argument name, which wins a clash; a value
// the store refuses makes no call.
func TestForwardPlacesTheArtifactAmongTheArguments(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	doc := createBytes(t, s, ownerA, []byte(`{"k": [1, 2]}`), artifacts.FormatJSON)
	var got json.RawMessage
	call := func(_ context.Context, arguments json.RawMessage) (json.RawMessage, error) {
		got = arguments
		return json.RawMessage(`{"content":[]}`), nil
	}
	req := artifacts.ForwardRequest{ID: doc.ID, Argument: "data", Arguments: map[string]json.RawMessage{
		"mode": json.RawMessage(`"append"`), "data": json.RawMessage(`"loses the clash"`),
	}}
	out, err := s.Forward(ctx, ownerA, req, call)
	if err != nil || string(out) != `{"content":[]}` {
		t.Fatalf("Forward = %s, %v", out, err)
	}
	if string(got) != `{"data":{"k":[1,2]},"mode":"append"}` {
		t.Fatalf("the call received %s", got)
	}
	got = nil
	req.Format = "base64x"
	if _, err := s.Forward(ctx, ownerA, req, call); err == nil || got != nil {
		t.Fatalf("a refused format made the call (err %v, arguments %s)", err, got)
	}
}
