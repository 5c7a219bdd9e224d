package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// Limits of the registry (docs/contract.md §8.3, §8.4, §8.9, §13.1).
const (
	// MaxFileBytes bounds one registry file.
	MaxFileBytes = 1 << 20
	// MaxServerNameBytes bounds a server name.
	MaxServerNameBytes = 200
	// MaxToolNameBytes bounds a tool name (allowedTools entries, explain).
	MaxToolNameBytes = 400
)

// Options says where a registry comes from. main turns flags and environment
// into it; Load reads no environment of its own.
type Options struct {
	// Project is the canonical project directory: the base of a relative ConfigPath,
	// the home of .mcp.json, and the key of the local scope in ~/.claude.json.
	Project string
	// ConfigPath is --config; relative paths resolve against Project. When set, that
	// file alone is the registry and it must exist.
	ConfigPath string
	// Scope is --mcp-scope (use DefaultScope when the flag is absent).
	Scope Scope
	// Home is $HOME; required for the user and local scopes.
	Home string
	// LookupEnv expands ${VAR} placeholders and finds PATH for self-exclusion. Nil
	// means no variable is set.
	LookupEnv func(string) (string, bool)
	// NoBridge is REPL_MCP_NO_BRIDGE=1: the registry is empty and the broker disabled.
	NoBridge bool
	// SelfExecutables are paths of repl-mcp itself; stdio entries launching one of
	// them are dropped.
	SelfExecutables []string
}

// Registry kinds reported as provenance.registry by explain.
const (
	ExplicitConfig        = "explicit_config"
	ProjectAndOptInScopes = "project_and_opt_in_scopes"
)

// Provenance is where a registry came from, as explain reports it.
type Provenance struct {
	Project  string `json:"project"`
	Registry string `json:"registry"`
	Scope    string `json:"scope"`
}

// Provenance describes the registry these options select. It needs no file system,
// so explain can report it next to a configuration error too.
func (o Options) Provenance() Provenance {
	p := Provenance{Project: o.Project, Registry: ProjectAndOptInScopes, Scope: o.Scope.String()}
	if o.ConfigPath != "" {
		p.Registry = ExplicitConfig
	}
	return p
}

// SourceKind names where a registry file sits.
type SourceKind string

// The source kinds.
const (
	SourceConfig  SourceKind = "config"  // --config
	SourceProject SourceKind = "project" // <project>/.mcp.json
	// SourceBrokerOnly is the broker-only registry, <project>/.repl-mcp/mcp.json
	// (BrokerOnlyFile): read by the broker alone, never by an MCP client, so that a
	// server whose tools only cells should reach is not also started by the client
	// with every tool shown to its model. Its entries win over .mcp.json's.
	SourceBrokerOnly SourceKind = "broker_only"
	SourceUser       SourceKind = "user"  // ~/.claude.json mcpServers
	SourceLocal      SourceKind = "local" // ~/.claude.json projects[<project>].mcpServers
)

// BrokerOnlyFile is the broker-only registry's path under the project.
var BrokerOnlyFile = filepath.Join(".repl-mcp", "mcp.json")

// Source is one registry file that was looked at.
type Source struct {
	Kind    SourceKind
	Path    string
	Present bool // the file existed and was read
}

// Exclusion reasons for names that appear in a registry but are not configured.
const (
	ExcludedNotGranted = "not_granted" // a user/local entry without brokerAllowed: true
	ExcludedDisabled   = "disabled"    // an entry with disabled: true
)

// Exclusion is why a name that appears in a registry is not configured, and which
// registry said so: what a refused call and explain tell the user to change.
type Exclusion struct {
	Reason string     // ExcludedNotGranted or ExcludedDisabled
	Kind   SourceKind // the registry that excluded it
	Path   string     // that registry file
}

// Where names the registry in the user's terms: "--config PATH" for an explicit
// registry (the flag the user passed), else the file, with its scope for
// ~/.claude.json, where user and local entries share one file.
func (x Exclusion) Where() string {
	switch x.Kind {
	case SourceConfig:
		return "--config " + x.Path
	case SourceUser:
		return x.Path + " (user scope: its top-level mcpServers)"
	case SourceLocal:
		return x.Path + " (local scope: this project's mcpServers under projects)"
	}
	return x.Path
}

// What the broker's disabled state is due to (Registry.DisabledBy).
const (
	DisabledByNoBridge = "REPL_MCP_NO_BRIDGE=1"
	DisabledByScope    = "--mcp-scope none"
)

// Transport is how the broker reaches a server.
type Transport string

// The transports. "streamable-http" in a registry is TransportHTTP.
const (
	TransportStdio Transport = "stdio"
	TransportHTTP  Transport = "http"
)

