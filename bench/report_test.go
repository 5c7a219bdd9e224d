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
		floodBaseErr: fail, floodMemErr: fail}
	text := buildReport(config{N: 5, ColdRuns: 2}, environment{}, m, nil).String()
	if !strings.Contains(text, "not measured") || strings.Contains(text, "NaN") || strings.Contains(text, "Inf") {
		t.Errorf("report of failures:\n%s", text)
	}
}
