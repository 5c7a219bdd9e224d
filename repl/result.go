package repl

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/iota-uz/repl-mcp/internal/artifactref"
	"github.com/iota-uz/repl-mcp/internal/utf8cut"
)

// State says whether the Python namespace survived a run.
type State string

const (
	StatePreserved State = "preserved"
	StateCleared   State = "cleared"
)

// Truncated says which fields of a result were bounded.
type Truncated struct {
	Stdout bool `json:"stdout"`
	Stderr bool `json:"stderr"`
	Return bool `json:"return"`
}

// BackgroundOutput is what threads left by earlier cells printed since the last
// result (docs/contract.md §5.10), reported apart from the cell's own output.
type BackgroundOutput struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated"`
}

// OutputArtifacts are the artifact references holding the complete output of the
// streams whose text in the result was cut (docs/contract.md §5.5).
type OutputArtifacts struct {
	Stdout *artifactref.Ref `json:"stdout,omitempty"`
	Stderr *artifactref.Ref `json:"stderr,omitempty"`
}

// Result is the execution result envelope (docs/contract.md §4).
type Result struct {
	RunID       string          `json:"run_id"`
	Success     bool            `json:"success"`
	Stdout      string          `json:"stdout"`
	Stderr      string          `json:"stderr"`
	ReturnValue *string         `json:"return_value"`
	Value       json.RawMessage `json:"value,omitempty"`
	// ReturnRepr is the trailing value as Python's repr shows it, when return_value
	// is its JSON: what the text form shows (docs/contract.md §3.4), and the session's
	// notebook as text/plain. Not a field of the contract's result.
	ReturnRepr string  `json:"-"`
	Error      *string `json:"error"`
	// Reason says why the run ended badly, "" when it did not: the code that code
	// switches on (reasons.go), where Error's words are for people. Not a field of
	// the contract's result.
	Reason     Reason    `json:"-"`
	ElapsedMS  float64   `json:"elapsed_ms"`
	Truncated  Truncated `json:"truncated"`
	State      State     `json:"state"`
	StateReset *bool     `json:"state_reset,omitempty"`
	// StateResetReason says why the run's worker is new, when it replaced one (a
	// Reset* reason: reset, lost, restart, released); absent for a session's first.
	StateResetReason string `json:"state_reset_reason,omitempty"`
	// ServerStarted is when this server started, with StateResetReason restart.
	ServerStarted *time.Time `json:"server_started,omitempty"`
	// Restorable is the snapshot a restore would load, on a result that reports
	// variables lost (docs/contract.md §6.7).
	Restorable *Restorable `json:"restorable,omitempty"`
	// Restored is what the restore of a worker released while idle brought back
	// before this run's code.
	Restored *RestoreReport `json:"restored,omitempty"`
	// ExecutionMode is set when a worker executed the run.
	ExecutionMode            string `json:"execution_mode,omitempty"`
	BackgroundTasksCancelled int    `json:"background_tasks_cancelled,omitempty"`
	// BackgroundThreads names the threads still working for the cell when it ended:
	// the session's background work (docs/contract.md §5.10).
	BackgroundThreads []string `json:"background_threads,omitempty"`
	// BackgroundOutput is what threads of earlier cells printed since the last result.
	BackgroundOutput *BackgroundOutput `json:"background_output,omitempty"`
	// OutputArtifacts hold the complete output of the streams that were cut.
	OutputArtifacts *OutputArtifacts `json:"output_artifacts,omitempty"`
	// ExitCode is set for saved files that raised SystemExit.
	ExitCode *int `json:"exit_code,omitempty"`
	// Artifact is the reference of a trailing value too large for the preview;
	// ArtifactError says why such a value could not become one.
	Artifact      *artifactref.Ref `json:"artifact,omitempty"`
	ArtifactError *string          `json:"artifact_error,omitempty"`
	// Sandbox is what the run's sandbox has to say, when anything (docs/contract.md
	// §11.4).
	Sandbox    *SandboxNote `json:"sandbox,omitempty"`
	ServerID   string       `json:"server_id"`
	SessionID  string       `json:"session_id"`
	Generation uint64       `json:"generation"`
	// StdoutStart to StderrEnd are set only in a result python_run trimmed to what
	// follows a poller's offsets (Result.From): where its stdout and stderr start
	// and end in the run's streams.
	StdoutStart *int64 `json:"stdout_start,omitempty"`
	StdoutEnd   *int64 `json:"stdout_end,omitempty"`
	StderrStart *int64 `json:"stderr_start,omitempty"`
	StderrEnd   *int64 `json:"stderr_end,omitempty"`

	// stdoutBase and stderrBase are the stream offsets of the first byte of Stdout
	// and Stderr: zero for a result the worker sent (its text is the stream from the
	// start), later for a run reported from a live copy that had dropped its oldest
	// bytes.
	stdoutBase, stderrBase int64
	// stdoutEnd and stderrEnd are where the run's live streams ended, in the offsets
	// python_run gave its pollers (run.finish). The worker's text is a terminal's
	// rendering of the stream (carriage returns applied, head and tail), so it can be
	// shorter than what the pollers were given, and an offset they were given must
	// still be valid once the run is done.
	stdoutEnd, stderrEnd int64

	// stdoutGaps and stderrGaps are where Stdout and Stderr were cut, and what each cut
	// left out of the complete stream (Cuts); bgGaps those of BackgroundOutput's.
	stdoutGaps, stderrGaps []Gap
	bgGaps                 [2][]Gap

	// Images are the images the run showed, in order: their metadata is the JSON's
	// `images`, their bytes (Data) travel beside it. ImageArtifacts are the references
	// of the images past the bounds, which became artifacts.
	Images         []Image         `json:"images,omitempty"`
	ImageArtifacts []ImageArtifact `json:"image_artifacts,omitempty"`

	// HTML is pandas' own text/html of a trailing DataFrame or Styler, at most
	// maxHTMLBytes: for the session's notebook only, never in a tool result.
	HTML string `json:"-"`
	// Displays are what display() printed of objects that are no image, for the
	// notebook too; never in a tool result.
	Displays []Display `json:"-"`

	// kept is what the text form kept of the result's complete text (KeepText),
	// shared with every copy From makes; nil for a result no session identified.
	kept *keptText
	// noBarrier: the worker wrote no barrier before this result (its frame's
	// "barrier": false), and the native output is not waited for (native.go).
	noBarrier bool
	// code is the run's first code line, or the saved file it ran (run.what).
	code string
	// interrupted: the worker said an interrupt stopped the run (its frame's
	// "interrupted"), so its error is only the interrupt's message.
	interrupted bool
	// unrecorded: the run never reached the history (a refusal before any worker:
	// busy, limits, closed, cancelled before dispatch), so no python_run finds it.
	unrecorded bool
}

