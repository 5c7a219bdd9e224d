package server

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// execution is an execution result as a tool's value (docs/contract.md §4). Its
// contract JSON, encoded once, is a structured client's structuredContent and also
// what the text form is read from: the two forms cannot say different things, and
// every field of the result reaches the text by its contract name, whichever part
// of the server or the worker fills it in.
type execution struct {
	json   []byte
	failed bool
	// polled: read back with python_run, so the footer gives the offsets to read on.
	polled bool
	// images are the images the run showed, bytes and all: content blocks of
	// their own after the text, in either form (server/images.go).
	images []repl.Image
	// repr is the trailing value as Python's repr shows it, when its preview is its
	// JSON: what the text form shows instead (repl.Result.ReturnRepr).
	repr string
	// cuts are the result's stdout and stderr with their gaps (repl.Result.Cuts), so
	// the text form's markers count against the complete streams; bgCuts are those of
	// its background output.
	cuts, bgCuts [2]repl.CutText
}

// executed is r as the value of the tool that ran it.
func executed(r *repl.Result) execution { return executionOf(r, false) }

// polledResult is r as python_run's value.
func polledResult(r *repl.Result) execution { return executionOf(r, true) }

func executionOf(r *repl.Result, polled bool) execution {
	encoded, err := json.Marshal(r)
	if err != nil {
		// A Result is strings, numbers and raw JSON the worker sent and the
		// supervisor bounded; say so rather than answer nothing.
		encoded, _ = json.Marshal(map[string]string{"error": "result could not be encoded: " + err.Error()})
		return execution{json: encoded, failed: true, polled: polled}
	}
	stdout, stderr := r.Cuts()
	bgStdout, bgStderr := r.BackgroundCuts()
	return execution{json: encoded, failed: !r.Success || r.Error != nil, polled: polled, images: r.Images, repr: r.ReturnRepr,
		cuts: [2]repl.CutText{stdout, stderr}, bgCuts: [2]repl.CutText{bgStdout, bgStderr}}
}

// execView is the part of an execution result's JSON the text is made of.
type execView struct {
	RunID       string          `json:"run_id"`
	Success     bool            `json:"success"`
	Stdout      string          `json:"stdout"`
	Stderr      string          `json:"stderr"`
	ReturnValue *string         `json:"return_value"`
	Value       json.RawMessage `json:"value"`
	Error       *string         `json:"error"`
	Truncated   struct {
		Stdout bool `json:"stdout"`
		Stderr bool `json:"stderr"`
		Return bool `json:"return"`
	} `json:"truncated"`
	State                    string       `json:"state"`
	StateReset               bool         `json:"state_reset"`
	ExecutionMode            string       `json:"execution_mode"`
	BackgroundTasksCancelled int          `json:"background_tasks_cancelled"`
	ExitCode                 *int         `json:"exit_code"`
	Artifact                 *artifactRef `json:"artifact"`
	ArtifactError            *string      `json:"artifact_error"`
	SessionID                string       `json:"session_id"`
	Generation               uint64       `json:"generation"`
	// Where python_run's answer ends in the run's streams, when it was asked from
	// offsets.
	StdoutEnd *int64 `json:"stdout_end"`
	StderrEnd *int64 `json:"stderr_end"`

	// The fields of this round's threads and images (docs/contract.md §4.1).
	BackgroundThreads []string `json:"background_threads"`
	BackgroundOutput  *struct {
		Stdout    string `json:"stdout"`
		Stderr    string `json:"stderr"`
		Truncated bool   `json:"truncated"`
	} `json:"background_output"`
	OutputArtifacts *struct {
		Stdout *artifactRef `json:"stdout"`
		Stderr *artifactRef `json:"stderr"`
	} `json:"output_artifacts"`
	Images         []imageInfo     `json:"images"`
	ImageArtifacts []imageArtifact `json:"image_artifacts"`

	// repr is execution.repr: the value as Python shows it, "" for none.
	repr string
	// cuts are stdout and stderr with where they were cut (execution.cuts), bgCuts
	// the background output's.
	cuts, bgCuts [2]repl.CutText
}

