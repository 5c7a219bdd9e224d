package broker

// The messages the broker gives cell code, in one table (docs/contract.md §8 and
// §13.2). Clients and tests rely on their tokens; each says whether a request
// reached the server and that nothing was retried.
const (
	msgConfigError      = "MCP configuration error: %s; repair registry then mcp.refresh()"
	msgUnknownServer    = "Unknown or unauthorized MCP server; use mcp.servers() and explicit --config, then mcp.refresh()"
	msgToolDenied       = "Tool denied by broker allowedTools policy; mcp.explain(server, tool) describes the independent grant"
	msgUnknownTool      = "Unknown or unauthorized MCP tool; inspect mcp.list_tools(server)"
	msgQueued           = "MCP request budget exceeded while queued; %d requests were already in flight and none finished in time"
	msgBadTimeout       = "MCP timeout must be between 0.01 and 3600 seconds"
	msgRegistryStalled  = "Registry filesystem operation timed out; no additional job was scheduled"
	msgBrokerClosed     = "MCP broker is shut down (its sessions closed); open a session again"
	msgDisabled         = "MCP broker is disabled (%s); no server can be called"
	msgServerDisabled   = "MCP server %q is disabled in %s (\"disabled\": true); remove that or set it to false there, then mcp.refresh()"
	msgServerNotGranted = "MCP server %q in %s is not granted to the broker; add \"brokerAllowed\": true to its entry there, then mcp.refresh()"
	msgBadServerName    = "MCP server name must be a string of 1..200 bytes without control characters"
	msgBadToolName      = "MCP tool name must be a string of 1..400 bytes without control characters"
	msgAuthentication   = "Explicit headers from the registry (Authorization: Bearer ${VAR}), OAuth client credentials (oauth.grantType client_credentials), and the broker's own PKCE browser grant (repl-mcp --config REGISTRY --oauth-login SERVER, kept in oauth.credentialFile and refreshed as needed); the broker never borrows a client's tokens or approvals"
	msgHostClientAction = "Servers the MCP client itself connects (claude.ai connectors, plugin servers) are not visible to the broker; export them into an explicit --config registry to grant them"

	// Calls.
	msgDeadlineBeforeDispatch  = "MCP deadline exceeded before dispatch; no tool was called and nothing was retried"
	msgCancelledBeforeDispatch = "MCP call cancelled before dispatch; no tool was called"
	msgDeadline                = "MCP deadline exceeded; external outcome is unknown, request was not retried"
	msgCancelled               = "MCP call cancelled after dispatch; external outcome is unknown, request was not retried"
	msgProtocolError           = "MCP transport or protocol error; external outcome may be unknown, request was not retried"
	msgReplyTooDeep            = "MCP server's reply nests deeper than %d levels, past what the broker decodes; external outcome is unknown, request was not retried"
	msgNoInputSchema           = "MCP tool has no inputSchema; the broker validates arguments before any call, so it cannot call this tool"
	msgDelivery                = "MCP result is %d bytes, over the %d-byte delivery budget: a known outcome for call %s is recorded as %s in mcp.journal(); do not retry a write to recover its output"
	msgJournalDone             = "MCP call completed but durable journal update failed; do not retry blindly"
	msgJournalUnknown          = "MCP outcome is unknown and durable journal update failed; do not retry blindly"
	msgCatalogueBytes          = "MCP tool catalogue exceeds 1MiB; reduce exposed tools or configure allowedTools"
	msgCatalogueInvalid        = "Invalid MCP tools/list response"
	msgNotObject               = "arguments must be a JSON object"

	// Connections.
	msgCooldown         = "MCP connection recently failed; verify configuration then mcp.refresh() to retry"
	msgConnectTimeout   = "MCP connect timeout; verify server configuration"
	msgTooManyPeers     = "MCP broker has 32 active transports; finish or cancel an existing run before connecting another server"
	msgStdioInitFailed  = "MCP transport initialization failed; verify server and explicit credentials"
	msgUnavailable      = "MCP transport unavailable; request was not retried"
	msgHTTPInit         = "HTTP MCP initialization failed; configure explicit credentials or run --oauth-login SERVER for an independent broker grant"
	msgHTTPBodyTooLarge = "MCP HTTP response exceeds 1MiB"
	// msgPeerFrameTooLarge ends a stdio peer's connection: a line over peerLineLimit.
	msgPeerFrameTooLarge = "MCP peer frame exceeds 1 MiB"
	msgHTTPSSETooLarge   = "MCP HTTP SSE event exceeds 1MiB"
)
