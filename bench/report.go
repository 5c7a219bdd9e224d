package main

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Targets from docs/design.md, "Performance targets".
const (
	targetWarmRatio  = 3.0
	targetColdRatio  = 1.3
	targetIdleRSS    = 12 << 20
	targetFloodRatio = 2.0
	// targetBrokerOverhead: a broker call from a cell at most +0.2 ms over a direct
	// go-sdk client call to the same server, at p50 (the table's broker row).
	targetBrokerOverhead = 200 * time.Microsecond
	// flatGrowth is what "server memory flat" allows across the flood.
	flatGrowth = 2 << 20
)

// row is one line of the table.
type row struct {
	figure, value, baseline, ratio, target, met string
}

// report is the printed result of a run.
type report struct {
	header     []string
	rows       []row
	details    []string
	notes      []string
	unmeasured []string // figures that could not be measured at all, with why
}

// environment describes what was measured.
type environment struct {
	start         time.Time
	host          string
	python        string
	pythonVersion string
	binary        string
	binaryVersion string
	loadStart     string // load averages, when the OS tells
	loadEnd       string
}

func buildReport(cfg config, env environment, m *measurements, notes []string) *report {
	r := &report{notes: notes}
	r.header = []string{
		"date:    " + env.start.UTC().Format(time.RFC3339),
		"host:    " + env.host,
		"python:  " + env.python + " (" + env.pythonVersion + ")",
		"binary:  " + env.binary + " (" + env.binaryVersion + ")",
		"load:    " + env.loadStart + " at start, " + env.loadEnd + " at end (1, 5, 15 min)",
		fmt.Sprintf("samples: %d warm cells and round trips of the worker alone, each beside a bare pipe round trip, %d cold starts, up to %d floods, %d broker calls each way after %d warm-up, "+
			"up to %d artifact uploads and reads", cfg.N, cfg.ColdRuns, floodRuns, brokerCalls, brokerWarmup, artifactRuns),
	}
	if len(cfg.Figures) > 0 {
		var groups []string
		for _, g := range figureGroups {
			if cfg.Figures.has(g) {
				groups = append(groups, g)
			}
		}
		r.header = append(r.header, "figures: "+strings.Join(groups, ", ")+" only (-figures)")
	}
	r.missing("bare pipe round trip", m.floorErr)
	r.missing("bare python start", m.bareErr)
	r.missing("bare python start with the worker's imports", m.importsErr)
	r.missing("bare python start and exit with the worker's imports", m.importsExitErr)
	r.missing("cold start", m.coldErr)
	r.missing("warm cells", m.warmErr)
	r.missing("idle server RSS", m.idleErr)
	r.missing("server RSS after warm cells", m.afterCellsErr)
	r.missing("output flood", m.floodErr)
	r.missing("plain-Python flood baseline", m.floodBaseErr)
	r.missing("server RSS around the flood", m.floodMemErr)
	r.missing("direct go-sdk call to the fixture", m.broker.directErr)
	r.missing("broker call from a cell", m.broker.cellErr)
	r.missing("artifact upload and read", m.artifacts.failure())
	r.missing("spare worker rounds", m.spare.err)
	r.missing("data cells", m.cells.err)
	r.missing("cells with --notebook-dir", m.notebook.err)
	r.missing("snapshots", m.snapshots.err)
	r.missing("sandbox cold starts and warm cells", m.sandbox.err)

	if cfg.Figures.has("warm") {
		r.warmRows(cfg, m)
	}
	if cfg.Figures.has("cold") {
		r.coldRow(cfg, m)
	}
	if cfg.Figures.has("warm") {
		r.memoryRows(cfg, m)
	}
	if cfg.Figures.has("broker") {
		r.brokerRows(m.broker)
	}
	if cfg.Figures.has("artifacts") {
		r.artifactRows(m.artifacts)
	}
	if cfg.Figures.has("spare") {
		r.spareRows(m.spare)
	}
	if cfg.Figures.has("cells") {
		r.dataRows(m.cells)
	}
	if cfg.Figures.has("notebook") {
		r.notebookRows(m.notebook)
	}
	if cfg.Figures.has("snapshots") {
		r.snapshotRows(m.snapshots)
	}
	if cfg.Figures.has("sandbox") {
		r.sandboxRows(m.sandbox)
	}
	r.details = details(cfg, m)
	return r
}