// Code is the run's first code line (at most 80 bytes), or "file PATH" for a saved
// file: what python_run's text names, so that a poller can tell whether the run is
// its own.
func (r *Result) Code() string { return r.code }

// Recorded says whether the session's history holds this run, so that python_run
// can read it back by its id: false for a call refused before it became a run.
func (r *Result) Recorded() bool { return !r.unrecorded }

// workerResult is the result of a worker's result frame (worker/PROTOCOL.md, "The
// result object"), decoded straight into a Result: the contract's fields land in it
// by their own names. Beside them the frame carries what is no field of the
// contract's result (the repr, the cuts, the notebook's HTML and displays), which
// result moves into the Result's own fields. The fields the worker does not send
// (run, session and server ids, generation, elapsed time, execution mode) are set by
// the session after (Session.identify, runOn, dispatch).
type workerResult struct {
	*Result
	ReturnRepr string `json:"return_repr"`
	// Cuts are the gaps of the streams the worker cut, by stream (Gap), and
	// BackgroundCuts those of background_output's.
	Cuts           map[string]Gap `json:"cuts"`
	BackgroundCuts map[string]Gap `json:"background_cuts"`
	HTML           string         `json:"html"`
	Displays       []Display      `json:"displays"`
	// Interrupted: an interrupt stopped the run, and the error is the worker's
	// message for that, which a stopping run's own first line replaces (answered).
	Interrupted bool `json:"interrupted"`
}