// OAuth grant types.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// OAuthConfig is a validated `oauth` object (docs/contract.md §8.4, §8.7). Only the fields are
// checked here; the flows belong to the connection code.
type OAuthConfig struct {
	GrantType      string   // GrantAuthorizationCode (default) or GrantClientCredentials
	ClientID       string   // expanded; "" when not given
	ClientSecret   string   // expanded; "" when not given
	CredentialFile string   // expanded and absolute; "" when not given
	RedirectPort   uint16   // 0 = ephemeral
	Scopes         []string // as given
}

// Entry is one validated, expanded server. Env, Headers and the OAuth client
// secret hold secrets: never log or echo them.
type Entry struct {
	Name      string
	Kind      SourceKind // which registry configured it
	Source    string     // that registry file
	Transport Transport

	// stdio
	Command string
	// WrittenCommand is the command as the registry wrote it, ${VAR} placeholders
	// unexpanded: the form messages show, which names a variable and never its value.
	WrittenCommand string
	Args           []string
	Env            map[string]string // added to the peer environment with REPL_MCP_NO_BRIDGE=1
	Cwd            string            // absolute; defaults to the registry file's directory

	// http
	URL     string
	Headers map[string]string // canonical header names
	OAuth   *OAuthConfig

	// AllowedTools is the allowlist when Restricted; without allowedTools every tool
	// is allowed. An empty allowedTools list allows none.
	AllowedTools []string
	Restricted   bool

	// Fingerprint is the transport identity: a hash of everything that decides the
	// launch or connection (command, args, env, cwd; or url, headers, oauth), and
	// nothing else. Aliases with the same Fingerprint share one transport.
	Fingerprint string
}

// ToolAllowed reports whether the entry's allowlist admits tool.
func (e Entry) ToolAllowed(tool string) bool {
	if !e.Restricted {
		return true
	}
	for _, t := range e.AllowedTools {
		if t == tool {
			return true
		}
	}
	return false
}

// Registry is a validated registry: the servers the broker may reach.
type Registry struct {
	// Servers are the configured entries by name.
	Servers map[string]Entry
	// Excluded are names present in a registry but not configured, with the reason
	// and the registry that gave it.
	Excluded map[string]Exclusion
	// SelfExcluded counts entries dropped because they would launch repl-mcp itself.
	SelfExcluded int
	// Present is true when some registry file existed (registry_absent vs
	// server_absent in explain).
	Present bool
	// Disabled is true for scope none or REPL_MCP_NO_BRIDGE=1 (broker_disabled), and
	// DisabledBy says which (DisabledByNoBridge or DisabledByScope).
	Disabled   bool
	DisabledBy string
	// Provenance is what explain reports as provenance.
	Provenance Provenance
	// Sources are the registry files looked at, in merge order.
	Sources []Source
	// ClientVisible are the names of .mcp.json entries that narrow their tools with
	// allowedTools, sorted. A client that reads .mcp.json (Claude Code) starts those
	// servers itself and shows its model every tool: the allowlist narrows the
	// broker alone, which explain and doctor say.
	ClientVisible []string
}

// Names returns the configured server names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.Servers))
	for n := range r.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the entry configured under name.
func (r *Registry) Lookup(name string) (Entry, bool) {
	e, ok := r.Servers[name]
	return e, ok
}

// ConfigError is a defect in the registry. Callers store it as the broker's
// configuration_error and keep serving. Its message never holds a configured value,
// an expanded variable, a header, a URL or a secret, so it is safe to show.
type ConfigError struct {
	Msg string
	// Credentials is true when the defect is about credentials (a missing or empty
	// environment variable, an empty authorization header, an OAuth client secret):
	// explain reports credentials_missing rather than config_invalid.
	Credentials bool
}

func (e *ConfigError) Error() string { return e.Msg }

func regConfigErr(format string, a ...any) *ConfigError {
	return &ConfigError{Msg: fmt.Sprintf(format, a...)}
}

// Messages whose key tokens the contract fixes (docs/contract.md §8.3, §8.4).
const (
	msgRegNotRegular       = "MCP registry must be a regular file; FIFOs and devices are unsupported"
	msgRegTooLarge         = "MCP registry exceeds the 1 MiB limit"
	msgRegInvalidJSON      = "MCP registry is invalid JSON; values are omitted from diagnostics"
	msgRegCannotRead       = "Cannot read MCP registry file; check --config and file permissions"
	msgRegNeedsMCPServers  = "Project MCP registry requires mcpServers; check the registry format"
	msgRegHomeMissing      = "HOME is not set; the user and local --mcp-scope read ~/.claude.json"
	msgRegUnclosed         = "Unclosed environment placeholder in MCP config"
	msgRegBadPlaceholder   = "Invalid environment placeholder in MCP config"
	msgRegVarMissing       = "Required environment variable is missing; config values are omitted"
	msgRegVarEmpty         = "Required environment variable is empty; configure credentials explicitly"
	msgRegBadURL           = "URL requires HTTP(S), host, and no embedded credentials"
	msgRegEmptyAuth        = "empty authorization header; configure credentials explicitly"
	msgRegBadServerName    = "MCP server names must be 1..200 bytes without control characters"
	msgRegInvalidEntryTail = "check documented fields and types"
)

