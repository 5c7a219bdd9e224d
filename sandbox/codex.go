package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// The _meta keys under which Codex 0.171.0 sends its sandbox policy with every
// tools/call to a server that advertises CodexCapability; the two carry the same
// object.
const (
	CodexMetaKey       = "codex/sandbox-state-meta"
	CodexLegacyMetaKey = "codex/sandbox-state"
	// CodexCapability is the key of the initialize result's
	// capabilities.experimental that asks Codex for the policy.
	CodexCapability = CodexMetaKey
)

// ErrNoCodexPolicy is a call without Codex's sandbox policy under --sandbox
// inherit-codex: it runs no code.
var ErrNoCodexPolicy = errors.New(msgCodexMissing)

// CodexContext is what the server adds to Codex's policy: the directory Codex's
// "tmpdir" names (the server's $TMPDIR, which it inherits from Codex), and the
// allowed-domains proxy, which stays open when Codex keeps the network restricted.
type CodexContext struct {
	TempDir   string
	ProxyPort int
	Domains   []string
}

// codexState is the object Codex sends; only permissionProfile decides anything
// (sandboxCwd is the cwd its path entries already name).
type codexState struct {
	PermissionProfile *json.RawMessage `json:"permissionProfile"`
	SandboxCwd        string           `json:"sandboxCwd"`
}

type codexProfile struct {
	Type       string           `json:"type"`
	FileSystem *codexFileSystem `json:"file_system"`
	Network    string           `json:"network"`
}

type codexFileSystem struct {
	Type    string       `json:"type"`
	Entries []codexEntry `json:"entries"`
}

type codexEntry struct {
	Path struct {
		Type  string `json:"type"`
		Path  string `json:"path"`
		Value *struct {
			Kind string `json:"kind"`
		} `json:"value"`
	} `json:"path"`
	Access          string `json:"access"`
	MissingBehavior string `json:"missing_path_behavior"`
}

// FromCodex reads the sandbox policy of one Codex tools/call from its _meta: nil for
// Codex's full access ({"type":"disabled"}), else the policy that enforces its writes
// and network, with what it cannot enforce in NotEnforced. A call without the
// policy, or with one it cannot read in full (an unknown type, kind, access or
// field), fails closed with an error that says so.
func FromCodex(meta map[string]any, ctx CodexContext) (*Policy, error) {
	raw, ok := meta[CodexMetaKey]
	legacy, hasLegacy := meta[CodexLegacyMetaKey]
	switch {
	case !ok && !hasLegacy:
		return nil, ErrNoCodexPolicy
	case !ok:
		raw = legacy
	case hasLegacy && !reflect.DeepEqual(raw, legacy):
		return nil, fmt.Errorf(msgCodexUnreadable, "its two copies, "+CodexMetaKey+" and "+CodexLegacyMetaKey+", differ")
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf(msgCodexUnreadable, err)
	}
	var state codexState
	if err := json.Unmarshal(data, &state); err != nil || state.PermissionProfile == nil {
		return nil, fmt.Errorf(msgCodexUnreadable, "no permissionProfile object")
	}
	var profile codexProfile
	if err := strictDecode(*state.PermissionProfile, &profile); err != nil {
		return nil, fmt.Errorf(msgCodexUnreadable, "permissionProfile: "+err.Error())
	}
	switch profile.Type {
	case "disabled":
		return nil, nil
	case "managed":
		p, err := profile.policy(ctx)
		if err != nil {
			return nil, fmt.Errorf(msgCodexUnreadable, err)
		}
		return p, nil
	}
	return nil, fmt.Errorf(msgCodexUnreadable, fmt.Sprintf("permissionProfile type %q", profile.Type))
}

// strictDecode decodes data into v, refusing members v does not know: a member
// added to Codex's profile may restrict something, and ignoring it would not.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// policy maps a managed profile: its write entries become writable roots, its
// network restricted or enabled; reads must be open everywhere (the root readable),
// since the sandbox keeps them open; read-only entries beneath a writable root stay
// writable and are listed as not enforced.
func (pr codexProfile) policy(ctx CodexContext) (*Policy, error) {
	p := &Policy{Mode: ReadOnly, Codex: true}
	switch pr.Network {
	case "restricted":
		p.ProxyPort = ctx.ProxyPort
		if ctx.ProxyPort != 0 {
			p.Domains = ctx.Domains
		}
	case "enabled":
		p.Network = true
	default:
		return nil, fmt.Errorf("network %q", pr.Network)
	}
	if pr.FileSystem == nil {
		return nil, errors.New("no file_system")
	}
	var roots, readOnly []string
	readsOpen := false
	switch pr.FileSystem.Type {
	case "unrestricted":
		roots, readsOpen = []string{"/"}, true
	case "restricted":
		for _, e := range pr.FileSystem.Entries {
			path, err := e.resolve(ctx)
			if err != nil {
				return nil, err
			}
			switch e.Access {
			case "write":
				roots = append(roots, path)
			case "read":
				if path == "/" {
					readsOpen = true
				} else {
					readOnly = append(readOnly, path)
				}
			default:
				return nil, fmt.Errorf("file_system entry access %q for %s", e.Access, path)
			}
		}
	default:
		return nil, fmt.Errorf("file_system type %q", pr.FileSystem.Type)
	}
	if !readsOpen {
		return nil, errors.New(msgCodexReadsLimited)
	}
	roots = dedupe(roots)
	if len(roots) > 0 {
		p.Mode = WorkspaceWrite
	}
	p.WritableRoots = dedupe(append(roots, SystemWritable...))
	for _, path := range dedupe(readOnly) {
		if under := beneath(path, roots); under != "" && exists(path) {
			p.NotEnforced = append(p.NotEnforced, fmt.Sprintf(msgCodexCarveOut, path, under))
		}
	}
	return p, nil
}

// resolve is the entry's path: absolute, or a special kind the sandbox knows. An
// entry naming "tmpdir" when the server has no $TMPDIR names the directory the
// server would use, os.TempDir's.
func (e codexEntry) resolve(ctx CodexContext) (string, error) {
	switch e.Path.Type {
	case "path":
		if !filepath.IsAbs(e.Path.Path) {
			return "", fmt.Errorf("file_system entry path %q is not absolute", e.Path.Path)
		}
		return filepath.Clean(e.Path.Path), nil
	case "special":
		if e.Path.Value == nil {
			return "", errors.New("file_system entry of type special without a value")
		}
		switch e.Path.Value.Kind {
		case "root":
			return "/", nil
		case "slash_tmp":
			return "/tmp", nil
		case "tmpdir":
			if ctx.TempDir != "" {
				return filepath.Clean(ctx.TempDir), nil
			}
			return os.TempDir(), nil
		}
		return "", fmt.Errorf("file_system entry of special kind %q", e.Path.Value.Kind)
	}
	return "", fmt.Errorf("file_system entry path type %q", e.Path.Type)
}

// beneath is the first of roots that path lies strictly beneath, or "".
func beneath(path string, roots []string) string {
	for _, r := range roots {
		if r == "/" || strings.HasPrefix(path, strings.TrimSuffix(r, "/")+"/") {
			return r
		}
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
