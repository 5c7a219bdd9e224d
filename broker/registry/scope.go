package registry

import (
	"fmt"
	"strings"
)

// Scope is the set of registries the broker reads (--mcp-scope). The zero Scope is
// "none": the broker is disabled.
type Scope uint8

// The scopes. ScopeAll is project, user and local together.
const (
	ScopeProject Scope = 1 << iota
	ScopeUser
	ScopeLocal

	ScopeNone Scope = 0
	ScopeAll        = ScopeProject | ScopeUser | ScopeLocal
)

// DefaultScope is the scope used when --mcp-scope is not given.
const DefaultScope = ScopeProject

// ParseScope parses an --mcp-scope value: project, user, local, a comma list of those,
// all, or none. Everything else (plugin, all or none mixed with others, empty items)
// is an error whose message tells the user what is accepted.
func ParseScope(s string) (Scope, error) {
	switch strings.TrimSpace(s) {
	case "all":
		return ScopeAll, nil
	case "none":
		return ScopeNone, nil
	}
	var sc Scope
	for _, item := range strings.Split(s, ",") {
		switch strings.TrimSpace(item) {
		case "project":
			sc |= ScopeProject
		case "user":
			sc |= ScopeUser
		case "local":
			sc |= ScopeLocal
		default:
			return ScopeNone, regScopeError(s)
		}
	}
	return sc, nil
}

func regScopeError(s string) error {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return fmt.Errorf("invalid --mcp-scope %q: use project, user, local, a comma list of those, all, or none; "+
		"plugin registries are not read: export plugin servers to an explicit --config file", s)
}

// String returns the canonical spelling of s: "none", "all", or a comma list in the
// order project, user, local. ParseScope(s.String()) == s.
func (s Scope) String() string {
	switch s & ScopeAll {
	case ScopeNone:
		return "none"
	case ScopeAll:
		return "all"
	}
	var parts []string
	for _, p := range []struct {
		bit  Scope
		name string
	}{{ScopeProject, "project"}, {ScopeUser, "user"}, {ScopeLocal, "local"}} {
		if s&p.bit != 0 {
			parts = append(parts, p.name)
		}
	}
	return strings.Join(parts, ",")
}

// Has reports whether s includes every scope in t.
func (s Scope) Has(t Scope) bool { return t != ScopeNone && s&t == t }