// Load reads and validates the registry the options select. It starts no
// process and touches no network; it reads at most four files. Every error it
// returns is a *ConfigError.
func Load(opts Options) (*Registry, error) {
	reg := &Registry{
		Servers:    map[string]Entry{},
		Excluded:   map[string]Exclusion{},
		Provenance: opts.Provenance(),
	}
	if opts.NoBridge || opts.Scope&ScopeAll == ScopeNone {
		reg.Disabled, reg.DisabledBy = true, DisabledByScope
		if opts.NoBridge {
			reg.DisabledBy = DisabledByNoBridge
		}
		return reg, nil
	}
	l := loader{opts: opts, reg: reg}
	if opts.ConfigPath != "" {
		path := opts.ConfigPath
		if !filepath.IsAbs(path) {
			if opts.Project == "" {
				return nil, regConfigErr("%s (relative --config needs a project directory)", msgRegCannotRead)
			}
			path = filepath.Join(opts.Project, path)
		}
		if err := l.loadProjectFile(SourceConfig, path, true); err != nil {
			return nil, err
		}
		return reg, nil
	}
	if opts.Scope&(ScopeUser|ScopeLocal) != 0 {
		if opts.Home == "" {
			return nil, &ConfigError{Msg: msgRegHomeMissing}
		}
		if err := l.loadClaudeJSON(filepath.Join(opts.Home, ".claude.json")); err != nil {
			return nil, err
		}
	}
	if opts.Scope&ScopeProject != 0 {
		if opts.Project == "" {
			return nil, regConfigErr("The project scope needs a project directory")
		}
		if err := l.loadProjectFile(SourceProject, filepath.Join(opts.Project, ".mcp.json"), false); err != nil {
			return nil, err
		}
		if err := l.loadProjectFile(SourceBrokerOnly, filepath.Join(opts.Project, BrokerOnlyFile), false); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

type loader struct {
	opts Options
	reg  *Registry
}

// loadProjectFile reads a --config, .mcp.json or broker-only registry: every entry
// is regGranted.
func (l *loader) loadProjectFile(kind SourceKind, path string, mustExist bool) error {
	data, err := readRegistryFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if mustExist {
			return regConfigErr("%s (file %s does not exist)", msgRegCannotRead, path)
		}
		l.reg.Sources = append(l.reg.Sources, Source{Kind: kind, Path: path})
		return nil
	}
	if err != nil {
		return err
	}
	l.reg.Sources = append(l.reg.Sources, Source{Kind: kind, Path: path, Present: true})
	l.reg.Present = true
	top, err := regDecodeObject(data, path)
	if err != nil {
		return err
	}
	rawServers, ok := top["mcpServers"]
	if !ok {
		return regConfigErr("%s (file %s)", msgRegNeedsMCPServers, path)
	}
	servers, ok := regObject(rawServers)
	if !ok {
		return regConfigErr("%s: mcpServers must be an object (file %s)", msgRegNeedsMCPServers, path)
	}
	return l.addServers(kind, path, servers, false)
}

// loadClaudeJSON reads ~/.claude.json for the user and local scopes. A missing file,
// or a missing mcpServers in it, is an empty scope.
func (l *loader) loadClaudeJSON(path string) error {
	data, err := readRegistryFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if l.opts.Scope&ScopeUser != 0 {
			l.reg.Sources = append(l.reg.Sources, Source{Kind: SourceUser, Path: path})
		}
		if l.opts.Scope&ScopeLocal != 0 {
			l.reg.Sources = append(l.reg.Sources, Source{Kind: SourceLocal, Path: path})
		}
		return nil
	}
	if err != nil {
		return err
	}
	l.reg.Present = true
	top, err := regDecodeObject(data, path)
	if err != nil {
		return err
	}
	if l.opts.Scope&ScopeUser != 0 {
		l.reg.Sources = append(l.reg.Sources, Source{Kind: SourceUser, Path: path, Present: true})
		if raw, ok := top["mcpServers"]; ok {
			servers, ok := regObject(raw)
			if !ok {
				return regConfigErr("MCP registry %s: mcpServers must be an object", path)
			}
			if err := l.addServers(SourceUser, path, servers, true); err != nil {
				return err
			}
		}
	}
	if l.opts.Scope&ScopeLocal != 0 {
		l.reg.Sources = append(l.reg.Sources, Source{Kind: SourceLocal, Path: path, Present: true})
		servers, err := regLocalServers(top, l.opts.Project, path)
		if err != nil {
			return err
		}
		if err := l.addServers(SourceLocal, path, servers, true); err != nil {
			return err
		}
	}
	return nil
}