// imageInfo is what a result says of an image the cell displayed; the image
// itself is a content block of its own.
type imageInfo struct {
	MIME   string `json:"mime"`
	Bytes  int64  `json:"bytes"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

func (im imageInfo) String() string {
	return fmt.Sprintf("%s %dx%d", strings.TrimPrefix(im.MIME, "image/"), im.Width, im.Height)
}

// imageArtifact is an image the run kept as an artifact instead of showing it,
// with the worker's reason (docs/contract.md §7.9).
type imageArtifact struct {
	artifactRef
	Reason string `json:"reason"`
}

// imageArtifactItems are the footer's items for the images not shown: one per
// reason, in order, saying how many, why, and where they are.
func imageArtifactItems(refs []imageArtifact) []string {
	var reasons []string
	byReason := map[string][]artifactRef{}
	for _, ref := range refs {
		if _, seen := byReason[ref.Reason]; !seen {
			reasons = append(reasons, ref.Reason)
		}
		byReason[ref.Reason] = append(byReason[ref.Reason], ref.artifactRef)
	}
	items := make([]string, 0, len(reasons))
	for _, reason := range reasons {
		kept := byReason[reason]
		why := ""
		if reason != "" {
			why = " (" + cutFooter(reason, footerNameMax) + ")"
		}
		items = append(items, fmt.Sprintf("%d image%s not shown%s, kept as artifact%s: %s",
			len(kept), plural(len(kept)), why, plural(len(kept)), listed(kept, artifactRef.String)))
	}
	return items
}

// artifactRef is the part of an artifact reference a footer names.
type artifactRef struct {
	ID     string `json:"id"`
	Size   int64  `json:"size"`
	Format string `json:"format"`
}

func (a artifactRef) String() string {
	return fmt.Sprintf("artifact %s (%s bytes)", a.ID, count(a.Size))
}

// The text form's bounds (docs/contract.md §3.4).
const (
	// modelTextLimit bounds the whole text a text-form client receives, in UTF-8
	// bytes, so in characters however a client counts them: under what Claude Code
	// (about 50,000) and Codex (about 48,000) keep inline, with room for Codex's
	// own prefix.
	modelTextLimit = 40000
	// footerReserve is kept free for the footer's item naming the artifact made
	// of the complete text, which is only known once the parts are cut.
	footerReserve = 256
	// Footer lists are bounded: their names, then how many more.
	footerListed   = 4
	footerNameMax  = 60
	footerErrorMax = 200
)

// parts are v's pieces, in the order the text shows them.
func (v *execView) parts() []part {
	var outputs [2]*artifactRef
	if o := v.OutputArtifacts; o != nil {
		outputs = [2]*artifactRef{o.Stdout, o.Stderr}
	}
	stdout, stderr := matching(v.cuts[0], v.Stdout), matching(v.cuts[1], v.Stderr)
	ps := []part{
		{text: stdout.Text, gaps: stdout.Gaps, what: "stdout", saved: outputs[0] != nil, all: outputs[0]},
		{label: "[stderr]", text: stderr.Text, gaps: stderr.Gaps, what: "stderr", saved: outputs[1] != nil, all: outputs[1]},
		{text: v.valueText(), what: "the value", saved: v.Artifact != nil, all: v.Artifact},
	}
	if v.Error != nil {
		ps = append(ps, part{text: *v.Error, what: "the error"})
	}
	if bg := v.BackgroundOutput; bg != nil {
		out, errs := matching(v.bgCuts[0], bg.Stdout), matching(v.bgCuts[1], bg.Stderr)
		ps = append(ps,
			part{label: "[background stdout]", text: out.Text, gaps: out.Gaps, what: "background stdout"},
			part{label: "[background stderr]", text: errs.Text, gaps: errs.Gaps, what: "background stderr"})
	}
	return ps
}

// matching is c when it is of text, the text a result's JSON holds; else text with no
// gaps (an execution made without a repl.Result).
func matching(c repl.CutText, text string) repl.CutText {
	if c.Text != text {
		return repl.CutText{Text: text}
	}
	return c
}

// valueText is the trailing value as the model should read it: a string with a
// newline as its text, anything else as Python shows it (repr, else the preview,
// return_value, which is Python-like for whatever is not exact JSON). A string's
// preview cut short says so.
func (v *execView) valueText() string {
	if v.ReturnValue == nil {
		return ""
	}
	var s string
	if json.Unmarshal(v.Value, &s) == nil && strings.Contains(s, "\n") {
		return s
	}
	if v.repr != "" {
		return v.repr
	}
	shown := *v.ReturnValue
	if !v.Truncated.Return || !strings.HasPrefix(shown, `"`) || json.Valid([]byte(shown)) {
		return shown
	}
	// A long string's preview is a JSON string literal cut short.
	if s, ok := jsonStringPrefix(shown); ok && strings.Contains(s, "\n") {
		shown = s
	}
	rest := "the rest is not shown"
	if v.Artifact != nil {
		rest = "all of it is the value artifact named below"
	}
	return shown + "\n[... value cut here; " + rest + " ...]"
}