// warmRows are the warm cells against the bare pipe, and the worker alone.
func (r *report) warmRows(cfg config, m *measurements) {
	warm50 := row{figure: "warm trivial cell, MCP stdio, p50", target: fmt.Sprintf("<= %gx", targetWarmRatio)}
	warm90 := row{figure: "warm trivial cell, MCP stdio, p90", target: "-"}
	if m.warmErr == nil {
		warm50.value, warm90.value = fmtDur(percentile(m.warm, 50)), fmtDur(percentile(m.warm, 90))
	} else {
		warm50.value, warm90.value = notMeasured(m.warmErr), notMeasured(m.warmErr)
	}
	if m.floorErr == nil {
		warm50.baseline = fmtDur(percentile(m.floor, 50)) + " bare pipe p50"
		warm90.baseline = fmtDur(percentile(m.floor, 90)) + " bare pipe p90"
	} else {
		warm50.baseline, warm90.baseline = notMeasured(m.floorErr), notMeasured(m.floorErr)
	}
	if m.warmErr == nil && m.floorErr == nil {
		ratio := durRatio(percentile(m.warm, 50), percentile(m.floor, 50))
		warm50.ratio, warm50.met = fmtRatio(ratio), yesNo(ratio <= targetWarmRatio)
		warm90.ratio = fmtRatio(durRatio(percentile(m.warm, 90), percentile(m.floor, 90)))
	}
	alone := row{figure: "  diagnostic: same cell, worker protocol alone, p50", target: "-"}
	switch {
	case m.workerAloneErr != nil:
		alone.value = notMeasured(m.workerAloneErr)
	case m.floorErr == nil:
		alone.value = fmtDur(percentile(m.workerAlone, 50))
		alone.baseline = fmtDur(percentile(m.floorAlone, 50)) + " bare pipe p50"
		alone.ratio = fmtRatio(durRatio(percentile(m.workerAlone, 50), percentile(m.floorAlone, 50)))
	default:
		alone.value = fmtDur(percentile(m.workerAlone, 50))
	}
	r.rows = append(r.rows, fill(warm50), fill(warm90), fill(alone))
}

// coldRow is the cold start against a bare start with the worker's imports.
func (r *report) coldRow(cfg config, m *measurements) {
	cold := row{figure: fmt.Sprintf("cold: server start to first cell result, median of %d", cfg.ColdRuns),
		target: fmt.Sprintf("<= %gx", targetColdRatio)}
	if m.coldErr == nil {
		cold.value = fmtDur(median(coldTotals(m.cold)))
	} else {
		cold.value = notMeasured(m.coldErr)
	}
	if m.importsErr == nil {
		cold.baseline = fmtDur(median(m.imports)) + " python -c 'import ...' to ready"
	} else {
		cold.baseline = notMeasured(m.importsErr)
	}
	if m.coldErr == nil && m.importsErr == nil {
		ratio := durRatio(median(coldTotals(m.cold)), median(m.imports))
		cold.ratio, cold.met = fmtRatio(ratio), yesNo(ratio <= targetColdRatio)
	}
	r.rows = append(r.rows, fill(cold))
}

