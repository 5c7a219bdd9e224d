// Package testwait is the one way tests wait for a condition: polled, bounded by a
// limit and by the test's own deadline (less a margin), so that a test that waits in
// vain fails with what it was waiting for instead of being killed by go test's
// timeout with nothing said. It owns no goroutine and no process.
//
// docs/design.md ("Tests") says why tests wait this way and never sleep.
package testwait
