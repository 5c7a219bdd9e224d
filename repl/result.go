package repl

import (
	"encoding/json"
	"unicode/utf8"
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

// Result is the execution result envelope (docs/contract.md §4).
type Result struct {
	RunID       string          `json:"run_id"`
	Success     bool            `json:"success"`
	Stdout      string          `json:"stdout"`
	Stderr      string          `json:"stderr"`
	ReturnValue *string         `json:"return_value"`
	Value       json.RawMessage `json:"value,omitempty"`
	Error       *string         `json:"error"`
	ElapsedMS   float64         `json:"elapsed_ms"`
	Truncated   Truncated       `json:"truncated"`
	State       State           `json:"state"`
	StateReset  *bool           `json:"state_reset,omitempty"`
	// ExecutionMode is set when a worker executed the run.
	ExecutionMode            string `json:"execution_mode,omitempty"`
	BackgroundTasksCancelled int    `json:"background_tasks_cancelled,omitempty"`
	// ExitCode is set for saved files that raised SystemExit.
	ExitCode *int `json:"exit_code,omitempty"`
	// Artifact is the reference of a trailing value too large for the preview;
	// ArtifactError says why such a value could not become one.
	Artifact      json.RawMessage `json:"artifact,omitempty"`
	ArtifactError *string         `json:"artifact_error,omitempty"`
	ServerID      string          `json:"server_id"`
	SessionID     string          `json:"session_id"`
	Generation    uint64          `json:"generation"`
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

	// Images are the images the run showed, in order: their metadata is the JSON's
	// `images`, their bytes (Data) travel beside it. ImageArtifacts are the references
	// of the images past the bounds, which became artifacts.
	Images         []Image           `json:"images,omitempty"`
	ImageArtifacts []json.RawMessage `json:"image_artifacts,omitempty"`
}

// workerResult is the worker's half of a result, as sent in its result frame.
type workerResult struct {
	Success                  bool            `json:"success"`
	Stdout                   string          `json:"stdout"`
	Stderr                   string          `json:"stderr"`
	ReturnValue              *string         `json:"return_value"`
	Value                    json.RawMessage `json:"value"`
	Error                    *string         `json:"error"`
	Truncated                Truncated       `json:"truncated"`
	State                    State           `json:"state"`
	BackgroundTasksCancelled int             `json:"background_tasks_cancelled"`
	ExitCode                 *int            `json:"exit_code"`
	Artifact                 json.RawMessage `json:"artifact"`
	ArtifactError            *string         `json:"artifact_error"`

	// Images is the metadata the result frame lists; the frame reader puts the bytes
	// of the run's image frames in (imageCollector.take).
	Images         []Image           `json:"images"`
	ImageArtifacts []json.RawMessage `json:"image_artifacts"`
}

// failure is a result for a run that failed with msg and left the namespace in state.
func failure(runID, msg string, state State) *Result {
	return &Result{RunID: runID, Error: &msg, State: state}
}

func strPtr(s string) *string { return &s }

// bound bounds every field to the contract's limits and sets the truncation flags.
// valueLimit bounds the JSON value: the preview budget, or the inventory's.
func (r *Result) bound(valueLimit int) {
	r.Stdout = boundFlag(r.Stdout, StreamLimit, &r.Truncated.Stdout)
	r.Stderr = boundFlag(r.Stderr, StreamLimit, &r.Truncated.Stderr)
	if r.ReturnValue != nil {
		v := boundFlag(*r.ReturnValue, PreviewLimit, &r.Truncated.Return)
		r.ReturnValue = &v
	}
	if len(r.Value) > valueLimit {
		// The worker keeps values under the preview budget; never trust that blindly.
		r.Value, r.Truncated.Return = nil, true
	}
	if r.Error != nil {
		var cut bool
		v := boundFlag(*r.Error, PreviewLimit, &cut)
		r.Error = &v
	}
	if len(r.Artifact) > maxArtifactRefBytes || string(r.Artifact) == "null" {
		r.Artifact = nil
	}
	if r.ArtifactError != nil {
		var cut bool
		v := boundFlag(*r.ArtifactError, maxArtifactErrorBytes, &cut)
		r.ArtifactError = &v
	}
	r.ImageArtifacts = boundRefs(r.ImageArtifacts, maxImageArtifacts)
	if r.State == "" {
		r.State = StatePreserved
	}
}

// boundRefs keeps at most limit artifact references, each within maxArtifactRefBytes.
func boundRefs(refs []json.RawMessage, limit int) []json.RawMessage {
	var kept []json.RawMessage
	for _, ref := range refs {
		if len(kept) < limit && len(ref) <= maxArtifactRefBytes && string(ref) != "null" {
			kept = append(kept, ref)
		}
	}
	return kept
}

func boundFlag(s string, limit int, flag *bool) string {
	cut := cutUTF8(s, limit)
	if len(cut) < len(s) {
		*flag = true
	}
	return cut
}

// cutUTF8 returns the longest prefix of s that is at most limit bytes and does not
// split a UTF-8 sequence.
func cutUTF8(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	end := limit
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end]
}

// CutUTF8 is cutUTF8 for the presentation layer.
func CutUTF8(s string, limit int) string { return cutUTF8(s, limit) }
