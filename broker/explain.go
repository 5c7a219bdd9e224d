package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/iota-uz/repl-mcp/broker/argcheck"
	"github.com/iota-uz/repl-mcp/broker/registry"
)

// Explanation is mcp.explain's answer (docs/contract.md §8.9): what the broker knows about
// one server and tool, from state it already holds. Building it never connects,
// probes the network or creates a credential store.
type Explanation struct {
	Server                string              `json:"server"`
	Tool                  *string             `json:"tool"`
	Status                string              `json:"status"`
	Reason                string              `json:"reason"`
	Connected             bool                `json:"connected"`
	Evidence              string              `json:"evidence"`
	Actions               []string            `json:"actions"`
	NetworkProbePerformed bool                `json:"network_probe_performed"`
	ConfigurationError    *string             `json:"configuration_error"`
	Budgets               explainBudgets      `json:"budgets"`
	Provenance            registry.Provenance `json:"provenance"`
	HostClientRoute       hostClientRoute     `json:"host_client_route"`
	// Warnings say what the broker's grant cannot hold, whatever the status: an
	// entry of .mcp.json that narrows its tools with allowedTools (every client
	// that reads .mcp.json shows its model all of them).
	Warnings []string `json:"warnings,omitempty"`
}

type explainBudgets struct {
	ArgumentMaxBytes int `json:"argument_max_bytes"`
	ResultMaxBytes   int `json:"result_max_bytes"`
}

type hostClientRoute struct {
	Availability         string `json:"availability"`
	DiscoverableByBroker bool   `json:"discoverable_by_broker"`
	Action               string `json:"action"`
}

// The explain statuses, each with its reason and the one action that moves it on.
var explainTexts = map[string][2]string{
	"config_invalid":       {"The broker registry is invalid, so no server can be called; values are omitted.", "Repair the registry file, then call mcp.refresh()."},
	"credentials_missing":  {"Credentials the broker needs are missing: an environment variable, an authorization header or an independent OAuth grant.", "Set the credential explicitly (an environment variable or header in the registry; for an OAuth authorization_code server run repl-mcp --config REGISTRY --oauth-login SERVER; for client_credentials check oauth.clientId and oauth.clientSecret), then call mcp.refresh()."},
	"broker_disabled":      {"The broker is disabled by --mcp-scope none or REPL_MCP_NO_BRIDGE=1.", "Restart repl-mcp with --mcp-scope project (or another scope) and without REPL_MCP_NO_BRIDGE=1."},
	"not_granted":          {"The registry names this server or tool but does not grant it to the broker (disabled, a user/local entry without brokerAllowed: true, or a tool outside allowedTools).", "Grant it explicitly in the registry (brokerAllowed: true, allowedTools), then call mcp.refresh()."},
	"registry_absent":      {"No broker registry exists for this project.", "Create .repl-mcp/mcp.json (read by the broker alone) or .mcp.json in the project, or pass --config REGISTRY, then call mcp.refresh()."},
	"server_absent":        {"The registry does not configure this server.", "Add the server to the registry, then call mcp.refresh(); mcp.servers() lists the configured names."},
	"connection_timeout":   {"The last connection attempt timed out.", "Check that the server starts and answers quickly, then call mcp.refresh() to retry at once."},
	"disconnected":         {"The server is configured but not connected; the broker connects on the first call or listing.", "Call mcp.list_tools(server) to connect and load its catalogue."},
	"catalogue_stale":      {"Connected, but the cached tool catalogue is older than 15 seconds.", "Call mcp.list_tools(server) to reload the catalogue."},
	"catalogue_not_loaded": {"Connected, but no tool catalogue has been loaded.", "Call mcp.list_tools(server) to load the catalogue."},
	"tool_missing":         {"The cached catalogue of this server does not list the tool.", "Inspect mcp.list_tools(server) for the tool's exact name."},
	"ready":                {"Configured and connected as last observed; this is cached state, not a fresh connectivity test.", "Call the tool with mcp.call(server, tool, arguments={...})."},
}

// The reasons and actions explain gives when it knows which setting or registry
// applies; each %s is where (registry.Exclusion.Where).
const (
	msgExplainNoBridge         = "The broker is disabled by REPL_MCP_NO_BRIDGE=1 in repl-mcp's environment (repl-mcp sets it for its own workers, so a repl-mcp started from a cell never brokers)."
	msgExplainNoBridgeAction   = "Restart repl-mcp without REPL_MCP_NO_BRIDGE=1 in its environment."
	msgExplainScopeNone        = "The broker is disabled by --mcp-scope none."
	msgExplainScopeNoneAction  = "Restart repl-mcp with --mcp-scope project (or another scope)."
	msgExplainDisabled         = "The registry %s sets \"disabled\": true for this server."
	msgExplainDisabledAction   = "Remove \"disabled\": true from its entry in %s (or set it to false), then call mcp.refresh()."
	msgExplainNotGranted       = "The registry %s configures this server without \"brokerAllowed\": true; user and local entries are inert unless they grant the broker."
	msgExplainNotGrantedAction = "Add \"brokerAllowed\": true to its entry in %s, then call mcp.refresh()."
	msgExplainToolDenied       = "The allowedTools of this server in %s do not list this tool."
	msgExplainToolDeniedAction = "Add the tool to the server's allowedTools in %s, then call mcp.refresh()."
	// MsgClientVisible warns of an entry of .mcp.json that narrows its tools.
	MsgClientVisible = "%s narrows this server with allowedTools, which binds only the broker: an MCP client that reads .mcp.json (Claude Code) starts the server itself and shows its model every tool. For a server only cells should reach, move its entry to %s, which no client loads."
)

