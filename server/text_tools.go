package server

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/repl"
)

// The text form of the tools other than the executions (docs/contract.md §3.4):
// what the model needs from each value, in a few lines, never its JSON.

// Bounds of the tools' texts.
const (
	// healthTextLimit keeps python_health small: it may be a client's first call.
	healthTextLimit = 1500
	// pathShown bounds a path (up to 4,096 characters) in a line of text.
	pathShown = 160
	// messageShown bounds a configuration error in health.
	messageShown = 300
	// namesShown bounds the variables an inspection lists.
	namesShown = 200
)

// toolText is the text form of a tool's value other than an execution result;
// structured is the value's JSON, for the shapes without a text of their own.
func toolText(value any, structured []byte) reply {
	switch v := value.(type) {
	case runningRun:
		return snapshotText(v)
	case artifactRange:
		return rangeText(v)
	case encodedResult:
		return envelopeText(v)
	}
	return reply{body: toolLine(value, structured)}
}

// toolLine is the text of a value whose text has no footer.
func toolLine(value any, structured []byte) string {
	switch v := value.(type) {
	case failed:
		msg, _ := v["error"].(string)
		return "Error: " + msg
	case healthReport:
		return healthText(v)
	case sessionList:
		return listText(v)
	case repl.Health:
		return "Opened session " + sessionLine(v) +
			"\nPass its session_id to the other tools; its worker starts on the first execution."
	case inspection:
		return inspectText(v)
	case closed:
		return fmt.Sprintf("Closed session %s at generation %d.", v.SessionID, v.Generation)
	case sessionExported:
		return v.text()
	case *repl.StartInfo:
		return fmt.Sprintf("Started run %s (generation %d). Poll python_run with run_id %s for its output and "+
			"result; stop it with python_cancel.", v.RunID, v.Generation, v.RunID)
	case cancelled:
		return fmt.Sprintf("Cancel requested for run %s; poll python_run for its result. External effects may "+
			"already have occurred; nothing is retried.", v.RunID)
	case artifactCreated:
		return fmt.Sprintf("Created %s: %s, sha256 %s; session %s. Read it with artifact_read.",
			refText(v.Ref), v.Format, v.SHA256, v.SessionID)
	case artifactSaved:
		return fmt.Sprintf("Saved %s to %s (sha256 checked).", refText(v.Artifact), v.Path)
	case artifactDeleted:
		return "Deleted artifact " + v.ID + "."
	}
	return string(structured)
}

func refText(r artifacts.Ref) string {
	return artifactRef{ID: r.ID, Size: r.Size, Format: string(r.Format)}.String()
}

