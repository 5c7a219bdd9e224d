package main

import (
	"fmt"
	"strings"
	"time"
)

// report is the run's markdown: what README.md ("Load") carries.
type report struct {
	started            time.Time
	host               string
	version, pyVersion string
	loadStart, loadEnd string
	cfg                config
	http               []httpResult
	soak               soakResult
}

func (r *report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s, Python %s, %s, by `make bench-load`; load %s at start and %s at end.\n\n",
		r.started.UTC().Format("2006-01-02 15:04 UTC"), r.host, r.pyVersion, r.version, r.loadStart, r.loadEnd)
	if len(r.http) > 0 {
		fmt.Fprintf(&b, "HTTP (one server per row, Streamable HTTP on 127.0.0.1, each client its own MCP session and %d mixed cells):\n\n", r.cfg.cells)
		b.WriteString("| clients | Python sessions | cells | p50 | p90 | p99 | cells/s | wrong answers | busy retries | server RSS idle → load → after hang-up | fds | threads | workers (their RSS) under load → after hang-up |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, h := range r.http {
			fmt.Fprintf(&b, "| %d | %d | %d | %s | %s | %s | %s | %d | %d | %s → %s → %s | %s → %s | %s → %s | %s → %s |\n",
				h.clients, h.sessions, h.cells, ms(percentile(h.lat, 50)), ms(percentile(h.lat, 90)), ms(percentile(h.lat, 99)),
				rate(h.cells, h.wall), h.wrong, h.busy,
				mib(h.idle, h.idle.rss), mib(h.peak, h.peak.rss), mib(h.after, h.after.rss),
				count(h.peak, h.peak.fds), count(h.after, h.after.fds), count(h.peak, h.peak.threads), count(h.after, h.after.threads),
				workers(h.peak), workers(h.after))
		}
		b.WriteString("\n")
	}
	if s := r.soak; len(s.blocks) > 0 {
		fmt.Fprintf(&b, "stdio soak: %d mixed cells in one session, one after the other: p50 %s, p99 %s, %s cells/s, %d wrong answers. Per block of %d cells:\n\n",
			len(s.lat), ms(percentile(s.lat, 50)), ms(percentile(s.lat, 99)), rate(len(s.lat), s.wall), s.wrong, soakBlockCells)
		b.WriteString("| cells | block p50 | server RSS | fds | threads | workers (their RSS) |\n|---|---|---|---|---|---|\n")
		fmt.Fprintf(&b, "| 0 | | %s | %s | %s | %s |\n", mib(s.start, s.start.rss), count(s.start, s.start.fds), count(s.start, s.start.threads), workers(s.start))
		done := 0
		for _, blk := range s.blocks {
			done += soakBlockCells
			done = min(done, len(s.lat))
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s |\n", done, ms(blk.p50), mib(blk.snap, blk.snap.rss),
				count(blk.snap, blk.snap.fds), count(blk.snap, blk.snap.threads), workers(blk.snap))
		}
		b.WriteString("\n")
	}
	b.WriteString("The cells cycle through an int value, a print, an error, an image (`display()` of PNG bytes), `python_start` then `python_run`, a print past the stream bound whose output becomes an artifact, and a str value; every answer is checked against what that client's cell must give. Latency is the client's wait for the answer, busy refusals (two clients of one session) and their retries included.\n")
	var notes []string
	for _, h := range r.http {
		for _, e := range h.examples {
			notes = append(notes, fmt.Sprintf("%d clients: wrong: %s", h.clients, e))
		}
		if h.err != nil {
			notes = append(notes, fmt.Sprintf("%d clients: %v", h.clients, h.err))
		}
		if h.unsaved > 0 {
			notes = append(notes, fmt.Sprintf("%d clients: %d outputs past the stream bound were not kept as artifacts, as the cut says (`%s`)", h.clients, h.unsaved, h.why))
		}
	}
	for _, e := range r.soak.examples {
		notes = append(notes, "soak: wrong: "+e)
	}
	if r.soak.unsaved > 0 {
		notes = append(notes, fmt.Sprintf("soak: %d outputs past the stream bound were not kept as artifacts, as the cut says (`%s`)", r.soak.unsaved, r.soak.why))
	}
	if r.soak.err != nil {
		notes = append(notes, fmt.Sprintf("soak: %v", r.soak.err))
	}
	if len(notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func rate(cells int, wall time.Duration) string {
	if wall <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(cells)/wall.Seconds())
}

func mib(s snapshot, n int64) string {
	if s.err != nil {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func count(s snapshot, n int) string {
	if s.err != nil {
		return "-"
	}
	return fmt.Sprint(n)
}

func workers(s snapshot) string {
	if s.err != nil {
		return "-"
	}
	return fmt.Sprintf("%d (%.0f MiB)", s.workers, float64(s.workerRSS)/(1<<20))
}