// Why a failed connect leaves a server, by failure kind.
var explainFailureReasons = map[string]string{
	failTimeout:     "The last connection attempt timed out.",
	failCredentials: "The last connection attempt needed credentials the broker does not hold.",
	failOther:       "The last connection attempt failed; the broker waits 60 s before trying again.",
}

// Explain diagnoses server (and tool, when not nil) from the broker's state: it
// never connects, probes the network or creates a credential store. It reloads
// a registry that is due, like every method, but a failed reload only shows up
// in the answer.
func (b *Broker) Explain(server string, tool *string) (Explanation, error) {
	if err := CheckServerName(server); err != nil {
		return Explanation{}, err
	}
	if tool != nil {
		if err := checkToolName(*tool); err != nil {
			return Explanation{}, err
		}
	}
	b.ready(false) // a failed reload is stored and reported below
	return b.explain(server, tool), nil
}

// explain builds the Explanation from the state b holds.
func (b *Broker) explain(server string, tool *string) Explanation {
	b.mu.Lock()
	defer b.mu.Unlock()
	x := Explanation{
		Server: server, Tool: tool, Actions: []string{},
		Budgets:    explainBudgets{ArgumentMaxBytes: argcheck.MaxArgumentBytes, ResultMaxBytes: MaxResultBytes},
		Provenance: b.opts.Registry.Provenance(),
		HostClientRoute: hostClientRoute{
			Availability: "unknown",
			Action:       msgHostClientAction,
		},
	}
	if b.configErr != nil {
		msg := b.configErr.Error()
		x.ConfigurationError = &msg
	}
	status, evidence := b.diagnoseLocked(server, tool, &x)
	if slices.Contains(b.reg.ClientVisible, server) {
		x.Warnings = append(x.Warnings, fmt.Sprintf(MsgClientVisible, filepath.Join(b.reg.Provenance.Project, ".mcp.json"), filepath.Join(b.reg.Provenance.Project, registry.BrokerOnlyFile)))
	}
	texts := explainTexts[status]
	x.Status, x.Evidence = status, evidence
	if x.Reason == "" {
		x.Reason = texts[0]
	}
	if len(x.Actions) == 0 {
		x.Actions = append(x.Actions, texts[1])
	}
	return x
}

// explainSpecific sets the reason and the action that apply to this server when the
// broker knows more than its status says: which setting disabled the broker, which
// registry excluded the server and why, where its allowedTools are.
func explainSpecific(x *Explanation, reason, action string) {
	x.Reason, x.Actions = reason, []string{action}
}

// diagnoseLocked applies docs/contract.md §8.9's decision order.
func (b *Broker) diagnoseLocked(server string, tool *string, x *Explanation) (status, evidence string) {
	if b.configErr != nil {
		var ce *registry.ConfigError
		if errors.As(b.configErr, &ce) && ce.Credentials {
			return "credentials_missing", "configuration"
		}
		return "config_invalid", "configuration"
	}
	reg := b.reg
	if reg.Disabled {
		if reg.DisabledBy == registry.DisabledByNoBridge {
			explainSpecific(x, msgExplainNoBridge, msgExplainNoBridgeAction)
		} else {
			explainSpecific(x, msgExplainScopeNone, msgExplainScopeNoneAction)
		}
		return "broker_disabled", "scope"
	}
	e, configured := reg.Lookup(server)
	if !configured {
		excl, excluded := reg.Excluded[server]
		switch {
		case excluded && excl.Reason == registry.ExcludedDisabled:
			explainSpecific(x, fmt.Sprintf(msgExplainDisabled, excl.Where()), fmt.Sprintf(msgExplainDisabledAction, excl.Where()))
			return "not_granted", "registry_grant"
		case excluded:
			explainSpecific(x, fmt.Sprintf(msgExplainNotGranted, excl.Where()), fmt.Sprintf(msgExplainNotGrantedAction, excl.Where()))
			return "not_granted", "registry_grant"
		case !reg.Present:
			return "registry_absent", "registry"
		default:
			return "server_absent", "registry"
		}
	}
	if tool != nil && !e.ToolAllowed(*tool) {
		where := registry.Exclusion{Kind: e.Kind, Path: e.Source}.Where()
		explainSpecific(x, fmt.Sprintf(msgExplainToolDenied, where), fmt.Sprintf(msgExplainToolDeniedAction, where))
		return "not_granted", "allowed_tools"
	}
	if e.OAuth != nil && e.OAuth.GrantType == registry.GrantAuthorizationCode && !fileExists(e.OAuth.CredentialFile) {
		return "credentials_missing", "credential_store"
	}
	t := b.transports[e.Fingerprint]
	connected := t != nil && t.peer != nil && t.peer.alive()
	x.Connected = connected
	if !connected && t != nil && !t.failedAt.IsZero() {
		x.Reason = explainFailureReasons[t.failure]
		return t.failure, "last_connection_attempt"
	}
	if !connected {
		return "disconnected", "transport_state"
	}
	if tool == nil {
		return "ready", "transport_state"
	}
	switch {
	case t.cat == nil:
		return "catalogue_not_loaded", "cached_catalogue"
	case time.Since(t.cat.fetched) >= catalogueTTL:
		return "catalogue_stale", "cached_catalogue"
	}
	if _, ok := t.cat.index[*tool]; ok {
		return "ready", "cached_catalogue"
	}
	return "tool_missing", "cached_catalogue"
}

// fileExists checks with lstat, so that a diagnosis follows no link and creates nothing.
func fileExists(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Lstat(path)
	return err == nil
}