// healthText is python_health for the model: the server, the default session
// once, the other sessions while there is room, the limits and the broker, under
// healthTextLimit.
func healthText(h healthReport) string {
	var b strings.Builder
	s := h.Server
	fmt.Fprintf(&b, "repl-mcp %s: trusted local Python with full host access, not a sandbox.\n", s.Version)
	fmt.Fprintf(&b, "Default session: session_id %s, generation %d: %s%s.\n", s.SessionID, s.Generation, workerState(s), spareText(s.Spare))
	fmt.Fprintf(&b, "Python: %s. Project: %s.\n", pythonText(s), cutPath(s.Project))
	l := s.Limits
	rss := "no RSS budget"
	if l.WorkerRSSMiB > 0 {
		rss = fmt.Sprintf("worker RSS %d MiB", l.WorkerRSSMiB)
	}
	fmt.Fprintf(&b, "Limits: code %d KiB, output %s bytes per stream, timeout %d s, %s, history %d runs.\n",
		l.CodeBytes/1024, count(l.StreamBytes), l.TimeoutSeconds, rss, l.HistoryRuns)
	b.WriteString(brokerText(h.Broker) + "\n")
	others := make([]repl.Health, 0, len(h.Sessions.Sessions))
	for _, o := range h.Sessions.Sessions {
		if o.SessionID != s.SessionID {
			others = append(others, o)
		}
	}
	if len(others) == 0 {
		fmt.Fprintf(&b, "No other sessions (at most %d).", h.Sessions.Limit)
		return b.String()
	}
	fmt.Fprintf(&b, "Other sessions (%d; at most %d in all):", len(others), h.Sessions.Limit)
	for i, o := range others {
		line := "\n- " + sessionLine(o)
		more := fmt.Sprintf("\n- and %d more: python_session_list", len(others)-i)
		if b.Len()+len(line)+len(more) > healthTextLimit {
			b.WriteString(more)
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

func brokerText(h broker.Health) string {
	if h.Disabled {
		return "Broker: disabled; cells cannot call other MCP servers."
	}
	journal := "in memory"
	if h.JournalDurable {
		journal = "durable"
	}
	text := fmt.Sprintf("Broker: %d server%s configured, %d connected; journal %d record%s (%s).",
		h.ConfiguredServers, plural(h.ConfiguredServers), h.ConnectedTransports, h.Journal, plural(h.Journal), journal)
	if h.ConfigurationError != nil {
		text += " Registry error: " + cutFooter(*h.ConfigurationError, messageShown)
	}
	return text
}

// workerState says whether a session has a worker, and what it does.
func workerState(h repl.Health) string {
	var state string
	switch h.Environment.RuntimeStatus {
	case "lazy":
		state = "no worker yet (it starts on the first execution)"
	case "running":
		state = "worker running"
	case "stopped":
		state = "worker stopped (the next execution starts a new one)"
	default:
		state = h.Environment.RuntimeStatus
	}
	if h.ActiveRun != nil {
		state += ", run " + *h.ActiveRun + " active"
	}
	return state
}

// spareText says that a spare worker waits, and what memory it holds.
func spareText(sp repl.SpareState) string {
	if !sp.Ready {
		return ""
	}
	return fmt.Sprintf("; a spare worker waits for a reset or a new session (pid %d, %s MiB)", sp.Pid, count(int(sp.RSSBytes>>20)))
}

// pythonText is a session's interpreter: what runs, else what was chosen and why.
func pythonText(h repl.Health) string {
	e := h.Environment
	text := cutPath(e.Python)
	if e.ActualPythonExecutable != "" && e.ActualPythonExecutable != e.Python {
		text += " (" + cutPath(e.ActualPythonExecutable) + ")"
	}
	switch {
	case e.Version != "":
		text += " " + e.Version
	case !e.Validated:
		text += " (not checked yet)"
	}
	if e.ChosenBy != "" {
		text += ", chosen by " + e.ChosenBy
	} else if e.Source != "" {
		text += ", " + strings.ReplaceAll(e.Source, "_", " ")
	}
	return text
}

// sessionLine is one session on one line.
func sessionLine(h repl.Health) string {
	return fmt.Sprintf("%s, session_id %s: generation %d, %s; python %s; project %s",
		cutFooter(h.Name, footerNameMax), h.SessionID, h.Generation, workerState(h), pythonText(h), cutPath(h.Project))
}

// cutPath keeps both ends of a long path: the root says where, the end what.
func cutPath(p string) string {
	if len(p) <= pathShown {
		return p
	}
	head := repl.CutUTF8(p, pathShown/2-2)
	tail := p[len(p)-(pathShown/2-2):]
	for len(tail) > 0 && !utf8Start(tail[0]) {
		tail = tail[1:]
	}
	return head + "..." + tail
}

func listText(l sessionList) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d session%s (at most %d):", len(l.Sessions), plural(len(l.Sessions)), l.Limit)
	for _, h := range l.Sessions {
		b.WriteString("\n- " + sessionLine(h))
	}
	return b.String()
}

func inspectText(in inspection) string {
	text := sessionLine(in.Health)
	if len(in.Namespace) == 0 {
		return text
	}
	var ns struct {
		Variables []struct {
			Name   string `json:"name"`
			Type   string `json:"type"`
			Length *int   `json:"length"`
		} `json:"variables"`
		Total   int `json:"total_namespace_entries"`
		Omitted int `json:"omitted_including_helpers"`
	}
	if err := json.Unmarshal(in.Namespace, &ns); err != nil {
		return text + "\nNamespace: " + string(in.Namespace)
	}
	if len(ns.Variables) == 0 {
		return text + fmt.Sprintf("\nNo variables (%d namespace entries, helpers included).", ns.Total)
	}
	names := make([]string, 0, min(len(ns.Variables), namesShown))
	for i, v := range ns.Variables {
		if i == namesShown {
			break
		}
		n := v.Name + ": " + v.Type
		if v.Length != nil {
			n += fmt.Sprintf(" (length %d)", *v.Length)
		}
		names = append(names, n)
	}
	return text + fmt.Sprintf("\nVariables (names and types only; %d of %d namespace entries not listed, helpers included):\n%s",
		ns.Total-len(names), ns.Total, strings.Join(names, "\n"))
}

// snapshotText is a run still going: its output so far within modelTextLimit, and
// a footer that says how to wait for the rest (and, for the execution that yielded,
// that it is still running).
func snapshotText(r runningRun) reply {
	s := r.Snapshot
	ps := []part{
		{text: s.Stdout, what: "stdout"},
		{label: "[stderr]", text: s.Stderr + s.NativeStderr, what: "stderr"},
	}
	items := []string{string(s.Status), "run " + s.RunID, fmt.Sprintf("%.1f s so far", s.ElapsedMS/1000), fmt.Sprintf("generation %d", s.Generation)}
	if r.yielded {
		items = append([]string{"still running as run " + s.RunID}, items[2:]...)
	}
	for _, c := range []struct {
		name string
		cut  bool
	}{{"stdout", s.LiveTruncated.Stdout}, {"stderr", s.LiveTruncated.Stderr}} {
		if c.cut {
			items = append(items, fmt.Sprintf("live %s cut at %s bytes; the result keeps its own", c.name, count(s.OutputLimit)))
		}
	}
	foot := "[" + strings.Join(items, "; ") + "; wait for more with " + waitHint(s, r.wait) + "]"
	shares := fitShares([]int{visibleLen(ps[0].text), visibleLen(ps[1].text)}, modelTextLimit-len(foot)-64)
	for i := range ps {
		ps[i].text = cutMiddle(ps[i].text, shares[i], ps[i].what)
	}
	return withFooter(joinParts(ps), foot)
}

// rangeText is an artifact range: the content, as much of it as fits, and where
// to go on from. What does not fit is not lost: it is the artifact, read on from
// the offset the footer gives.
func rangeText(r artifactRange) reply {
	room := modelTextLimit - 400
	content, length := r.Content, r.Length
	switch {
	case r.Encoding == "base64":
		// The range's bytes, not its base64 (artifactRange): as many whole groups of
		// three as fit, which encode without padding.
		data := r.data
		if base64.StdEncoding.EncodedLen(len(data)) > room {
			data = data[:room/4*3]
		}
		content, length = base64.StdEncoding.EncodeToString(data), int64(len(data))
	case r.Encoding == "text":
		// Shown as the text form shows any text (visible.go), cut in its own bytes.
		content = visiblePrefix(content, room)
		length = int64(len(content))
		content = visible(content)
	case len(content) <= room:
	case r.Encoding == "hex":
		content = content[:room&^1]
		length = int64(len(content) / 2)
	default:
		content = repl.CutUTF8(content, room)
		length = int64(len(content))
	}
	end := r.Offset + length
	next := "the end"
	if end < r.Artifact.Size {
		next = fmt.Sprintf("more from offset %d", end)
	}
	// The content block is the range's content exactly, for code that reads it.
	return reply{body: content, footer: fmt.Sprintf("[artifact %s, bytes %d to %d of %s (%s); %s]",
		r.Artifact.ID, r.Offset, end, count(r.Artifact.Size), r.Encoding, next)}
}

// envelopeText is a forwarded call's downstream result: its text blocks, a note
// for each other block, or its structuredContent's JSON when it has no content.
func envelopeText(e encodedResult) reply {
	var env struct {
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			MIMEType string `json:"mimeType"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(e.JSON, &env); err != nil {
		return reply{body: string(e.JSON)}
	}
	var b strings.Builder
	for _, c := range env.Content {
		newLine(&b)
		if c.Type == "text" {
			b.WriteString(c.Text)
		} else {
			fmt.Fprintf(&b, "[%s content %s]", c.Type, c.MIMEType)
		}
	}
	if b.Len() == 0 && len(env.StructuredContent) > 0 {
		b.Write(env.StructuredContent)
	}
	status := "[forwarded; the downstream tool succeeded]"
	if e.IsError {
		status = "[forwarded; the downstream tool failed]"
	}
	return withFooter(b.String(), status)
}