// memoryRows are the server's RSS and the output flood.
func (r *report) memoryRows(cfg config, m *measurements) {
	idle := row{figure: "idle server RSS (after initialize, tools/list, python_health, 200 ms)", target: "<= " + mib(targetIdleRSS)}
	if m.idleErr == nil {
		idle.value, idle.met = mib(m.idle.rss), yesNo(m.idle.rss <= targetIdleRSS)
	} else {
		idle.value = notMeasured(m.idleErr)
	}
	r.rows = append(r.rows, fill(idle))
	after := row{figure: fmt.Sprintf("server RSS after %d warm cells", cfg.N+1), target: "-"}
	switch {
	case m.afterCellsErr != nil:
		after.value = notMeasured(m.afterCellsErr)
	case m.warmErr != nil:
		after.value = mib(m.afterCells.rss) + " (cells failed)"
	default:
		after.value = mib(m.afterCells.rss)
	}
	if m.idleErr == nil && m.afterCellsErr == nil {
		after.baseline, after.ratio = mib(m.idle.rss)+" idle", fmtRatio(float64(m.afterCells.rss)/float64(m.idle.rss))
	}
	r.rows = append(r.rows, fill(after))

	// Output flood.
	runs := len(m.flood)
	if m.floodErr != nil {
		runs = floodRuns
	}
	flood := row{figure: fmt.Sprintf("output flood, 10^6 prints, median of %d", runs), target: fmt.Sprintf("<= %gx", targetFloodRatio)}
	var floodTook []time.Duration
	for _, f := range m.flood {
		floodTook = append(floodTook, f.took)
	}
	if m.floodErr == nil {
		flood.value = fmtDur(median(floodTook))
	} else {
		flood.value = notMeasured(m.floodErr)
	}
	if m.floodBaseErr == nil {
		flood.baseline = fmtDur(median(m.floodBase)) + " python -c > /dev/null"
	} else {
		flood.baseline = notMeasured(m.floodBaseErr)
	}
	if m.floodErr == nil && m.floodBaseErr == nil {
		ratio := durRatio(median(floodTook), median(m.floodBase))
		flood.ratio, flood.met = fmtRatio(ratio), yesNo(ratio <= targetFloodRatio)
	}
	r.rows = append(r.rows, fill(flood))
	floodMem := row{figure: "server RSS after the flood", target: "flat (<= +" + mib(flatGrowth) + ")"}
	if m.floodMemErr == nil {
		growth := int64(m.afterFlood.rss) - int64(m.beforeFlood.rss)
		floodMem.value = mib(m.afterFlood.rss)
		floodMem.baseline = mib(m.beforeFlood.rss) + " before"
		floodMem.ratio = fmtRatio(float64(m.afterFlood.rss) / float64(m.beforeFlood.rss))
		floodMem.met = yesNo(growth <= flatGrowth)
	} else {
		floodMem.value = notMeasured(m.floodMemErr)
	}
	r.rows = append(r.rows, fill(floodMem))
}

// brokerRows are a cell's mcp.call against a direct go-sdk call to the same server:
// the value is the cell-side percentile with its overhead over the direct one.
func (r *report) brokerRows(f brokerFigure) {
	b50 := row{figure: "broker call from a cell (mcp.call echo), p50",
		target: fmt.Sprintf("<= +%s overhead", fmtDur(targetBrokerOverhead))}
	b90 := row{figure: "broker call from a cell (mcp.call echo), p90", target: "-"}
	for _, x := range []struct {
		row *row
		p   float64
	}{{&b50, 50}, {&b90, 90}} {
		if f.cellErr == nil {
			x.row.value = fmtDur(percentile(f.cell, x.p))
		} else {
			x.row.value = notMeasured(f.cellErr)
		}
		if f.directErr == nil {
			x.row.baseline = fmt.Sprintf("%s direct go-sdk call p%g", fmtDur(percentile(f.direct, x.p)), x.p)
		} else {
			x.row.baseline = notMeasured(f.directErr)
		}
		if f.cellErr == nil && f.directErr == nil {
			cell, direct := percentile(f.cell, x.p), percentile(f.direct, x.p)
			x.row.value += " (" + fmtOverhead(cell-direct) + ")"
			x.row.ratio = fmtRatio(durRatio(cell, direct))
		}
	}
	if f.cellErr == nil && f.directErr == nil {
		b50.met = yesNo(percentile(f.cell, 50)-percentile(f.direct, 50) <= targetBrokerOverhead)
	}
	r.rows = append(r.rows, fill(b50), fill(b90))
}

// artifactRanges is how many artifact_read calls cover the artifact.
const artifactRanges = (artifactBytes + artifactRange - 1) / artifactRange