func regLocalServers(top map[string]json.RawMessage, project, path string) (map[string]json.RawMessage, error) {
	raw, ok := top["projects"]
	if !ok || project == "" {
		return nil, nil
	}
	projects, ok := regObject(raw)
	if !ok {
		return nil, regConfigErr("MCP registry %s: projects must be an object", path)
	}
	raw, ok = projects[project]
	if !ok {
		return nil, nil
	}
	proj, ok := regObject(raw)
	if !ok {
		return nil, regConfigErr("MCP registry %s: the project entry must be an object", path)
	}
	raw, ok = proj["mcpServers"]
	if !ok {
		return nil, nil
	}
	servers, ok := regObject(raw)
	if !ok {
		return nil, regConfigErr("MCP registry %s: the project's mcpServers must be an object", path)
	}
	return servers, nil
}

// addServers validates and merges one registry's entries. A later call wins on a
// name clash (foreign scopes are loaded first, the project last). Foreign entries
// without brokerAllowed: true are not parsed at all.
func (l *loader) addServers(kind SourceKind, path string, servers map[string]json.RawMessage, foreign bool) error {
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		raw := servers[name]
		if !ValidName(name, MaxServerNameBytes) {
			if foreign && !regGranted(raw) {
				continue // inert: a name we cannot even report
			}
			return &ConfigError{Msg: msgRegBadServerName}
		}
		if foreign && !regGranted(raw) {
			if _, ok := l.reg.Servers[name]; !ok {
				l.reg.Excluded[name] = Exclusion{Reason: ExcludedNotGranted, Kind: kind, Path: path}
			}
			continue
		}
		e, disabled, err := l.validateEntry(name, kind, path, raw)
		if err != nil {
			return err
		}
		if kind == SourceProject && e.Restricted {
			l.reg.ClientVisible = append(l.reg.ClientVisible, name) // names are sorted
		}
		if disabled {
			delete(l.reg.Servers, name)
			l.reg.Excluded[name] = Exclusion{Reason: ExcludedDisabled, Kind: kind, Path: path}
			continue
		}
		if l.launchesSelf(e) {
			l.reg.SelfExcluded++
			continue
		}
		delete(l.reg.Excluded, name)
		l.reg.Servers[name] = e
	}
	return nil
}

// regGranted reports whether a foreign entry carries brokerAllowed: true.
func regGranted(raw json.RawMessage) bool {
	obj, ok := regObject(raw)
	if !ok {
		return false
	}
	return bytes.Equal(bytes.TrimSpace(obj["brokerAllowed"]), []byte("true"))
}

// readRegistryFile opens path without blocking, insists on a regular file of at most
// MaxFileBytes and reads it. A missing file is reported wrapping fs.ErrNotExist.
func readRegistryFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, regConfigErr("%s (file %s)", msgRegCannotRead, path)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, regConfigErr("%s (file %s)", msgRegCannotRead, path)
	}
	if !fi.Mode().IsRegular() {
		return nil, regConfigErr("%s (file %s)", msgRegNotRegular, path)
	}
	if fi.Size() > MaxFileBytes {
		return nil, regConfigErr("%s (file %s)", msgRegTooLarge, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, regConfigErr("%s (file %s)", msgRegCannotRead, path)
	}
	if len(data) > MaxFileBytes {
		return nil, regConfigErr("%s (file %s)", msgRegTooLarge, path)
	}
	return data, nil
}

// regDecodeObject parses a registry file as a JSON object. Its errors carry a byte
// offset at most, never the text around it.
func regDecodeObject(data []byte, path string) (map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, regConfigErr("%s (file %s, byte %d)", msgRegInvalidJSON, path, syn.Offset)
		}
		return nil, regConfigErr("%s (file %s: the top level must be an object)", msgRegInvalidJSON, path)
	}
	if top == nil {
		return nil, regConfigErr("%s (file %s: the top level must be an object)", msgRegInvalidJSON, path)
	}
	return top, nil
}

// regObject decodes raw as a JSON object; null and other kinds are not objects.
func regObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if !regIsKind(raw, '{') {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false
	}
	return m, true
}

func regIsKind(raw json.RawMessage, first byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == first
}

// ValidName reports whether s is 1..max bytes of UTF-8 without control characters.
func ValidName(s string, max int) bool {
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
