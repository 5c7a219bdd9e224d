package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/internal/utf8cut"
	"github.com/iota-uz/repl-mcp/repl"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// execution is an execution result as a tool's value (docs/contract.md §4): the
// repl.Result itself, which is a structured client's structuredContent (encoded
// once, in present) and what the text form is read from, field by field. The two
// forms cannot say different things. It is presentable as every tool's value is.
type execution struct {
	*repl.Result
	// polled: read back with python_run, so the footer gives the offsets to read on.
	polled bool
	// skipped: its streams start where an earlier answer about the run, or the
	// result of the task it is, stopped (docs/contract.md §2.8), and the footer says so.
	skipped bool
	// laid is its text form's layout once it has been computed: keepText and present
	// read it in one call, and the value is made for that call. nil in a value made
	// without one (execution{}), which lays its text out each time.
	laid *layout
}

// executed is r as the value of the tool that ran it.
func executed(r *repl.Result) execution { return execution{Result: r, laid: new(layout)} }

// polledResult is r as python_run's value.
func polledResult(r *repl.Result) execution {
	return execution{Result: r, polled: true, laid: new(layout)}
}

// encode is the result's JSON, or an error that says why there is none: a Result
// is strings, numbers and raw JSON the worker sent and the supervisor bounded.
func (e execution) encode() []byte {
	structured, _ := e.encoded(false)
	return structured
}

// encoded is the result's JSON, with the flag of a text block cut at 8 KiB when
// textCut, and whether it could not be encoded.
func (e execution) encoded(textCut bool) ([]byte, bool) {
	var v any = e.Result
	if textCut {
		v = struct {
			*repl.Result
			TextTruncated bool `json:"text_truncated"`
		}{e.Result, true}
	}
	structured, err := json.Marshal(v)
	if err != nil {
		structured, _ = json.Marshal(map[string]string{"error": "result could not be encoded: " + err.Error()})
		return structured, true
	}
	return structured, false
}

// structuredForm is the result's JSON and, beside it, its parts as a terminal
// shows them (structuredText), encoded once with the flag when the text is cut.
func (e execution) structuredForm() ([]byte, string, bool) {
	text, cut := cutStructuredText(e.structuredText())
	structured, broken := e.encoded(cut)
	return structured, text, broken || e.failed()
}

func (e execution) images() []repl.Image { return e.Images }

// failed says whether the result is an error (isError).
func (e execution) failed() bool { return !e.Success || e.Error != nil }

// imageLine is an image the cell displayed as the footer lists it; the image itself
// is a content block of its own.
func imageLine(im repl.Image) string {
	return fmt.Sprintf("%s %dx%d", strings.TrimPrefix(im.MIME, "image/"), im.Width, im.Height)
}

// imageArtifactItems are the footer's items for the images not shown (the images
// the run kept as artifacts instead, docs/contract.md §7.9): one per reason, in
// order, saying how many, why, and where they are.
func imageArtifactItems(refs []repl.ImageArtifact) []string {
	var reasons []string
	byReason := map[string][]artifacts.Ref{}
	for _, ref := range refs {
		if _, seen := byReason[ref.Reason]; !seen {
			reasons = append(reasons, ref.Reason)
		}
		byReason[ref.Reason] = append(byReason[ref.Reason], ref.Ref)
	}
	items := make([]string, 0, len(reasons))
	for _, reason := range reasons {
		kept := byReason[reason]
		why := ""
		if reason != "" {
			why = " (" + cutFooter(reason, footerNameMax) + ")"
		}
		items = append(items, fmt.Sprintf("%d image%s not shown%s, kept as artifact%s: %s",
			len(kept), plural(len(kept)), why, plural(len(kept)), listed(kept, refText)))
	}
	return items
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
	footerListed  = 4
	footerNameMax = 60
	// footerReasonMax: why a variable did not come back, in full for the reasons a
	// snapshot gives ("not saved: not picklable: cannot pickle '_thread.lock' object").
	footerReasonMax = 90
	footerCodeMax   = 90 // a run's first code line: repl cuts it at 80 bytes, or names its file
	footerErrorMax  = 200
)

