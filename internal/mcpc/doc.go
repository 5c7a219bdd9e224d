// Package mcpc is the small MCP client the contract scripts (testscripts/*.txtar) use
// to talk to the real repl-mcp binary over real stdio. It owns the client and its
// script language; it starts one process, the repl-mcp it speaks to, and stops it
// before it returns. [Main] is the command; test binaries register it with
// testscript (the root package's main_test.go), as internal/mcpfixture's is.
//
// Usage, from a script:
//
//	exec mcpc SCRIPT [-- SERVER-ARGS...]
//
// mcpc starts `repl-mcp SERVER-ARGS...` (found on PATH) as its child, speaks
// newline-delimited JSON-RPC on the child's stdin and stdout, and runs SCRIPT, a
// file of one-line commands. Blank lines and lines starting with # are ignored.
// It exits 0 only when every command passed; otherwise it prints the failing
// line (file:line), the reason and the tail of the transcript to stderr and
// exits 1. The server's stderr is copied to mcpc's stderr, each line prefixed
// with "[repl-mcp] ".
//
// Every line the server writes to stdout must be a JSON-RPC message: a line that
// is not JSON, or is longer than the 1 MiB frame limit, fails the run.
//
// When the script ends and the server is still running, mcpc closes its stdin
// and requires it to exit with status 0 within 10 s (closing stdin stops the
// server).
//
// Substitution, done on each line before it runs:
//
//	{{VAR}}      a variable set by save or server-pid, else an environment
//	             variable (e.g. {{WORK}})
//	{{VAR+N}}    VAR plus the integer N (also {{VAR-N}}); VAR must be an integer
//	{{@FILE}}    the contents of FILE as a JSON string literal (for longer cells:
//	             call execute_python {"code": {{@cell.py}}})
//
// Session:
//
//	init [VERSION]          initialize (default 2025-11-25), then
//	                        notifications/initialized; the initialize response
//	                        becomes the last response
//	proto VERSION           stateless mode: send no initialize; every request
//	                        carries _meta with io.modelcontextprotocol/
//	                        protocolVersion, clientInfo and clientCapabilities
//	client NAME             the clientInfo name of a later init or proto
//	                        (default mcpc): the server shapes results per
//	                        client (claude-code, codex-mcp-client)
//	capabilities JSON       the clientCapabilities every later stateless
//	                        request carries (default {}), such as
//	                        {"extensions":{"io.modelcontextprotocol/tasks":{}}}
//
// Requests (each reply that is waited for becomes "the last response"):
//
//	call TOOL [JSON]        tools/call with arguments JSON (omitted: no
//	                        arguments key) and wait for the reply
//	list                    tools/list and wait
//	request METHOD [JSON]   any request with params JSON, and wait
//	notify METHOD [JSON]    any notification
//	send NAME TOOL [JSON]   tools/call without waiting; NAME names the request
//	send-progress NAME TOOL [JSON]
//	                        the same, with _meta.progressToken "NAME": the
//	                        server may send notifications/progress for it
//	progress NAME           the last response becomes {"progress": [...]}: the
//	                        params of every notifications/progress received for
//	                        NAME's token so far, in order, each with
//	                        "received_ms" (since the request was sent) added
//	wait NAME [DUR]         wait for the reply to the request sent as NAME
//	cancel NAME             notifications/cancelled for the request sent as NAME
//	rawline TEXT            write TEXT and a newline as they are
//	rawfile FILE            write FILE's bytes as they are, in one write
//	wait-id JSONID [DUR]    wait for a reply whose id is JSONID (1, "a", null)
//	poll TOOL JSON until PATH OP [VALUE] within DUR
//	                        call TOOL until the assertion holds on its reply
//	poll-request METHOD JSON until PATH OP [VALUE] within DUR
//	                        the same with any request (tasks/get)
//	set-timeout DUR         the bound of every later wait (default 60s)
//
// Waits end early, with a clear failure, when the server closes its stdout, when
// it writes a non-JSON line, or when the test's deadline (MCPC_DEADLINE) is near.
//
// Progress is checked as it arrives, in every script: a notifications/progress
// whose token no request sent with send-progress carries, one that arrives after
// the reply to its request, or one whose progress does not increase fails the run.
//
// Assertions, on the last response:
//
//	expect PATH == JSON     deep equality (numbers compare as numbers)
//	expect PATH != JSON     (true when PATH is absent: isError != true)
//	expect PATH ~ REGEX     Go regexp on the string (other values: their
//	expect PATH !~ REGEX    compact JSON)
//	expect PATH contains JSONSTRING
//	expect PATH < <= > >= NUMBER
//	expect PATH exists      present (null counts as present)
//	expect PATH absent
//	expect-size OP N        bytes of the raw reply line (without newline)
//	expect-elapsed OP DUR   round trip of the last reply
//
// PATH is dotted (result.tools.0.name) or a JSON pointer (/result/tools/0/name).
// "sc" at the start stands for result.structuredContent, "text" for
// result.content.0.text and "footer" for the text of the last text block (the
// text form's footer line, a block of its own). A "#" segment is the length of what precedes it (UTF-8
// bytes of a string, elements of an array, keys of an object). A "*" segment
// matches every element: the assertion must hold for each, and for at least one.
//
// Goldens:
//
//	save-reply FILE         write the last reply to FILE (relative to the working
//	                        dir) in a stable form, for `cmp FILE golden` in the
//	                        script; run the script's test with -update to rewrite
//	                        the golden file inside the archive
//
// The stable form is the reply as indented JSON (two spaces), keys sorted, numbers
// as the server wrote them, no HTML escaping, ending in a newline, with the
// volatile values replaced by placeholders:
//
//   - each distinct UUID in a string becomes <uuid-1>, <uuid-2>, ... in order of
//     first appearance (keys in sorted order), so equal ids stay visibly equal;
//   - the values of the keys pid, elapsed_ms, version, python_version, major and
//     minor (and the kernel's landlock_abi) become "<pid>", "<elapsed_ms>", ... (processes,
//     timings, versions);
//   - $PYTHON and $WORK (and their real paths) inside strings become "$PYTHON" and
//     "$WORK";
//   - result.content.0.text that is result.structuredContent as JSON becomes
//     "<structuredContent as JSON>" (it repeats the value, volatile parts and all).
//
// A golden compares the same under every interpreter.
//
// Variables and processes:
//
//	save VAR PATH           VAR = the value at PATH (strings raw, others JSON)
//	save-match VAR PATH RE  VAR = the first group of the Go regexp RE in the
//	                        string at PATH (an id in a text-form result)
//	server-pid VAR          VAR = the server's pid
//	signal-server SIG       send SIG (KILL, TERM, INT, QUIT, HUP) to the server
//	close-stdin             close the server's stdin
//	wait-exit DUR STATUS    the server exits within DUR with STATUS: an integer
//	                        exit code, or a signal name (KILL) if killed by it
//	pid-alive PID           PID is a live process (not a zombie)
//	pid-gone PID within DUR PID is gone (or a zombie) within DUR
//	file-absent PATH        PATH does not exist (relative to the working dir)
//	file-exists PATH
//	touch PATH              create PATH (empty), for a process a cell started to
//	                        wait for: something the script does between calls
//
// There is no sleep: a script waits for what it needs with poll or the bounded
// waits above (docs/design.md, "Tests").
//
// DUR is a Go duration (500ms, 2s).
//
// docs/design.md ("Tests") says how the contract scripts run.
package mcpc
