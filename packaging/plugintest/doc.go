// Package plugintest holds the tests that keep repl-mcp's Claude Code plugin honest; it
// has no code of its own. The plugin itself is ../../plugin, files only: Claude Code
// copies that whole directory into its cache, so the tests live here, and
// TestPluginHoldsOnlyItsFiles fails if anything else appears there.
//
// The plugin is files: .claude-plugin/plugin.json (metadata), .mcp.json (the
// python-repl MCP server: sh ${CLAUDE_PLUGIN_ROOT}/scripts/repl-mcp-launch.sh --transport
// stdio), scripts/repl-mcp-launch.sh (maps uname to this host's wheel of the plugin's
// version, or the newest development build of it in a mirror directory, and execs
// `uvx --from <wheel> repl-mcp`; when it cannot, it says why on stderr and in JSON-RPC
// errors to the client's handshake, which Claude Code shows), hooks/hooks.json with
// hooks/nudge-python-repl.sh (a PostToolUse reminder after inline Python in Bash), and
// skills/python-repl/SKILL.md (how to use the tools). The marketplace that lists it is
// .claude-plugin/marketplace.json, at the repository root, where `/plugin marketplace
// add iota-uz/repl-mcp` looks for it.
//
// The tests run the launcher under stub `uname` and `uvx` commands for every supported
// and some unsupported hosts and for each failure, run the .mcp.json command, run the
// hook on a table of commands, check the manifests and the skill against the server, run
// the launcher end to end with the pinned real uvx against a wheelhouse offline, and
// drive the pinned Claude Code CLI (claude_test.go) through validate, marketplace add,
// install, details and mcp list, connected and failing. Nothing here starts a process
// that outlives its test.
//
// The plugin's contract is docs/contract.md §10.2 to §10.5.
package plugintest