// result is the Result wr decoded into, with the frame's other members in place:
// the repr, the HTML and displays, and each cut the worker made as its stream's gap.
func (wr *workerResult) result() *Result {
	r := wr.Result
	if r == nil {
		r = &Result{} // a frame whose result has none of the contract's fields
	}
	r.ReturnRepr, r.HTML, r.Displays, r.interrupted = wr.ReturnRepr, wr.HTML, wr.Displays, wr.Interrupted
	stdout := workerCut(r.Stdout, wr.Cuts, "stdout")
	stderr := workerCut(r.Stderr, wr.Cuts, "stderr")
	r.Stdout, r.stdoutGaps = stdout.Text, stdout.Gaps
	r.Stderr, r.stderrGaps = stderr.Text, stderr.Gaps
	if b := r.BackgroundOutput; b != nil {
		out, errs := workerCut(b.Stdout, wr.BackgroundCuts, "stdout"), workerCut(b.Stderr, wr.BackgroundCuts, "stderr")
		b.Stdout, r.bgGaps[0] = out.Text, out.Gaps
		b.Stderr, r.bgGaps[1] = errs.Text, errs.Gaps
	}
	if string(r.Value) == "null" {
		r.Value = nil // None has no value beyond return_value: null
	}
	// Where python_run's answer starts and ends is never the worker's to say.
	r.StdoutStart, r.StdoutEnd, r.StderrStart, r.StderrEnd = nil, nil, nil, nil
	return r
}

// failure is a result for a run that failed for reason, with msg as its error; the
// namespace is in the state the reason leaves it in (an interrupt's, that its
// outcome decides, is preserved until the caller says otherwise).
func failure(runID string, reason Reason, msg string) *Result {
	return &Result{RunID: runID, Error: &msg, Reason: reason, State: reason.state()}
}

func strPtr(s string) *string { return &s }

// bound bounds every field to the contract's limits and sets the truncation flags.
// valueLimit bounds the JSON value: the preview budget, or the inventory's.
func (r *Result) bound(valueLimit int) {
	// The head and the tail, as the worker keeps them: the end of a long run is
	// usually what matters, and native output appended to stderr must not push the
	// end of either out.
	out := boundCut(CutText{r.Stdout, r.stdoutGaps}, StreamLimit, streamHead, &r.Truncated.Stdout)
	r.Stdout, r.stdoutGaps = out.Text, out.Gaps
	out = boundCut(CutText{r.Stderr, r.stderrGaps}, StreamLimit, streamHead, &r.Truncated.Stderr)
	r.Stderr, r.stderrGaps = out.Text, out.Gaps
	r.boundBackground()
	if r.ReturnValue != nil {
		v := boundFlag(*r.ReturnValue, PreviewLimit, &r.Truncated.Return)
		r.ReturnValue = &v
	}
	if len(r.Value) > valueLimit {
		// The worker keeps values under the preview budget; never trust that blindly.
		r.Value, r.Truncated.Return = nil, true
	}
	if len(r.ReturnRepr) > PreviewLimit || r.Value == nil || !utf8.ValidString(r.ReturnRepr) {
		r.ReturnRepr = "" // the JSON preview stands
	}
	if r.Error != nil {
		var cut bool
		v := boundFlag(*r.Error, PreviewLimit, &cut)
		r.Error = &v
	}
	r.Artifact = boundRef(r.Artifact)
	if r.ArtifactError != nil {
		var cut bool
		v := boundFlag(*r.ArtifactError, maxArtifactErrorBytes, &cut)
		r.ArtifactError = &v
	}
	r.ImageArtifacts = boundImageArtifacts(r.ImageArtifacts, maxImageArtifacts)
	if len(r.HTML) > maxHTMLBytes || !utf8.ValidString(r.HTML) {
		r.HTML = "" // dropped, never cut: half a table is no table
	}
	r.Displays = boundDisplays(r.Displays)
	if r.State == "" {
		r.State = StatePreserved
	}
}

// boundImageArtifacts keeps at most limit references of images, each a reference
// (boundRef) whose image fields are within maxArtifactRefBytes too.
func boundImageArtifacts(refs []ImageArtifact, limit int) []ImageArtifact {
	var kept []ImageArtifact
	for _, im := range refs {
		if len(kept) < limit && boundRef(&im.Ref) != nil && refBytes(&im.Ref)+len(im.MIME)+len(im.Reason) <= maxArtifactRefBytes {
			kept = append(kept, im)
		}
	}
	return kept
}

