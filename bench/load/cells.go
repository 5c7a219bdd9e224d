package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// kind is what a cell does, and what its answer must be.
type kind int

const (
	kindValue    kind = iota // an int the client's own variable makes
	kindPrint                // a line of stdout
	kindError                // a ValueError
	kindImage                // display() of PNG bytes: an image block
	kindStart                // python_start, then python_run until the result
	kindArtifact             // a print past the stream bound: the whole stdout an artifact
	kindString               // a str value
)

// cycle is the mix: every tenth cell of a client is each of these, in this order.
var cycle = []kind{kindValue, kindPrint, kindValue, kindError, kindImage, kindValue, kindStart, kindPrint, kindArtifact, kindString}

// kindNames name the kinds in the report.
var kindNames = map[kind]string{kindValue: "value", kindPrint: "print", kindError: "error", kindImage: "image",
	kindStart: "python_start + python_run", kindArtifact: "output artifact", kindString: "str value"}

// artifactChars is printed by an artifact cell: past the 50,000-byte stream bound.
const artifactChars = 70_000

// busyText starts the refusal a session that runs a cell gives another.
const busyText = "A cell is already running"

// pngBase64 is a 4x4 PNG image, made once.
var pngBase64 = func() string {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for x := range 4 {
		for y := range 4 {
			img.Set(x, y, color.RGBA{R: uint8(60 * x), G: uint8(60 * y), B: 200, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}()

// caller is one MCP client and the Python session its cells run in ("" for the
// default session).
type caller struct {
	mcp     *mcp.ClientSession
	client  int // the client's number: its cells' own names
	session string
	busy    int // busy refusals retried
	// unsaved counts the outputs past the stream bound the store did not keep (the
	// cut's marker says why), and why is the first such marker.
	unsaved int
	why     string
}

// answer is what a cell's result says, from its structuredContent and its content.
type answer struct {
	IsError     bool    `json:"-"`
	Success     bool    `json:"success"`
	ReturnValue *string `json:"return_value"`
	Stdout      string  `json:"stdout"`
	Error       *string `json:"error"`
	Truncated   struct {
		Stdout bool `json:"stdout"`
	} `json:"truncated"`
	OutputArtifacts struct {
		Stdout struct {
			ID string `json:"id"`
		} `json:"stdout"`
	} `json:"output_artifacts"`
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	Server    struct {
		SessionID string `json:"session_id"`
	} `json:"server"` // python_health's default session
	// Done: a python_run answer with the run's result (it has `success`).
	Done   bool `json:"-"`
	Images int  `json:"-"` // image blocks in the content
}

// cell runs the client's i-th cell and returns how long the client waited for its
// answer (busy refusals and their retries included), or why the answer is wrong; err
// is a failure to get an answer at all.
func (c *caller) cell(ctx context.Context, i int) (took time.Duration, wrong string, err error) {
	k := cycle[(i+c.client)%len(cycle)]
	tag := fmt.Sprintf("c%d-%d", c.client, i)
	start := time.Now()
	var a answer
	switch k {
	case kindStart:
		a, err = c.startAndRun(ctx, fmt.Sprintf("sum(range(%d))", i))
	default:
		a, err = c.call(ctx, "execute_python", map[string]any{"code": code(k, c.client, i, tag)})
	}
	took = time.Since(start)
	if err != nil {
		return took, "", err
	}
	wrong = check(k, i, tag, a)
	if k == kindArtifact && wrong == "" && a.OutputArtifacts.Stdout.ID == "" {
		c.unsaved++
		if i := strings.Index(a.Stdout, "[... "); i >= 0 && c.why == "" {
			c.why, _, _ = strings.Cut(a.Stdout[i:], "\n")
		}
	}
	return took, wrong, nil
}

// code is the Python of a cell of kind k.
func code(k kind, client, i int, tag string) string {
	switch k {
	case kindValue:
		return fmt.Sprintf("v_c%d = %d\nv_c%d * 7", client, i, client)
	case kindPrint:
		return fmt.Sprintf("print(%q)", tag)
	case kindError:
		return fmt.Sprintf("raise ValueError(%q)", tag)
	case kindImage:
		return fmt.Sprintf("import base64\ndisplay(base64.b64decode(%q))", pngBase64)
	case kindArtifact:
		return fmt.Sprintf("print('x' * %d + %q)", artifactChars, tag)
	default:
		return strconv.Quote(tag)
	}
}

// check says what is wrong with a's answer to the cell, or "".
func check(k kind, i int, tag string, a answer) string {
	value := func() string {
		if a.ReturnValue == nil {
			return "<none>"
		}
		return *a.ReturnValue
	}
	want := ""
	ok := false
	switch k {
	case kindValue:
		want = strconv.Itoa(i * 7)
		ok = a.Success && value() == want
	case kindStart:
		want = strconv.Itoa(i * (i - 1) / 2)
		ok = a.Success && value() == want
	case kindString:
		want = strconv.Quote(tag) // previews show a str as JSON does
		ok = a.Success && value() == want
	case kindPrint:
		want = tag + "\n"
		ok = a.Success && a.Stdout == want
	case kindError:
		want = "ValueError: " + tag
		ok = a.IsError && !a.Success && a.Error != nil && strings.Contains(*a.Error, want)
	case kindImage:
		want = "one image block"
		ok = a.Success && a.Images == 1
	case kindArtifact:
		// The complete output is an artifact, or the marker in the cut says why not (the
		// store refused it: that is an answer too, if not the one hoped for).
		want = "a cut stdout ending in " + tag + " and its artifact, or a marker that says why it was not saved"
		saved := a.OutputArtifacts.Stdout.ID != "" || strings.Contains(a.Stdout, "the complete output was not saved: ")
		ok = a.Success && a.Truncated.Stdout && saved && strings.HasSuffix(a.Stdout, tag+"\n")
	}
	if ok {
		return ""
	}
	if i := strings.Index(a.Stdout, "[... "); i >= 0 {
		a.Stdout = a.Stdout[i:] // the marker, not 20,000 bytes of x
	}
	got, _ := json.Marshal(a)
	return fmt.Sprintf("%s cell %s: want %s, got %.300s", kindNames[k], tag, want, got)
}

// call calls a tool in the client's session, retrying a busy refusal.
func (c *caller) call(ctx context.Context, tool string, args map[string]any) (answer, error) {
	if c.session != "" {
		args["session_id"] = c.session
	}
	for {
		res, err := c.mcp.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return answer{}, fmt.Errorf("%s: %w", tool, err)
		}
		a, err := decode(res)
		if err != nil {
			return answer{}, fmt.Errorf("%s: %w", tool, err)
		}
		if a.IsError && a.Error != nil && strings.HasPrefix(*a.Error, busyText) {
			c.busy++
			if err := sleep(ctx, 2*time.Millisecond); err != nil {
				return answer{}, err
			}
			continue
		}
		return a, nil
	}
}

// startAndRun starts code with python_start and polls python_run for its result.
func (c *caller) startAndRun(ctx context.Context, code string) (answer, error) {
	started, err := c.call(ctx, "python_start", map[string]any{"code": code})
	if err != nil {
		return answer{}, err
	}
	if started.RunID == "" {
		got, _ := json.Marshal(started)
		return answer{}, fmt.Errorf("python_start gave no run_id: %.300s", got)
	}
	for {
		a, err := c.call(ctx, "python_run", map[string]any{"run_id": started.RunID, "wait": 10})
		if err != nil || a.Done {
			return a, err
		}
	}
}

func decode(res *mcp.CallToolResult) (answer, error) {
	var a answer
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return a, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return a, fmt.Errorf("structuredContent is no object: %.200s", data)
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return a, err
	}
	_, a.Done = fields["success"]
	a.IsError = res.IsError
	for _, block := range res.Content {
		if _, ok := block.(*mcp.ImageContent); ok {
			a.Images++
		}
	}
	return a, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
