package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSpareRows(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var out []time.Duration
		for _, m := range n {
			out = append(out, time.Duration(m)*time.Millisecond)
		}
		return out
	}
	r := &report{}
	r.spareRows(spareFigure{reset: ms(4, 5, 6), open: ms(20, 30, 40), floor: ms(1, 1, 2), withSpare: 5, rounds: 6})
	if len(r.rows) != 2 {
		t.Fatalf("rows: %+v", r.rows)
	}
	reset, open := r.rows[0], r.rows[1]
	if reset.value != fmtDur(5*time.Millisecond) || reset.ratio != "5.00x" || reset.met != "yes" {
		t.Errorf("reset row: %+v", reset)
	}
	if open.value != fmtDur(30*time.Millisecond) || open.met != "no" || !strings.Contains(open.baseline, "warm cell") {
		t.Errorf("open row: %+v", open)
	}
	if len(r.notes) != 1 || !strings.Contains(r.notes[0], "5 of 6 rounds") {
		t.Errorf("notes: %q", r.notes)
	}

	r = &report{}
	r.spareRows(spareFigure{err: errors.New("no server")})
	for _, x := range r.rows {
		if x.value != "not measured" || x.met != "-" {
			t.Errorf("failed figure's row: %+v", x)
		}
	}
}