// artifactRows are the 16 MiB upload and full ranged read, each against the same bytes
// through a file in the same cell; met compares the median with the target.
func (r *report) artifactRows(f artifactFigure) {
	f.err = f.failure()
	runs := len(f.runs)
	if f.err != nil {
		runs = artifactRuns
	}
	target := fmt.Sprintf("<= %g s", targetArtifact.Seconds())
	up := row{figure: fmt.Sprintf("artifact upload, 16 MiB artifact(data) in a cell, median of %d", runs), target: target}
	rd := row{figure: fmt.Sprintf("artifact full read, %d artifact_read base64 ranges, median of %d", artifactRanges, runs), target: target}
	if f.err != nil {
		up.value, up.baseline = notMeasured(f.err), notMeasured(f.err)
		rd.value, rd.baseline = notMeasured(f.err), notMeasured(f.err)
		r.rows = append(r.rows, fill(up), fill(rd))
		return
	}
	upload, read, fileWrite, fileRead := f.medians()
	up.value, up.baseline = fmtDur(upload), fmt.Sprintf("%s file write, %d KiB chunks", fmtDur(fileWrite), artifactChunk>>10)
	up.ratio, up.met = fmtRatio(durRatio(upload, fileWrite)), yesNo(upload <= targetArtifact)
	rd.value, rd.baseline = fmtDur(read), fmtDur(fileRead)+" file read, 64 KiB chunks"
	rd.ratio, rd.met = fmtRatio(durRatio(read, fileRead)), yesNo(read <= targetArtifact)
	r.rows = append(r.rows, fill(up), fill(rd))
}

// fmtOverhead is a signed difference of durations.
func fmtOverhead(d time.Duration) string {
	if d < 0 {
		return "-" + fmtDur(-d)
	}
	return "+" + fmtDur(d)
}

func coldTotals(runs []coldRun) []time.Duration {
	var out []time.Duration
	for _, c := range runs {
		out = append(out, c.total)
	}
	return out
}