// outputRefs are the artifacts holding the complete stdout and stderr, nil where
// the worker made none.
func (e execution) outputRefs() [2]*artifacts.Ref {
	if o := e.OutputArtifacts; o != nil {
		return [2]*artifacts.Ref{o.Stdout, o.Stderr}
	}
	return [2]*artifacts.Ref{}
}

// parts are e's pieces, in the order the text shows them, each with where it was
// cut before (repl.Result.Cuts), so that markers count against the complete streams.
// repr is how the value is shown when its preview is its JSON: the text form's
// ReturnRepr, or "" for the preview (structuredText).
func (e execution) parts(repr string) []part {
	outputs := e.outputRefs()
	value := e.Artifact
	stdout, stderr := e.Cuts()
	ps := []part{
		{text: stdout.Text, gaps: stdout.Gaps, what: "stdout", saved: outputs[0] != nil, all: outputs[0]},
		{label: "[stderr]", text: stderr.Text, gaps: stderr.Gaps, what: "stderr", saved: outputs[1] != nil, all: outputs[1]},
		{text: e.valueText(value, repr), what: "the value", saved: value != nil, all: value},
	}
	if e.Error != nil {
		ps = append(ps, part{text: *e.Error, what: "the error"})
	}
	if e.BackgroundOutput != nil {
		out, errs := e.BackgroundCuts()
		ps = append(ps,
			part{label: "[background stdout]", text: out.Text, gaps: out.Gaps, what: "background stdout"},
			part{label: "[background stderr]", text: errs.Text, gaps: errs.Gaps, what: "background stderr"})
	}
	return ps
}

