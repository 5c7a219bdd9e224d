package repl

import (
	"strings"
	"testing"
	"time"
)

// TestProbeThatPrintsTooMuchSaysSo: an interpreter whose probe floods its output,
// in many short lines or in one, fails with the output-limit message, not as a
// probe that timed out.
func TestProbeThatPrintsTooMuchSaysSo(t *testing.T) {
	m := newTestManager(t, realPython(t))
	// Long enough that a probe which stops at the limit never reaches it.
	m.SetProbeTimeout(5 * time.Second)
	for name, script := range map[string]string{
		"lines":    `while :; do echo '{"version":"3.12.0"}'; done`,
		"one line": `while :; do printf 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'; done`,
	} {
		_, err := m.Open(t.Context(), OpenRequest{Name: "flood", Project: t.TempDir(), Python: fakePython(t, script)})
		if err == nil || !strings.Contains(err.Error(), msgProbeTooLarge) {
			t.Errorf("%s: err = %v, want %q", name, err, msgProbeTooLarge)
		}
	}
}
