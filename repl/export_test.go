package repl

import "time"

// SetProbeTimeout shortens the interpreter probe's bound for tests.
func (m *Manager) SetProbeTimeout(d time.Duration) { m.probeTimeout = d }

// TestOps are the ops' bounds the package's own tests give their workers.
var TestOps = testOps