// boundBackground bounds the fields about background work; the worker keeps them
// within the same limits, but never trust that blindly.
func (r *Result) boundBackground() {
	if len(r.BackgroundThreads) > maxBackgroundThreads+1 { // the names and a "+N more"
		r.BackgroundThreads = r.BackgroundThreads[:maxBackgroundThreads+1]
	}
	for i, name := range r.BackgroundThreads {
		r.BackgroundThreads[i] = utf8cut.Prefix(name, maxThreadNameBytes)
	}
	if b := r.BackgroundOutput; b != nil {
		out := boundCut(CutText{b.Stdout, r.bgGaps[0]}, backgroundLimit, backgroundHead, &b.Truncated)
		b.Stdout, r.bgGaps[0] = out.Text, out.Gaps
		out = boundCut(CutText{b.Stderr, r.bgGaps[1]}, backgroundLimit, backgroundHead, &b.Truncated)
		b.Stderr, r.bgGaps[1] = out.Text, out.Gaps
		if b.Stdout == "" && b.Stderr == "" {
			r.BackgroundOutput = nil
		}
	}
	if a := r.OutputArtifacts; a != nil {
		a.Stdout, a.Stderr = boundRef(a.Stdout), boundRef(a.Stderr)
		if a.Stdout == nil && a.Stderr == nil {
			r.OutputArtifacts = nil
		}
	}
}

// boundRef drops an artifact reference that is none (no id) or too large to be one;
// the worker's are the store's, but never trust that blindly.
func boundRef(ref *artifactref.Ref) *artifactref.Ref {
	if ref == nil || ref.ID == "" || refBytes(ref) > maxArtifactRefBytes {
		return nil
	}
	return ref
}

// refBytes is the text a reference holds, its strings' bytes.
func refBytes(ref *artifactref.Ref) int {
	return len(ref.ID) + len(ref.Format) + len(ref.SHA256) + len(ref.Lifetime) + len(ref.Eviction)
}

// leftOutMarker is the worker's marker between a stream's head and its tail.
func leftOutMarker(n int) string {
	return "\n[... " + withCommas(n) + " bytes left out ...]\n"
}

// withCommas writes n in decimal with thousands separated by commas, as Python's
// format(n, ",") does.
func withCommas(n int) string {
	digits := strconv.Itoa(n)
	if n < 0 {
		return "-" + withCommas(-n)
	}
	var b []byte
	for i := range len(digits) {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, digits[i])
	}
	return string(b)
}

// suffixUTF8 is the longest suffix of s of at most limit bytes that starts at a
// UTF-8 boundary.
func suffixUTF8[T string | []byte](s T, limit int) T { return s[tailStart(s, limit):] }

func boundFlag(s string, limit int, flag *bool) string {
	cut := utf8cut.Prefix(s, limit)
	if len(cut) < len(s) {
		*flag = true
	}
	return cut
}

// Cuts are Stdout and Stderr with their gaps: where each was cut and what each cut
// left out of the complete stream, however many times it was cut, so that a later
// cut (the text form's) can count against the whole stream.
func (r *Result) Cuts() (stdout, stderr CutText) {
	return CutText{r.Stdout, r.stdoutGaps}, CutText{r.Stderr, r.stderrGaps}
}

// BackgroundCuts are Cuts for BackgroundOutput's streams (empty texts without it).
func (r *Result) BackgroundCuts() (stdout, stderr CutText) {
	if b := r.BackgroundOutput; b != nil {
		return CutText{b.Stdout, r.bgGaps[0]}, CutText{b.Stderr, r.bgGaps[1]}
	}
	return CutText{}, CutText{}
}

// workerCut is a stream of the worker's result with the gap the worker reported
// for it in cuts, if any.
func workerCut(text string, cuts map[string]Gap, stream string) CutText {
	gap, cut := cuts[stream]
	if !cut {
		return CutText{Text: text}
	}
	return CutText{text, []Gap{gap}}.checked()
}
