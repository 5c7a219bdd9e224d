// Package guardian owns process groups: it starts a child in a process group of its
// own and guarantees that the whole group dies when the child exits, when the server
// asks, or when the server itself dies, even by SIGKILL.
//
// A guardian is the repl-mcp binary re-run with the hidden flag --internal-guardian.
// The server starts it with [Start] as a session and process-group leader, connected by
// a control socket on its stdin. The guardian reads the child's [Spec] from that socket,
// starts the child as the leader of a process group of its own (so the child cannot
// setsid out of it) and then only watches: it never copies the child's protocol bytes
// (the server hands its pipes down as inherited descriptors), so it adds no hop to any
// message. On Linux it is a child subreaper, so orphans below it become its children.
// When the control socket hangs up (the server closed it or died) or the child exits,
// the guardian SIGKILLs the detached job groups it was told about and the child's
// group, reaps the child, kills and reaps every orphan it adopted, and then kills its
// own process group.
//
// The package does not know what the child is: a Python worker, an interpreter probe
// or a downstream MCP server are all just a [Spec].
//
// docs/design.md ("Processes") draws the process tree and the descriptors each child
// gets; docs/contract.md §5.1 and §5.9 say what users can rely on.
package guardian
