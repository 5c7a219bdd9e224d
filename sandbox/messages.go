package sandbox

// The sandbox's messages (docs/contract.md §13.2 keeps their tokens).
const (
	msgNotLinux       = "--sandbox %s: repl-mcp's sandbox needs Linux (Landlock and seccomp); on %s there is none yet (docs/design.md has the sandbox-exec plan): run without --sandbox"
	msgNoLandlock     = "--sandbox %s: this kernel has no Landlock (Linux 5.13 or newer, built with CONFIG_SECURITY_LANDLOCK and landlock in its lsm= list); run without --sandbox, or on such a kernel"
	msgNoSeccomp      = "--sandbox %s: this kernel has no seccomp filters (CONFIG_SECCOMP_FILTER), which keep UDP, raw and Unix sockets away from cells; run without --sandbox, or on such a kernel"
	msgProxyNeedsABI4 = "--allow-domain needs Landlock ABI 4 (Linux 6.7) to let cells reach only the proxy's port; this kernel has ABI %d: drop --allow-domain (the network is then off) or use a newer kernel"
	msgNetOnNeedsNone = "the network policy is unrestricted but the kernel's Landlock ABI %d cannot express it"

	// What a kernel does not enforce, in health, doctor and at start.
	notEnforcedSignals  = "signals to processes outside the sandbox are not blocked (Landlock ABI 6, Linux 6.12)"
	notEnforcedAbstract = "abstract Unix sockets of processes outside the sandbox stay reachable (Landlock ABI 6, Linux 6.12)"
	limitRefer          = "moving or linking a file between directories fails even inside the writable roots (Landlock ABI 2, Linux 5.19)"
	limitTruncate       = "truncate() by path fails everywhere, inside the writable roots too (Landlock ABI 3, Linux 6.2)"

	// Codex's policy (FromCodex).
	msgCodexMissing      = "Codex's sandbox policy is missing from this call (_meta[\"codex/sandbox-state-meta\"]): repl-mcp runs with --sandbox inherit-codex and refuses to run code without it; update Codex, or start repl-mcp with an explicit --sandbox mode"
	msgCodexUnreadable   = "Codex's sandbox policy could not be read (%s): repl-mcp runs with --sandbox inherit-codex and refuses what it cannot enforce; start repl-mcp with an explicit --sandbox mode"
	msgCodexCarveOut     = "Codex keeps %s read-only; it stays writable here (Landlock cannot take write access back beneath the writable root %s)"
	msgCodexReadsLimited = "Codex limits reads to some paths; repl-mcp's sandbox keeps reads open and cannot enforce that"
)
