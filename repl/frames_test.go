package repl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// dataFrames are frames whose data member decodeDataFrame may take apart, and
// lines that look like them but are not what they seem.
func dataFrames() []string {
	b64 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0, 0xfb, 0xff, 'x'}, 2000))
	long := strings.Repeat("A", minDataScan)
	return []string{
		`{"type":"rpc","id":"i","run_id":"r","op":"artifact.append","params":{"upload_id":"u","offset":0},"data":"` + b64 + `"}` + "\n",
		`{"type":"image","id":"r","index":0,"mime":"image/png","bytes":6000,"width":1,"height":1,"offset":0,"data":"` + b64 + `"}` + "\n",
		`{"type":"rpc","data":"AAAA","params":{},"data":"` + b64 + `"}` + "\n", // two data members: split at the first, it is left to json.Unmarshal
		`{"type":"rpc" ,"data":"` + b64 + `"}`,                                            // whitespace, no newline
		`{ "type" : "rpc","params":{"s":"x\",\"data\":\"y"},"data":"` + b64 + `"}` + "\n", // the key inside a string
		`{,"data":"` + b64 + `"}` + "\n",                                                  // no member before data
		`{ ,"data":"` + b64 + `"}` + "\n",
		`{"type":"rpc","params":{"s":"open,"data":"` + b64 + `"}` + "\n", // an unclosed string before it
		`{"type":"rpc","data":"` + b64[:100] + "\r" + b64[100:] + `"}` + "\n",
		`{"type":"rpc","data":"` + b64[:100] + `\n` + b64[100:] + `"}` + "\n", // an escape: base64 would refuse it
		`{"type":"rpc","data":"` + b64[:len(b64)-1] + `"}` + "\n",             // bad padding
		`{"type":"rpc","data":"` + long + `"}` + "\n",
		`{"type":"rpc","data":"` + long + `A"}` + "\n",
		`{"type":"rpc","data":"` + b64 + `"}}` + "\n",
		`{"type":"rpc","data":"` + b64 + `" }` + "\n",
		`{"type":"rpc","data":"` + b64 + `"}` + "\n\n",
		`[{"type":"rpc","data":"` + b64 + `"}` + "\n",
		`{"type":1,"data":"` + b64 + `"}` + "\n", // a type error
		`{"type":"rpc"} {"x":1,"data":"` + b64 + `"}` + "\n",
		`{"type":"rpc","params":[1,2,{"a":null}],"data":"` + b64 + `"}` + "\n",
	}
}

// TestDecodeDataFrameIsUnmarshal: a frame decoded around its data member is the
// frame json.Unmarshal decodes, and a line that is not such a frame is left to
// json.Unmarshal. The frames the worker sends with data (an upload's chunk, an
// image's) are taken apart.
func TestDecodeDataFrameIsUnmarshal(t *testing.T) {
	for i, line := range dataFrames() {
		checkDataFrame(t, []byte(line))
		if _, ok := decodeDataFrame([]byte(line)); i < 2 && !ok {
			t.Errorf("frame %d was not taken apart: %.120q", i, line)
		}
	}
}

// TestDecodeDataFrameMutated: the frames of dataFrames with bytes replaced,
// inserted or removed, many times over and most often around the data member,
// decode as json.Unmarshal decodes them (a fuzzer rarely reaches lines this long).
func TestDecodeDataFrameMutated(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	alphabet := []byte(`{}[],:"\ ` + "\r\n\t" + `aAz09+/=-.eEtrufalsn`)
	taken := 0
	for _, seed := range dataFrames() {
		for range 400 {
			line := []byte(seed)
			for range 1 + rng.IntN(3) {
				at := rng.IntN(len(line) + 1)
				if i := bytes.LastIndex(line, dataMember); i >= 0 && rng.IntN(2) == 0 {
					at = max(0, min(len(line), i-12+rng.IntN(24))) // near the data member
				} else if rng.IntN(3) == 0 {
					at = max(0, len(line)-rng.IntN(6)) // near the end
				}
				c := alphabet[rng.IntN(len(alphabet))]
				switch rng.IntN(3) {
				case 0:
					line = append(line[:at], append([]byte{c}, line[at:]...)...)
				case 1:
					if at < len(line) {
						line[at] = c
					}
				default:
					if at < len(line) {
						line = append(line[:at], line[at+1:]...)
					}
				}
			}
			checkDataFrame(t, line)
			if _, ok := decodeDataFrame(line); ok {
				taken++
			}
		}
	}
	if taken == 0 {
		t.Fatal("no mutated frame was taken apart: the test checks nothing")
	}
}