func details(cfg config, m *measurements) []string {
	var d []string
	add := func(format string, args ...any) { d = append(d, fmt.Sprintf(format, args...)) }
	if m.floorErr == nil && len(m.floor) > 0 {
		add("bare pipe round trip, one beside each warm cell (%d, after %d warm-up): %s", len(m.floor), floorWarmup, spread(m.floor))
	}
	if m.floorErr == nil && len(m.floorAlone) > 0 {
		add("bare pipe round trip, one beside each round trip of the worker alone (%d): %s", len(m.floorAlone), spread(m.floorAlone))
	}
	if m.workerAloneErr == nil {
		add("worker alone, over its wire protocol with no server (%d after %d warm-up): %s", len(m.workerAlone), floorWarmup, spread(m.workerAlone))
	} else if !errors.Is(m.workerAloneErr, errSkipped) {
		add("worker alone: not measured: %v", m.workerAloneErr)
	}
	if m.warmErr == nil {
		add("warm cells (%d after one warm-up): %s", len(m.warm), spread(m.warm))
		add("warm-up cell (first cell of the session, starts the worker): %s; server VmRSS after it %s", fmtDur(m.warmup), mib(m.afterWarmup.rss))
		server := append([]float64(nil), m.warmServer...)
		sort.Float64s(server)
		srv50 := server[(len(server)-1)/2]
		add("server-reported elapsed_ms of warm cells: p50 %.3f ms, so the stdio and MCP path adds about %s at p50",
			srv50, fmtDur(percentile(m.warm, 50)-time.Duration(srv50*float64(time.Millisecond))))
	}
	if m.bareErr == nil {
		add("bare python -c pass: median %s (%s)", fmtDur(median(m.bare)), list(m.bare))
	}
	if m.importsErr == nil {
		add("python -u -c 'import <worker imports>; print ready', to the ready line: median %s (%s)", fmtDur(median(m.imports)), list(m.imports))
	}
	if m.importsExitErr == nil {
		line := fmt.Sprintf("python -c 'import <worker imports>', to its exit: median %s (%s)", fmtDur(median(m.importsExit)), list(m.importsExit))
		if m.coldErr == nil {
			line += fmt.Sprintf("; against it the cold ratio is %s", fmtRatio(durRatio(median(coldTotals(m.cold)), median(m.importsExit))))
		}
		add("%s", line)
	}
	if m.coldErr == nil {
		var parts []string
		var inits, cells []time.Duration
		for _, c := range m.cold {
			parts = append(parts, fmt.Sprintf("%s = %s + %s", fmtDur(c.total), fmtDur(c.init), fmtDur(c.cell)))
			inits, cells = append(inits, c.init), append(cells, c.cell)
		}
		add("cold runs, total = start to initialize reply + first cell: %s", strings.Join(parts, "; "))
		add("cold medians: to initialize reply %s, first cell %s", fmtDur(median(inits)), fmtDur(median(cells)))
	}
	if m.idleErr == nil {
		add("idle server: VmRSS %s, VmHWM %s, %d tools listed", mib(m.idle.rss), mib(m.idle.hwm), m.tools)
	}
	if m.afterCellsErr == nil {
		add("after warm cells: server VmRSS %s, VmHWM %s", mib(m.afterCells.rss), mib(m.afterCells.hwm))
	}
	if m.workerErr == nil {
		add("worker: pid %d, %s (Python %s)", m.worker.pid, m.worker.executable, m.worker.version)
	}
	for _, p := range m.processMem {
		add("after warm cells: %s", p)
	}
	for i, f := range m.flood {
		add("flood run %d: round trip %s, server elapsed_ms %.1f, stdout truncated %v, result %d bytes", i+1, fmtDur(f.took), f.serverMs, f.truncated, f.size)
	}
	if m.floodBaseErr == nil {
		add("plain-Python flood to /dev/null (process wall time, start included): %s", list(m.floodBase))
	}
	if m.floodMemErr == nil {
		add("around the flood: server VmRSS %s before, %s after, VmHWM %s after", mib(m.beforeFlood.rss), mib(m.afterFlood.rss), mib(m.afterFlood.hwm))
	}
	if m.shutdownReport != "" {
		add("warm session shutdown: %s", m.shutdownReport)
	}
	f := m.broker
	if f.directErr == nil {
		add("direct go-sdk client (mcp.CommandTransport) echo calls to the fixture (%d after %d warm-up): %s", len(f.direct), brokerWarmup, spread(f.direct))
	}
	if f.configured != "" {
		add("broker session before the timing cell: python_health broker %s", f.configured)
	}
	if f.cellErr == nil {
		add("mcp.call echo from one cell, timed with time.perf_counter_ns (%d after %d warm-up, the first of which connects the peer): %s",
			len(f.cell), brokerWarmup, spread(f.cell))
		add("timing cell: round trip %s, server elapsed_ms %.1f", fmtDur(f.cellRound), f.cellMs)
	}
	if f.cellErr == nil && f.directErr == nil {
		add("broker overhead over the direct call: p50 %s, p90 %s, mean %s (target p50 <= %s)",
			fmtOverhead(percentile(f.cell, 50)-percentile(f.direct, 50)), fmtOverhead(percentile(f.cell, 90)-percentile(f.direct, 90)),
			fmtOverhead(mean(f.cell)-mean(f.direct)), fmtDur(targetBrokerOverhead))
	}
	if f.shutdown != "" {
		add("broker session shutdown: %s", f.shutdown)
	}
	d = append(d, artifactDetails(m.artifacts)...)
	return append(d, snapshotDetails(m.snapshots)...)
}

