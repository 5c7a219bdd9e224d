package server

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/internal/utf8cut"
)

// encodedRange is an artifact range with its content encoded, as the store's Read
// gives it: what artifact_read presented before a base64 range kept its bytes.
type encodedRange struct {
	artifacts.Range
	identity
}

// rangeOf is the range of data at offset 7 of a larger artifact, as the tool makes
// it for encoding, and the same range with its content encoded.
func rangeOf(data []byte, encoding string) (artifactRange, encodedRange) {
	ref := artifacts.Ref{ID: "0b7e1ad4-4b9c-4f6e-9b1d-5d0c3a1f2e9a", Size: int64(len(data)) + 100, Format: artifacts.FormatBinary,
		SHA256: strings.Repeat("ab", 32), Lifetime: artifacts.Lifetime, Eviction: artifacts.Eviction}
	id := identity{ServerID: "server-1", SessionID: "session-1", Generation: 3}
	r := artifacts.Range{Artifact: ref, Offset: 7, Length: int64(len(data)), Encoding: encoding, HasMore: true}
	enc := encodedRange{Range: r, identity: id}
	switch encoding {
	case "base64":
		enc.Content = base64.StdEncoding.EncodeToString(data)
		return artifactRange{Range: r, identity: id, data: data}, enc
	case "hex":
		r.Content = hex.EncodeToString(data)
	default:
		r.Content = string(data)
	}
	enc.Content = r.Content
	return artifactRange{Range: r, identity: id}, enc
}

// TestRangeStructuredForm: artifact_read's structured form is present's for any
// value (contract §3.4): structuredContent is the range's JSON, the text block the
// same JSON, cut at 8 KiB with the note and text_truncated when longer. Made from
// the bytes of a base64 range and from a prefix of the content for the text, it
// must equal what encoding the whole range and cutting gives, at and around the
// cut and with characters of every width and escape at it.
func TestRangeStructuredForm(t *testing.T) {
	cases := map[string][][]byte{"base64": nil, "hex": nil, "text": nil}
	random := bytes.Repeat([]byte{0, 0xff, 0x3e, 0x80, 0x7f, 0x22}, 65536/6+1)[:65536]
	for _, n := range []int{0, 1, 2, 3, 100, 5900, 5999, 6000, 6001, 6100, 8191, 8192, 8193, 65535, 65536} {
		cases["base64"] = append(cases["base64"], random[:n])
		cases["hex"] = append(cases["hex"], random[:min(n, 4100)])
	}
	for _, s := range []string{"", "a", strings.Repeat("a", 7900), strings.Repeat("a", 8192), strings.Repeat("a", 8193),
		"a" + strings.Repeat("Ж", 5000), strings.Repeat("Ж", 5000), "ab" + strings.Repeat("€", 4000), strings.Repeat("😀", 3000),
		strings.Repeat("\x00", 1400), strings.Repeat("\x00", 10000), strings.Repeat(`<&>"\`, 3000), strings.Repeat("Ж", 32768)} {
		cases["text"] = append(cases["text"], []byte(s))
	}
	for encoding, datas := range cases {
		for _, data := range datas {
			t.Run(fmt.Sprintf("%s/%d", encoding, len(data)), func(t *testing.T) {
				r, enc := rangeOf(data, encoding)
				structured, _ := json.Marshal(enc)
				wantText := string(structured)
				if len(wantText) > textLimit {
					wantText = utf8cut.Prefix(wantText, textLimit) + textCutNote
					structured = withField(structured, "text_truncated", true)
				}
				res := presentStructured(t, r)
				if got := text(t, res); got != wantText {
					t.Errorf("text block differs from the range's JSON cut:\n got %.300q...\nwant %.300q...", got, wantText)
				}
				var got, want any
				raw, _ := json.Marshal(res.StructuredContent)
				json.Unmarshal(raw, &got)
				json.Unmarshal(structured, &want)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("structuredContent %.300s...\nwant %.300s...", raw, structured)
				}
				if res.IsError {
					t.Error("a range presented as an error")
				}
				// The whole range, as any other encoding of the value writes it.
				whole, _ := json.Marshal(r)
				json.Unmarshal(whole, &got)
				json.Unmarshal(must(json.Marshal(enc)), &want)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("json.Marshal of the range: %.300s...", whole)
				}
			})
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestRangeTextFormFromBytes: a text-form client reads a base64 range as before its
// bytes were kept instead of its base64: as many whole groups of four characters as
// fit, and a footer with the length they hold.
func TestRangeTextFormFromBytes(t *testing.T) {
	room := modelTextLimit - 400
	random := bytes.Repeat([]byte{1, 2, 3, 0xfe, 0xfd}, 65536/5+1)
	for _, n := range []int{0, 5, room / 4 * 3, room/4*3 + 1, room/4*3 + 2, room/4*3 + 3, 65536} {
		r, enc := rangeOf(random[:n], "base64")
		content, length := enc.Content, enc.Length
		if len(content) > room {
			content = content[:room/4*4]
			decoded, _ := base64.StdEncoding.DecodeString(content)
			length = int64(len(decoded))
		}
		next := "more from offset " + fmt.Sprint(enc.Offset+length)
		want := reply{content, fmt.Sprintf("[artifact %s, bytes %d to %d of %s (base64); %s]",
			enc.Artifact.ID, enc.Offset, enc.Offset+length, count(enc.Artifact.Size), next)}
		res := presentAs(t, formText, r)
		if got := textBlocks(t, res); got != want.text() {
			t.Errorf("%d bytes: text\n%.200q...\nwant\n%.200q...", n, got, want)
		}
		if res.StructuredContent != nil || res.IsError {
			t.Errorf("%d bytes: a text-form range with structuredContent or isError", n)
		}
	}
}
