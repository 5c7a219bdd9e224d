// Package randjson makes random JSON values for the differential tests of the hand-
// written fast paths (a line decoded or encoded by the stdio transport, a tool result
// encoded for the wire), which compare each against go-sdk's or encoding/json's own
// on the same values. Its strings are those that need escaping. It is used by tests
// only.
//
// docs/design.md ("Fast paths, and what each saves") says why every fast path has
// one.
package randjson
