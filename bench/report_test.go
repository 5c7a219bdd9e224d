package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var s []time.Duration
	for i := 10; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0, 1}, {50, 5}, {90, 9}, {99, 10}, {100, 10}} {
		if got := percentile(s, c.p); got != c.want*time.Millisecond {
			t.Errorf("percentile(%v) = %v, want %v", c.p, got, c.want*time.Millisecond)
		}
	}
	if s[0] != 10*time.Millisecond {
		t.Error("percentile sorted its argument in place")
	}
}

func TestMissingSharesLinesByReason(t *testing.T) {
	r := &report{}
	boom := errors.New("initialize: timed out")
	r.missing("warm cells", boom)
	r.missing("idle server RSS", boom)
	r.missing("cold start", errors.New("other"))
	r.missing("nothing", nil)
	r.missing("RSS", errNoProcfs)
	want := []string{"warm cells, idle server RSS: initialize: timed out", "cold start: other"}
	if strings.Join(r.unmeasured, "\n") != strings.Join(want, "\n") {
		t.Errorf("unmeasured = %q, want %q", r.unmeasured, want)
	}
}

func TestReportOfNothingMeasured(t *testing.T) {
	fail := errors.New("no server")
	m := &measurements{floorErr: fail, workerAloneErr: fail, bareErr: fail, importsErr: fail, importsExitErr: fail,
		coldErr: fail, idleErr: fail, warmErr: fail, afterCellsErr: fail, workerErr: fail, floodErr: fail,
		floodBaseErr: fail, floodMemErr: fail, broker: brokerFigure{directErr: fail, cellErr: fail}, artifacts: artifactFigure{err: fail}}
	text := buildReport(config{N: 5, ColdRuns: 2}, environment{}, m, nil).String()
	if !strings.Contains(text, "not measured") || strings.Contains(text, "NaN") || strings.Contains(text, "Inf") {
		t.Errorf("report of failures:\n%s", text)
	}
}

func TestBrokerRowsAndSkippedFigures(t *testing.T) {
	ms := func(ms ...float64) []time.Duration {
		var out []time.Duration
		for _, m := range ms {
			out = append(out, time.Duration(m*float64(time.Millisecond)))
		}
		return out
	}
	m := &measurements{broker: brokerFigure{direct: ms(0.5, 0.4, 0.6), cell: ms(0.55, 0.65, 0.75)}, artifacts: artifactFigure{err: errSkipped}}
	for _, p := range []*error{&m.floorErr, &m.workerAloneErr, &m.bareErr, &m.importsErr, &m.importsExitErr, &m.coldErr,
		&m.idleErr, &m.warmErr, &m.afterCellsErr, &m.workerErr, &m.floodErr, &m.floodBaseErr, &m.floodMemErr} {
		*p = errSkipped
	}
	figures, err := parseFigures("broker")
	if err != nil {
		t.Fatal(err)
	}
	rep := buildReport(config{N: 5, ColdRuns: 2, Figures: figures}, environment{}, m, nil)
	if len(rep.unmeasured) != 0 || len(rep.rows) != 2 {
		t.Fatalf("rows %q, unmeasured %q", rep.rows, rep.unmeasured)
	}
	want := row{figure: "broker call from a cell (mcp.call echo), p50", value: "0.650 ms (+0.150 ms)",
		baseline: "0.500 ms direct go-sdk call p50", ratio: "1.30x", target: "<= +0.200 ms overhead", met: "yes"}
	if rep.rows[0] != want {
		t.Errorf("p50 row = %q, want %q", rep.rows[0], want)
	}
	m.broker.cell = ms(0.65, 0.75, 0.85)
	if got := buildReport(config{Figures: figures}, environment{}, m, nil).rows[0]; got.met != "no" || got.value != "0.750 ms (+0.250 ms)" {
		t.Errorf("p50 row over target = %q", got)
	}
	if _, err := parseFigures("warm,nope"); err == nil {
		t.Error("parseFigures accepted an unknown group")
	}
	if all, _ := parseFigures("all"); !all.has("cold") || !all.has("broker") {
		t.Error("all does not measure every group")
	}
}

func TestArtifactRows(t *testing.T) {
	m := &measurements{broker: brokerFigure{directErr: errSkipped, cellErr: errSkipped}}
	for _, p := range []*error{&m.floorErr, &m.workerAloneErr, &m.bareErr, &m.importsErr, &m.importsExitErr, &m.coldErr,
		&m.idleErr, &m.warmErr, &m.afterCellsErr, &m.workerErr, &m.floodErr, &m.floodBaseErr, &m.floodMemErr} {
		*p = errSkipped
	}
	figures, err := parseFigures("artifacts")
	if err != nil {
		t.Fatal(err)
	}
	ms := func(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
	for _, u := range []float64{300, 450, 700} {
		m.artifacts.runs = append(m.artifacts.runs, artifactRun{upload: ms(u), read: ms(u + 100), fileWrite: ms(10), fileRead: ms(5),
			readWire: ms(u), ranges: artifactRanges, size: artifactBytes})
	}
	rep := buildReport(config{Figures: figures}, environment{}, m, nil)
	if len(rep.unmeasured) != 0 || len(rep.rows) != 2 {
		t.Fatalf("rows %q, unmeasured %q", rep.rows, rep.unmeasured)
	}
	want := []row{
		{figure: "artifact upload, 16 MiB artifact(data) in a cell, median of 3", value: "450.0 ms",
			baseline: "10.0 ms file write, 256 KiB chunks", ratio: "45.00x", target: "<= 0.5 s", met: "yes"},
		{figure: "artifact full read, 256 artifact_read base64 ranges, median of 3", value: "550.0 ms",
			baseline: "5.000 ms file read, 64 KiB chunks", ratio: "110.00x", target: "<= 0.5 s", met: "no"},
	}
	for i := range want {
		if rep.rows[i] != want[i] {
			t.Errorf("row %d = %q, want %q", i, rep.rows[i], want[i])
		}
	}

	// No run and no error is still not measured, and never a met target.
	m.artifacts = artifactFigure{}
	rep = buildReport(config{Figures: figures}, environment{}, m, nil)
	if len(rep.unmeasured) != 1 || rep.rows[0].value != "not measured" || rep.rows[0].met != "-" {
		t.Errorf("no runs: rows %q, unmeasured %q", rep.rows, rep.unmeasured)
	}
}

func TestDataRowsAreMediansOfTheRoundsRatios(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, m := range v {
			out = append(out, time.Duration(m)*time.Millisecond)
		}
		return out
	}
	f := dataFigure{python: "/py", ours: make([][]time.Duration, len(dataCells)), bare: make([][]time.Duration, len(dataCells))}
	f.ours[0], f.bare[0] = ms(30, 60, 45), ms(20, 30, 40) // ratios 1.5, 2, 1.125: the median is 1.5
	f.ours[2], f.bare[2] = ms(11, 30, 25), ms(10, 10, 10)
	r := &report{}
	r.dataRows(f)
	if len(r.rows) != len(dataCells) {
		t.Fatalf("%d rows, want one a cell", len(r.rows))
	}
	if got := r.rows[0]; got.ratio != "1.50x [1.12 to 2.00]" || got.met != "yes" || got.value != "45.0 ms" {
		t.Errorf("print row = %+v", got)
	}
	if got := r.rows[2]; got.met != "no" || !strings.HasPrefix(got.ratio, "2.50x") {
		t.Errorf("groupby row = %+v", got)
	}
	if got := r.rows[1]; !strings.Contains(got.value, "not measured") {
		t.Errorf("a cell with no round: %+v", got)
	}
}