// valueText is the trailing value as the model should read it: a string with a
// newline as its text, anything else as Python shows it (repr, else the preview,
// return_value, which is Python-like for whatever is not exact JSON). A string's
// preview cut short says so; artifact is the value's, nil for none.
func (e execution) valueText(artifact *artifacts.Ref, repr string) string {
	if e.ReturnValue == nil {
		return ""
	}
	var s string
	if json.Unmarshal(e.Value, &s) == nil && strings.Contains(s, "\n") {
		return s
	}
	if repr != "" {
		return repr
	}
	shown := *e.ReturnValue
	if !e.Truncated.Return || !strings.HasPrefix(shown, `"`) || json.Valid([]byte(shown)) {
		return shown
	}
	// A long string's preview is a JSON string literal cut short.
	if s, ok := jsonStringPrefix(shown); ok && strings.Contains(s, "\n") {
		shown = s
	}
	rest := "the rest is not shown"
	if artifact != nil {
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

// keptText is what became of the complete text of a result whose text form cuts
// more than artifacts hold: the artifact that keeps it, or why none does. It is made
// before the text is (keepText), which only names it.
type keptText struct {
	ref artifacts.Ref
	// session is the session whose artifact it is.
	session string
	err     error
}

// errTextNotKept stands for a kept text that was never asked for.
var errTextNotKept = errors.New("the complete text was not kept")

// layout is e's text laid out within modelTextLimit: its parts, each cut to its
// share, and whether a part is cut that no artifact holds, so that the complete
// text (joinParts of the parts uncut) must be kept to lose nothing.
type layout struct {
	parts  []part
	shares []int
	lost   bool
	// foot is the footer it was laid out beside: the footer of a text that names
	// no kept text.
	foot string
	done bool
}

// layout is e's text laid out, computed once per value that has room for it (laid).
func (e execution) layout() layout {
	if e.laid == nil {
		return e.layOut()
	}
	if !e.laid.done {
		*e.laid = e.layOut()
	}
	l := *e.laid
	l.parts = slices.Clone(l.parts) // the text form cuts its copy
	return l
}

func (e execution) layOut() layout {
	ps := e.parts(e.ReturnRepr)
	foot := visible(e.footer(nil))
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
		return layout{parts: ps, shares: sizes, foot: foot, done: true}
	}
	l := layout{parts: ps, shares: fitShares(sizes, modelTextLimit-len(foot)-footerReserve-overhead), foot: foot, done: true}
	for i := range ps {
		l.lost = l.lost || sizes[i] > l.shares[i] && !ps[i].saved
	}
	return l
}

// completeText is the text a text-form client's result must keep as an artifact:
// e's parts uncut, when its text cuts a part no artifact holds; "" otherwise.
func (e execution) completeText() string {
	if l := e.layout(); l.lost {
		return joinParts(l.parts)
	}
	return ""
}

// textForm is the text form of an execution result: its parts within
// modelTextLimit, then one footer line. When the parts do not fit, each is cut in its
// middle by a share of the room; when a part no artifact holds is cut, kept is the
// artifact of the complete text (completeText), named in the markers and the footer.
func (e execution) textForm(kept *keptText) reply {
	l := e.layout()
	var foot string
	switch {
	case !l.lost:
		foot = l.foot
	case kept == nil:
		foot = visible(e.footer(&keptText{err: errTextNotKept}))
	default:
		foot = visible(e.footer(kept))
		for i, p := range l.parts {
			// The complete text holds all of a part no earlier cut shortened.
			if kept.err == nil && p.all == nil && len(p.gaps) == 0 {
				l.parts[i].all = &kept.ref
			}
		}
	}
	for i := range l.parts {
		l.parts[i].text = l.parts[i].cut(l.shares[i])
	}
	return withFooter(joinParts(l.parts), foot)
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

// structuredText is the text block beside a structured client's
// structuredContent: the parts, with no footer (its facts are fields), and the value
// as its preview, return_value.
func (e execution) structuredText() string {
	if text := joinParts(e.parts("")); text != "" {
		return jsonText(text)
	}
	return "Execution completed."
}

// jsonText is s as its JSON carries it, each byte that is no UTF-8 a U+FFFD (as
// encoding/json writes it): native output joined to stderr may hold such bytes, and
// the text block is measured and cut (textLimit) in what the client receives.
func jsonText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s { // a byte that is no UTF-8 ranges as utf8.RuneError
		b.WriteRune(r)
	}
	return b.String()
}

// footer is the one line after an execution's parts: what the agent needs beyond
// the output, starting with ok or failed. kept is the artifact of the complete text
// that the text names, or why there is none; nil when the text needs none.
func (e execution) footer(kept *keptText) string {
	items := []string{"ok"}
	if e.failed() {
		items[0] = "failed"
	}
	// The errors of most reasons say it already (§4.2); say it once.
	if e.State == repl.StateCleared && !e.Reason.SaysCleared() {
		items = append(items, "state cleared")
	}
	if e.ExitCode != nil {
		items = append(items, fmt.Sprintf("exit code %d", *e.ExitCode))
	}
	items = append(items, fmt.Sprintf("generation %d", e.Generation))
	items = append(items, e.newWorkerItems()...)
	if e.ExecutionMode == "fresh" {
		items = append(items, "fresh worker")
	}
	items = append(items, sandboxItems(e.Sandbox)...)
	switch {
	case !e.Recorded():
		// A refusal before any worker: its id names nothing python_run can read.
		items = append(items, "nothing ran")
	case e.RunID != "":
		items = append(items, "run "+e.RunID)
		if e.polled && e.Code() != "" {
			// A poller may not have started the run (an agent that shares the
			// session): what it runs tells.
			items = append(items, codeItem(e.Code()))
		}
	}
	if e.polled && e.StdoutEnd != nil && e.StderrEnd != nil {
		items = append(items, fmt.Sprintf("stdout_end %d; stderr_end %d", *e.StdoutEnd, *e.StderrEnd))
	}
	if e.skipped {
		items = append(items, msgEarlierOutput)
	}
	if n := e.BackgroundTasksCancelled; n > 0 {
		items = append(items, fmt.Sprintf("%d leftover asyncio task%s cancelled", n, plural(n)))
	}
	if len(e.BackgroundThreads) > 0 {
		items = append(items, "threads still running: "+listed(e.BackgroundThreads, cutName))
	}
	if e.BackgroundOutput != nil && e.BackgroundOutput.Truncated {
		items = append(items, "background output cut")
	}
	if n := len(e.Images); n > footerListed {
		items = append(items, fmt.Sprintf("%d images: ", n)+listed(e.Images, imageLine)) // the count at once
	} else if n > 0 {
		items = append(items, fmt.Sprintf("image%s: ", plural(n))+listed(e.Images, imageLine))
	}
	items = append(items, imageArtifactItems(e.ImageArtifacts)...)
	outputs := e.outputRefs()
	value := e.Artifact
	named := value != nil || len(e.ImageArtifacts) > 0 || outputs[0] != nil || outputs[1] != nil
	for i, stream := range []string{"stdout", "stderr"} {
		switch cut := []bool{e.Truncated.Stdout, e.Truncated.Stderr}[i]; {
		case outputs[i] != nil:
			items = append(items, "complete "+stream+": "+refText(*outputs[i]))
		case cut:
			items = append(items, fmt.Sprintf("%s cut at %s bytes", stream, count(repl.StreamLimit)))
		}
	}
	if value != nil {
		items = append(items, "value: "+refText(*value))
	}
	if e.ArtifactError != nil {
		items = append(items, "value not saved: "+cutFooter(*e.ArtifactError, footerErrorMax))
	}
	switch {
	case kept == nil:
	case kept.err != nil:
		items = append(items, "complete text not saved: "+cutFooter(kept.err.Error(), footerErrorMax))
	default:
		items = append(items, "complete text: "+refText(kept.ref))
		named = true
	}
	if named {
		// artifact_read needs the session, which a text-form client may never
		// have been told.
		items = append(items, "session "+e.SessionID)
	}
	return "[" + strings.Join(items, "; ") + "]"
}

// codeItem is a footer's item naming a run's first code line, quoted as Python
// quotes a string, since the line may hold the footer's own separators.
func codeItem(code string) string {
	code = cutFooter(code, footerCodeMax)
	quote := "'"
	if strings.Contains(code, "'") && !strings.Contains(code, `"`) {
		quote = `"`
	}
	code = strings.ReplaceAll(code, `\`, `\\`)
	return "code: " + quote + strings.ReplaceAll(code, quote, `\`+quote) + quote
}

// newWorkerItems say that the run's worker is new and why, when it replaced one, and
// what a restore can bring back or brought back (docs/contract.md §6.7).
func (e execution) newWorkerItems() []string {
	var items []string
	if e.StateReset != nil && *e.StateReset {
		switch r := e.Restored; {
		case e.StateResetReason == repl.ResetRestart && e.ServerStarted != nil:
			items = append(items, "new worker: the server restarted at "+repl.Clock(*e.ServerStarted)+"; earlier variables are gone")
		case e.StateResetReason == repl.ResetReleased && r != nil:
			item := fmt.Sprintf("worker released while idle, restored: %d of %d variables back", r.RestoredCount, r.RestoredCount+r.NotRestoredCount)
			if len(r.NotRestored) > 0 {
				item += "; not back: " + listed(r.NotRestored, lostItem)
			}
			items = append(items, item)
		case e.StateResetReason != "":
			items = append(items, "new worker: earlier variables are gone")
		}
	}
	if o := e.Restorable; o != nil {
		items = append(items, fmt.Sprintf("%d variable%s saved %s can be restored: python_session_restore {\"session_id\":\"%s\"}",
			o.Variables, plural(o.Variables), repl.Clock(o.SavedAt), e.SessionID))
	}
	return items
}

// listed names the first few of xs, then how many more there are; name bounds what
// it says of each (cutName for a plain string).
func listed[T any](xs []T, name func(T) string) string {
	names := make([]string, 0, footerListed+1)
	for i, x := range xs {
		if i == footerListed {
			names = append(names, fmt.Sprintf("and %d more", len(xs)-i))
			break
		}
		names = append(names, name(x))
	}
	return strings.Join(names, ", ")
}

// cutName is one name of a footer's list, bounded.
func cutName(s string) string { return cutFooter(s, footerNameMax) }

// lostItem names a variable a restore did not bring back and why, each cut on its
// own, so that the parenthesis always closes.
func lostItem(v repl.LostVariable) string {
	return cutName(v.Name) + " (" + cutFooter(v.Reason, footerReasonMax) + ")"
}

// cutFooter bounds a piece of the footer, which stays one line.
func cutFooter(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= limit {
		return s
	}
	return utf8cut.Prefix(s, limit-3) + "..."
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