// jsonStringPrefix decodes a JSON string literal that may have been cut anywhere
// after its opening quote, an escape sequence included.
func jsonStringPrefix(lit string) (string, bool) {
	if !strings.HasPrefix(lit, `"`) {
		return "", false
	}
	var s string
	if json.Unmarshal([]byte(lit), &s) == nil {
		return s, true
	}
	// Drop what may be a cut escape (at most "\uXXX"), then close the literal.
	for drop := 0; drop <= 5 && drop < len(lit); drop++ {
		if json.Unmarshal([]byte(lit[:len(lit)-drop]+`"`), &s) == nil {
			return s, true
		}
	}
	return "", false
}

// joinParts lays the parts out one after the other, each starting on a line of
// its own; empty parts take no room.
func joinParts(ps []part) string {
	var b strings.Builder
	for _, p := range ps {
		if p.text == "" {
			continue
		}
		newLine(&b)
		if p.label != "" {
			b.WriteString(p.label + "\n")
		}
		b.WriteString(p.text)
	}
	return b.String()
}

// newLine ends b's last line, if it has one.
func newLine(b *strings.Builder) {
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
}

// execText is the text form of an execution result: its parts within
// modelTextLimit, then one footer line. When the parts do not fit, each is cut
// in its middle by a share of the room; a part no artifact holds makes save keep
// the complete text (the parts uncut) as an artifact, named in the footer.
func execText(v *execView, polled bool, save func(string) (artifactRef, error)) reply {
	ps := v.parts()
	foot := visible(v.footer(polled, nil, nil))
	sizes := make([]int, len(ps))
	overhead, whole := 0, 0
	for i, p := range ps {
		sizes[i] = p.shownLen()
		if p.text != "" {
			overhead += len(p.label) + 2
		}
		whole += sizes[i]
	}
	if whole+overhead+len(foot) <= modelTextLimit {
		for i := range ps {
			ps[i].text = ps[i].cut(sizes[i])
		}
		return withFooter(joinParts(ps), foot)
	}
	shares := fitShares(sizes, modelTextLimit-len(foot)-footerReserve-overhead)
	lost := false
	for i := range ps {
		lost = lost || sizes[i] > shares[i] && !ps[i].saved
	}
	if lost {
		ref, err := save(joinParts(ps))
		foot = visible(v.footer(polled, &ref, err))
		for i := range ps {
			// The complete text holds all of a part no earlier cut shortened.
			if err == nil && ps[i].all == nil && len(ps[i].gaps) == 0 {
				ps[i].all = &ref
			}
		}
	}
	for i := range ps {
		ps[i].text = ps[i].cut(shares[i])
	}
	return withFooter(joinParts(ps), foot)
}

// reply is a text-form result: its body, then its footer line, each a text block of
// its own, the footer last. Code that reads a result's first block (Codex's code
// mode: JSON.parse(r.content[0].text), Number(text)) reads the output alone, and a
// client that shows the blocks one after the other shows a terminal's text. Either
// may be empty.
type reply struct{ body, footer string }

// withFooter is body and foot as a reply; a body ends its last line, so the two read
// as lines however a client joins them.
func withFooter(body, foot string) reply {
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return reply{body: body, footer: foot}
}

// text is the reply as one text, the way a terminal would show it.
func (r reply) text() string { return r.body + r.footer }

// content is the reply's text blocks.
func (r reply) content() []mcp.Content {
	var blocks []mcp.Content
	for _, t := range []string{r.body, r.footer} {
		if t != "" {
			blocks = append(blocks, &mcp.TextContent{Text: t})
		}
	}
	if len(blocks) == 0 {
		blocks = append(blocks, &mcp.TextContent{Text: ""})
	}
	return blocks
}

// structuredExecText is the text block beside a structured client's
// structuredContent: the parts, with no footer (its facts are fields).
func structuredExecText(v *execView) string {
	if text := joinParts(v.parts()); text != "" {
		return text
	}
	return "Execution completed."
}