// FuzzDecodeDataFrame: whatever the line, decodeDataFrame decodes it as
// json.Unmarshal does, or leaves it to json.Unmarshal.
func FuzzDecodeDataFrame(f *testing.F) {
	for _, line := range dataFrames() {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkDataFrame(t, line)
	})
}

func checkDataFrame(t *testing.T, line []byte) {
	t.Helper()
	original := bytes.Clone(line)
	got, ok := decodeDataFrame(line)
	if !bytes.Equal(line, original) {
		t.Fatalf("decodeDataFrame changed the line %.120q", original)
	}
	if !ok {
		return
	}
	var want inFrame
	if err := json.Unmarshal(line, &want); err != nil {
		t.Fatalf("decodeDataFrame decoded %.120q, which json.Unmarshal refuses: %v", line, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%.120q: decoded as\n%+v\nwant\n%+v", line, got, want)
	}
}

// TestRPCResultLineIsTheFramesEncoding: a reply assembled around its result is
// the frame json.Marshal writes for it, and a result that is not valid JSON on
// one line, an error or an id that needs escaping go to json.Marshal.
func TestRPCResultLineIsTheFramesEncoding(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	for _, result := range []string{
		`{"content":[{"type":"text","text":"x\n\u003c"}],"structuredContent":{"text":"x"},"isError":false}`,
		`{"servers":["fx","gh"]}`, `[1,2.5,null]`, `"s"`, `{}`,
	} {
		reply := rpcResultFrame{Type: "rpc_result", ID: id, Result: json.RawMessage(result)}
		got, ok := resultLine(reply)
		want, err := json.Marshal(reply)
		if !ok || err != nil || string(got) != string(want) {
			t.Errorf("resultLine(%s) = %s, %v; json.Marshal writes %s", result, got, ok, want)
		}
	}
	for _, reply := range []rpcResultFrame{
		{Type: "rpc_result", ID: id, Result: json.RawMessage("{\n}")},
		{Type: "rpc_result", ID: id, Result: json.RawMessage(`{"a":`)},
		{Type: "rpc_result", ID: id, Error: "MCP transport unavailable"},
		{Type: "rpc_result", ID: `a"b`, Result: json.RawMessage(`{}`)},
	} {
		if line, ok := resultLine(reply); ok {
			t.Errorf("resultLine(%#v) = %s, want it left to json.Marshal", reply, line)
		}
	}
}

// TestRPCResultLineMeansWhatJSONMarshalWrites: for random results as an op or a
// downstream server encodes them (compact or spaced, with raw or escaped HTML
// characters and line separators), a reply assembled around the result is one
// line that decodes to what json.Marshal's frame decodes to.
func TestRPCResultLineMeansWhatJSONMarshalWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 5))
	for i := range 3000 {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(i%2 == 0)
		if i%3 == 0 {
			enc.SetIndent("", " ")
		}
		if err := enc.Encode(randomValue(rng, 4)); err != nil {
			t.Fatal(err)
		}
		result := bytes.TrimRight(buf.Bytes(), "\n")
		reply := rpcResultFrame{Type: "rpc_result", ID: "0123456789abcdef0123456789abcdef", Result: result}
		want, err := json.Marshal(reply)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := resultLine(reply)
		if !ok {
			if !bytes.ContainsAny(result, "\n") {
				t.Fatalf("resultLine declined %s", result)
			}
			continue
		}
		var g, w any
		if bytes.ContainsAny(got, "\r\n") || json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil || !reflect.DeepEqual(g, w) {
			t.Fatalf("resultLine = %s; json.Marshal writes %s", got, want)
		}
	}
}

// randomValue is a random JSON value at most depth deep, with strings that need
// escaping.
func randomValue(rng *rand.Rand, depth int) any {
	kind := rng.IntN(6)
	if depth == 0 {
		kind %= 4
	}
	str := func() string {
		parts := []string{"a", "<", ">", "&", `"`, `\`, "\n", "\x01", "é", "\u2028", "😀", " "}
		var s strings.Builder
		for range rng.IntN(6) {
			s.WriteString(parts[rng.IntN(len(parts))])
		}
		return s.String()
	}
	switch kind {
	case 0:
		return nil
	case 1:
		return []float64{0, -1, 1.5, 1e21, 1e-7}[rng.IntN(5)]
	case 2:
		return rng.IntN(2) == 0
	case 3:
		return str()
	case 4:
		m := map[string]any{}
		for range rng.IntN(4) {
			m[str()] = randomValue(rng, depth-1)
		}
		return m
	default:
		var a []any
		for range rng.IntN(4) {
			a = append(a, randomValue(rng, depth-1))
		}
		return a
	}
}
