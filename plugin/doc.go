// Package plugin holds the Claude Code plugin of repl-mcp, and the tests that keep it
// honest; it has no Go code of its own.
//
// The plugin is files: .claude-plugin/plugin.json (metadata and the python-repl MCP
// server, whose command is the launcher's text inlined as `sh -c`), scripts/repl-mcp-launch.sh
// (maps uname to the release wheel of this host and execs `uvx --from <wheel> repl-mcp`),
// hooks/hooks.json with hooks/nudge-python-repl.sh (a PostToolUse reminder after inline
// Python in Bash), and skills/python-repl/SKILL.md (how to use the tools). The
// marketplace that lists it is ../.claude-plugin/marketplace.json, at the repository
// root, where `/plugin marketplace add iota-uz/repl-mcp` looks for it.
//
// The tests run the launcher under stub `uname` and `uvx` commands for every supported
// and some unsupported hosts, run the manifest's inlined copy, run the hook on a table of
// commands, check the manifests and the skill against the server, and finally run the
// launcher end to end with the pinned real uvx against a wheel built from this checkout.
// Nothing here starts a process that outlives its test.
//
// The plugin's contract is docs/contract.md §10.2 to §10.5.
package plugin