// footer is the one line after an execution's parts: what the agent needs beyond
// the output, starting with ok or failed. saved is the artifact execText made of
// the complete text, or saveErr why it could not; nil when it made none.
func (v *execView) footer(polled bool, saved *artifactRef, saveErr error) string {
	items := []string{"ok"}
	if !v.Success || v.Error != nil {
		items[0] = "failed"
	}
	// The reasons of §4.2 mostly say it already; say it once.
	if v.State == string(repl.StateCleared) && (v.Error == nil || !strings.Contains(*v.Error, "variables cleared")) {
		items = append(items, "state cleared")
	}
	if v.ExitCode != nil {
		items = append(items, fmt.Sprintf("exit code %d", *v.ExitCode))
	}
	items = append(items, fmt.Sprintf("generation %d", v.Generation))
	if v.StateReset && v.Generation > 1 {
		items = append(items, "new worker: earlier variables are gone")
	}
	if v.ExecutionMode == "fresh" {
		items = append(items, "fresh worker")
	}
	if v.RunID != "" {
		items = append(items, "run "+v.RunID)
	}
	if polled && v.StdoutEnd != nil && v.StderrEnd != nil {
		items = append(items, fmt.Sprintf("stdout_end %d; stderr_end %d", *v.StdoutEnd, *v.StderrEnd))
	}
	if n := v.BackgroundTasksCancelled; n > 0 {
		items = append(items, fmt.Sprintf("%d leftover asyncio task%s cancelled", n, plural(n)))
	}
	if len(v.BackgroundThreads) > 0 {
		items = append(items, "threads still running: "+listed(v.BackgroundThreads, func(s string) string { return s }))
	}
	if v.BackgroundOutput != nil && v.BackgroundOutput.Truncated {
		items = append(items, "background output cut")
	}
	if n := len(v.Images); n > footerListed {
		items = append(items, fmt.Sprintf("%d images: ", n)+listed(v.Images, imageInfo.String)) // the count at once
	} else if n > 0 {
		items = append(items, fmt.Sprintf("image%s: ", plural(n))+listed(v.Images, imageInfo.String))
	}
	items = append(items, imageArtifactItems(v.ImageArtifacts)...)
	var outputs [2]*artifactRef
	if o := v.OutputArtifacts; o != nil {
		outputs = [2]*artifactRef{o.Stdout, o.Stderr}
	}
	named := v.Artifact != nil || len(v.ImageArtifacts) > 0 || outputs[0] != nil || outputs[1] != nil
	for i, stream := range []string{"stdout", "stderr"} {
		switch cut := []bool{v.Truncated.Stdout, v.Truncated.Stderr}[i]; {
		case outputs[i] != nil:
			items = append(items, "complete "+stream+": "+outputs[i].String())
		case cut:
			items = append(items, fmt.Sprintf("%s cut at %s bytes", stream, count(repl.StreamLimit)))
		}
	}
	if v.Artifact != nil {
		items = append(items, "value: "+v.Artifact.String())
	}
	if v.ArtifactError != nil {
		items = append(items, "value not saved: "+cutFooter(*v.ArtifactError, footerErrorMax))
	}
	switch {
	case saveErr != nil:
		items = append(items, "complete text not saved: "+cutFooter(saveErr.Error(), footerErrorMax))
	case saved != nil:
		items = append(items, "complete text: "+saved.String())
		named = true
	}
	if named {
		// artifact_read needs the session, which a text-form client may never
		// have been told.
		items = append(items, "session "+v.SessionID)
	}
	return "[" + strings.Join(items, "; ") + "]"
}

// listed names the first few of xs, each bounded, then how many more there are.
func listed[T any](xs []T, name func(T) string) string {
	names := make([]string, 0, footerListed+1)
	for i, x := range xs {
		if i == footerListed {
			names = append(names, fmt.Sprintf("and %d more", len(xs)-i))
			break
		}
		names = append(names, cutFooter(name(x), footerNameMax))
	}
	return strings.Join(names, ", ")
}

// cutFooter bounds a piece of the footer, which stays one line.
func cutFooter(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= limit {
		return s
	}
	return repl.CutUTF8(s, limit-3) + "..."
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// count writes n with thousands separators, as the contract writes sizes.
func count[N int | int64](n N) string {
	s := fmt.Sprint(int64(n))
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// fitShares divides room bytes among texts of the given sizes: a text that fits in
// an equal share keeps all of it, and what it leaves is shared by the others.
func fitShares(sizes []int, room int) []int {
	shares := make([]int, len(sizes))
	left := make([]int, 0, len(sizes))
	for i, n := range sizes {
		if n > 0 {
			left = append(left, i)
		}
	}
	room = max(room, 0)
	for len(left) > 0 {
		share := room / len(left)
		var still []int
		for _, i := range left {
			if sizes[i] <= share {
				shares[i] = sizes[i]
				room -= sizes[i]
			} else {
				still = append(still, i)
			}
		}
		if len(still) == len(left) {
			for _, i := range still {
				shares[i] = share
			}
			break
		}
		left = still
	}
	return shares
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
