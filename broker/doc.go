// Package broker owns repl-mcp's downstream MCP client: the connections to the
// servers cell code may call (stdio peers under a guardian, and Streamable HTTP),
// their catalogues, the calls themselves with their allowlist, argument and
// journal checks, explain, health, and the per-project [Set]. It does not own the
// registry's rules (package registry), argument checking (argcheck), the effect
// journal (journal), OAuth grants (oauth), nor the cell side of the bridge: package
// cellops decodes the worker's ops into this package's typed methods. main makes
// the Set and closes it after the sessions; closing a [Broker] stops every peer it
// started and waits for them.
//
// A [Broker] serves one project. It loads its registry when made and again when a
// request finds the last load 30 s old or [Broker.Refresh] asks; a registry with a
// defect is kept as its configuration_error while Python keeps running, and broker
// calls fail closed until a reload succeeds. Connections are lazy: nothing starts
// until a call or listing names a server; aliases with the same launch share one
// connection. A call is checked (allowlist, catalogue, inputSchema) before the
// journal records its dispatch, and the dispatch is on record (on disk with
// --journal) before the request is sent. A Set holds one Broker per project,
// shared by that project's sessions, and one journal and validator for all.
//
// The broker's contract is docs/contract.md §8 (and §7.5 for the mcp helper cells
// see); docs/design.md says how its packages fit together.
package broker
