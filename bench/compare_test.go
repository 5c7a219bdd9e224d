package main

import (
	"testing"
	"time"
)

// The comparison pairs each round's candidate with the same round's baseline, and its
// summary is the median of those per-round ratios, not a ratio of medians.
func TestCompareRatiosArePerRound(t *testing.T) {
	ms := time.Millisecond
	old := []time.Duration{1 * ms, 10 * ms, 2 * ms}
	cand := []time.Duration{2 * ms, 5 * ms, 2 * ms}
	got := durRatios(cand, old)
	want := []float64{2, 0.5, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("durRatios = %v, want %v", got, want)
		}
	}
	if s := ratioRange(got); s != "1.00x [0.50 to 2.00]" {
		t.Errorf("ratioRange = %q", s)
	}
	if m := medianFloat([]float64{4, 1, 3, 2}); m != 2 {
		t.Errorf("medianFloat of four = %v, want the nearest-rank 2", m)
	}
	if s := durRange(old); s != "2.000 ms [1.000 ms to 10.0 ms]" {
		t.Errorf("durRange = %q", s)
	}
	if s := mibRange([]float64{12.5, 12.25, 13}); s != "12.5 MiB [12.2 to 13.0]" {
		t.Errorf("mibRange = %q", s)
	}
}