func artifactDetails(f artifactFigure) []string {
	var d []string
	add := func(format string, args ...any) { d = append(d, fmt.Sprintf(format, args...)) }
	if len(f.runs) > 0 {
		add("artifacts: %d bytes (16 MiB less 1 KiB) of os.urandom, one server and session over stdio, each artifact deleted after its read", artifactBytes)
		add("artifact upload: artifact(data) timed with time.perf_counter in the cell (the value built before, not timed), " +
			"its reference's size and sha256 checked against hashlib in the same cell")
		add("artifact read: %d artifact_read calls of %d bytes, encoding base64, session_id from python_health, timed by the client "+
			"from the first request to the last range decoded and hashed; the sha256 of all ranges equals the reference's", artifactRanges, artifactRange)
		add("artifact baseline: the same bytes through a plain file in the same cell, in the project directory (under the temporary "+
			"directory, like the store's files; no fsync, as the store does none): os.write in %d KiB chunks (the upload's append size), "+
			"then os.read in %d KiB chunks (a range's size), each timed with time.perf_counter", artifactChunk>>10, artifactRange>>10)
		var ups, reads []time.Duration
		for i, run := range f.runs {
			ups, reads = append(ups, run.upload), append(reads, run.read)
			add("artifact run %d: upload %s (%.0f MiB/s; cell round trip %s, server elapsed_ms %.1f); read %s in %d ranges (%.0f MiB/s; "+
				"%s from requests written to replies read, %s in the client's JSON and base64 decoding and hashing); file write %s, file read %s",
				i+1, fmtDur(run.upload), mibPerSecond(run.size, run.upload), fmtDur(run.cellRound), run.cellMs,
				fmtDur(run.read), run.ranges, mibPerSecond(run.size, run.read), fmtDur(run.readWire), fmtDur(run.read-run.readWire),
				fmtDur(run.fileWrite), fmtDur(run.fileRead))
		}
		add("artifact slowest of %d: upload %s, read %s (met? compares the medians with %s)", len(f.runs),
			fmtDur(percentile(ups, 100)), fmtDur(percentile(reads, 100)), fmtDur(targetArtifact))
	}
	if f.shutdown != "" {
		add("artifacts session shutdown: %s", f.shutdown)
	}
	return d
}

// missing records a figure that could not be measured; figures that failed for one
// and the same reason share a line.
func (r *report) missing(what string, err error) {
	if err == nil || errors.Is(err, errNoProcfs) || errors.Is(err, errSkipped) {
		return
	}
	why := err.Error()
	for i, line := range r.unmeasured {
		if names, found := strings.CutSuffix(line, ": "+why); found {
			r.unmeasured[i] = names + ", " + what + ": " + why
			return
		}
	}
	r.unmeasured = append(r.unmeasured, what+": "+why)
}

func (r *report) String() string {
	var b strings.Builder
	b.WriteString("repl-mcp benchmark\n\n")
	for _, h := range r.header {
		b.WriteString(h + "\n")
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\tbaseline\tratio\ttarget\tmet?")
	for _, x := range r.rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", x.figure, x.value, x.baseline, x.ratio, x.target, x.met)
	}
	tw.Flush()
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		b.WriteString("\n" + title + ":\n")
		for _, l := range lines {
			b.WriteString("  - " + l + "\n")
		}
	}
	section("details", r.details)
	section("notes", r.notes)
	section("not measured", r.unmeasured)
	return b.String()
}

func fill(x row) row {
	for _, p := range []*string{&x.value, &x.baseline, &x.ratio, &x.target, &x.met} {
		if *p == "" {
			*p = "-"
		}
	}
	return x
}

func notMeasured(err error) string {
	if errors.Is(err, errNoProcfs) {
		return err.Error()
	}
	return "not measured"
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// percentile is the nearest-rank p-th percentile of samples.
func percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func median(samples []time.Duration) time.Duration { return percentile(samples, 50) }

func mean(samples []time.Duration) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	return sum / time.Duration(len(samples))
}

func spread(samples []time.Duration) string {
	return fmt.Sprintf("min %s, p50 %s, p90 %s, p99 %s, max %s, mean %s",
		fmtDur(percentile(samples, 0)), fmtDur(percentile(samples, 50)), fmtDur(percentile(samples, 90)),
		fmtDur(percentile(samples, 99)), fmtDur(percentile(samples, 100)), fmtDur(mean(samples)))
}

func list(samples []time.Duration) string {
	parts := make([]string, len(samples))
	for i, s := range samples {
		parts[i] = fmtDur(s)
	}
	return strings.Join(parts, ", ")
}

func durRatio(a, b time.Duration) float64 {
	if b <= 0 {
		return math.Inf(1)
	}
	return float64(a) / float64(b)
}

func fmtRatio(r float64) string { return fmt.Sprintf("%.2fx", r) }

func fmtDur(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 10:
		return fmt.Sprintf("%.3f ms", ms)
	case ms < 10000:
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.2f s", ms/1000)
}

func mibPerSecond(bytes int, d time.Duration) float64 {
	if d <= 0 {
		return math.Inf(1)
	}
	return float64(bytes) / (1 << 20) / d.Seconds()
}

func mib(bytes uint64) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }
